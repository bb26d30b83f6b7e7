//! The operations API on PostgreSQL: what only this backend can get wrong. A retire racing
//! zombies' saves (the table lock that closes the READ COMMITTED window), start_at racing
//! saves, every group of a large table, the upgrade of a table made before tombstones, and
//! the `*_in` family on a retired subscription. (Every clause of the contract runs through the
//! conformance kit in `kit::admin`; the privileges are in `security`.)

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use checkpoint_conformance::fresh_group;
use checkpoint_conformance::sql_family::admin as family;
use checkpoint_core::{
    Checkpoint, CheckpointAdmin, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint,
};
use checkpoint_postgres::PostgresCheckpointStore;
use sqlx::Connection;
use sqlx::postgres::PgPoolOptions;

use crate::support;

const FINGERPRINT: Fingerprint = Fingerprint::from_bytes([0x3c; 32]);

/// A migrated store on a table of its own (dropped by [`drop_table`]), on a pool of
/// `connections`.
async fn store_on_own_table(prefix: &str, connections: u32) -> PostgresCheckpointStore {
    let pool = PgPoolOptions::new()
        .max_connections(connections)
        .connect_with(support::connect_options())
        .await
        .unwrap();
    let store = PostgresCheckpointStore::new(pool)
        .with_table(&support::unique_ident(prefix))
        .unwrap();
    store.migrate().await.unwrap();
    store
}

async fn drop_table(store: PostgresCheckpointStore) {
    store.pool().close().await;
    support::admin_sql(format!(
        "DROP TABLE \"{table}\", \"{table}_retired\", \"{table}_leases\", \"{table}_owners\";",
        table = store.table()
    ))
    .await;
}

/// What the zombies of one round did.
#[derive(Default)]
struct Zombies {
    /// Calls that started after retire had returned (all must have been ignored).
    after_retire: AtomicU64,
    /// The longest a save took while the retire ran, in microseconds.
    slowest_save_us: AtomicU64,
}

/// One zombie: saves, batches, claims and saves in its own transaction, to partitions that
/// exist (0..EXISTING) and to new ones, until `stop`. Every save must succeed; a claim that
/// starts after the retire returned must fail with `Retired`.
async fn zombie(
    store: PostgresCheckpointStore,
    group: String,
    worker: u32,
    new_partition: Arc<AtomicU32>,
    retired: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    zombies: Arc<Zombies>,
) {
    const EXISTING: u32 = 8;
    let mut position = 10;
    let mut step = 0u32;
    while !stop.load(Ordering::Relaxed) {
        position += 1;
        step += 1;
        let after = retired.load(Ordering::SeqCst);
        let started = Instant::now();
        let existing = (worker + step) % EXISTING;
        let fresh = new_partition.fetch_add(1, Ordering::Relaxed);
        match step % 5 {
            0 | 1 => {
                let partition = if step.is_multiple_of(5) {
                    existing
                } else {
                    fresh
                };
                store
                    .save(&group, "zombie", partition, position)
                    .await
                    .unwrap();
            }
            2 => store
                .save_all(
                    &group,
                    &[
                        Checkpoint::new("zombie", existing, position),
                        Checkpoint::new("zombie", fresh, position),
                        Checkpoint::new("other", worker, position),
                    ],
                )
                .await
                .unwrap(),
            3 => match store
                .claim(&group, "zombie", fresh, FINGERPRINT, position)
                .await
            {
                Ok(_) => assert!(!after, "a claim after the retire succeeded"),
                Err(Error::Retired { .. }) => {}
                Err(other) => panic!("claim: {other:?}"),
            },
            _ => {
                let mut connection = store.pool().acquire().await.unwrap();
                let mut transaction = connection.begin().await.unwrap();
                store
                    .save_in(&mut transaction, &group, "zombie", fresh, position)
                    .await
                    .unwrap();
                store
                    .save_in(&mut transaction, &group, "zombie", existing, position)
                    .await
                    .unwrap();
                transaction.commit().await.unwrap();
            }
        }
        let took = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        zombies.slowest_save_us.fetch_max(took, Ordering::Relaxed);
        if after {
            zombies.after_retire.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The window a READ COMMITTED save would have without retire's table lock: its snapshot
/// taken before the retire commits, its insert after. Zombies hammer new and existing
/// partitions of one subscription while it is retired, round after round; from the moment
/// `retire` returns, nothing of it may ever be visible, and the other subscription's saves in
/// the same batches keep landing. (Run with the lock removed from `retire`, this test finds
/// rows of the retired subscription within the first rounds.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_retire_racing_zombies_on_new_and_existing_partitions_leaves_nothing() {
    const ROUNDS: usize = 25;
    const WORKERS: u32 = 12;
    let store = store_on_own_table("cp_retire_race", WORKERS + 4).await;
    let mut retire_times = Vec::new();
    let mut slowest_save = Duration::ZERO;
    let mut ignored_after = 0;
    for round in 0..ROUNDS {
        let group = fresh_group("retire-race");
        let seed: Vec<Checkpoint> = (0..8).map(|p| Checkpoint::new("zombie", p, 10)).collect();
        store.save_all(&group, &seed).await.unwrap();
        let new_partition = Arc::new(AtomicU32::new(1_000));
        let retired = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let zombies = Arc::new(Zombies::default());
        let workers: Vec<_> = (0..WORKERS)
            .map(|worker| {
                tokio::spawn(zombie(
                    store.clone(),
                    group.clone(),
                    worker,
                    Arc::clone(&new_partition),
                    Arc::clone(&retired),
                    Arc::clone(&stop),
                    Arc::clone(&zombies),
                ))
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(5 + (round as u64 % 7) * 3)).await;
        zombies.slowest_save_us.store(0, Ordering::Relaxed);
        let started = Instant::now();
        store.retire(&group, "zombie").await.unwrap();
        retire_times.push(started.elapsed());
        retired.store(true, Ordering::SeqCst);
        slowest_save = slowest_save.max(Duration::from_micros(
            zombies.slowest_save_us.load(Ordering::Relaxed),
        ));

        let gone = |listed: Vec<Checkpoint>| listed.iter().all(|c| c.subscription != "zombie");
        assert!(gone(store.list(&group).await.unwrap()), "round {round}");
        tokio::time::sleep(Duration::from_millis(30)).await; // the zombies go on
        assert!(gone(store.list(&group).await.unwrap()), "round {round}");
        stop.store(true, Ordering::Relaxed);
        for worker in workers {
            worker.await.unwrap();
        }
        let listed = store.list(&group).await.unwrap();
        assert!(gone(listed.clone()), "round {round}: {listed:?}");
        for partition in [0, 7, 1_000, new_partition.load(Ordering::Relaxed) - 1] {
            assert_eq!(
                store.load(&group, "zombie", partition).await.unwrap(),
                None,
                "round {round}, partition {partition}"
            );
        }
        // The other subscription of the same batches was saved all along.
        assert!(listed.iter().any(|c| c.subscription == "other"));
        assert_eq!(
            support::rows_of(&store, &group).await,
            i64::try_from(listed.len()).unwrap()
        );
        assert_eq!(store.retired(&group).await.unwrap(), ["zombie"]);
        let after = zombies.after_retire.load(Ordering::Relaxed);
        assert!(after > 0, "round {round}: no zombie call after the retire");
        ignored_after += after;
    }
    retire_times.sort();
    eprintln!(
        "retire under {WORKERS} zombies, {ROUNDS} rounds: median {:?}, max {:?}; slowest zombie \
         call while a retire ran {slowest_save:?}; {ignored_after} zombie calls after a retire, \
         all ignored",
        retire_times[retire_times.len() / 2],
        retire_times[retire_times.len() - 1],
    );
    drop_table(store).await;
}

/// start_at racing saves under the same name: it creates every partition or none, and never
/// moves a checkpoint that a save created (a plain INSERT: the save's row makes it fail whole;
/// the kit's SQL family).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn start_at_racing_saves_is_all_or_nothing_and_moves_nothing() {
    family::start_at_racing_saves_is_all_or_nothing_and_moves_nothing(&support::Server).await;
}

/// Every group, however many, sorted by bytes (not by any locale): 2,500 groups, some of
/// them only retired, with names that a collation would reorder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_returns_every_group_sorted_by_bytes() {
    let store = store_on_own_table("cp_groups", 4).await;
    let mut expected: Vec<String> = (0..2_500).map(|i| format!("g-{i:05}")).collect();
    expected.extend(["B", "a", "Z", "é", "e", "_x", "a b", "😀", "ab"].map(str::to_owned));
    let mut connection = store.pool().acquire().await.unwrap();
    for (index, group) in expected.iter().enumerate() {
        let batch: Vec<Checkpoint> = (0..4).map(|p| Checkpoint::new("s", p, 1)).collect();
        store
            .save_all_in(&mut connection, group, &batch)
            .await
            .unwrap();
        if index % 3 == 0 {
            store.retire(group, "t").await.unwrap();
        }
        if index % 10 == 0 {
            store.retire(group, "s").await.unwrap(); // only a tombstone is left
        }
    }
    drop(connection);
    expected.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    assert_eq!(store.groups().await.unwrap(), expected);
    drop_table(store).await;
}

/// A table made before tombstones existed (the old DDL alone) gets its tombstone table from
/// the next migrate, keeping its checkpoints.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_adds_the_tombstone_table_to_an_existing_deployment() {
    let table = support::unique_ident("cp_upgrade");
    support::admin_sql(format!(
        "CREATE TABLE \"{table}\" (
            group_name        TEXT COLLATE \"C\" NOT NULL,
            subscription      TEXT COLLATE \"C\" NOT NULL,
            partition_id      BIGINT      NOT NULL CHECK (partition_id BETWEEN 0 AND 4294967295),
            position          BIGINT      NOT NULL CHECK (position >= 0),
            query_fingerprint BYTEA       NULL CHECK (octet_length(query_fingerprint) = 32),
            updated_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
            PRIMARY KEY (group_name, subscription, partition_id)
        );
        INSERT INTO \"{table}\" (group_name, subscription, partition_id, position)
        VALUES ('g', 's', 0, 42);"
    ))
    .await;
    let store = support::store().await.with_table(&table).unwrap();
    assert!(
        store.save("g", "s", 0, 43).await.is_err(),
        "no tombstone table yet"
    );
    store.migrate().await.unwrap();
    assert_eq!(store.load("g", "s", 0).await.unwrap(), Some(42));
    store.save("g", "s", 0, 43).await.unwrap();
    store.retire("g", "s").await.unwrap();
    assert_eq!(store.groups().await.unwrap(), ["g"]);
    assert_eq!(store.load("g", "s", 0).await.unwrap(), None);
    drop_table(store).await;
}

/// The `*_in` family on a retired subscription, in the caller's transaction (the kit's SQL
/// family).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_in_family_obeys_the_tombstone() {
    family::the_in_family_obeys_the_tombstone(&support::Server).await;
}

/// retire waits for a caller's open transaction that has written to the table (its saves
/// land before the tombstone and are deleted with the rest), and gives up with a retryable
/// error once the store's timeout has passed, without holding up saves any longer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retire_waits_for_open_writers_within_the_timeout() {
    let store = store_on_own_table("cp_retire_wait", 6).await;
    let group = fresh_group("retire-wait");
    let mut transaction = store.pool().begin().await.unwrap();
    store
        .save_in(&mut transaction, &group, "s", 3, 7)
        .await
        .unwrap();
    let retiring = {
        let store = store.clone().with_timeout(Duration::from_secs(3)).unwrap();
        let group = group.clone();
        tokio::spawn(async move { store.retire(&group, "s").await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !retiring.is_finished(),
        "retire did not wait for the writer"
    );
    transaction.commit().await.unwrap();
    retiring.await.unwrap().unwrap();
    assert_eq!(store.load(&group, "s", 3).await.unwrap(), None);

    // A writer that stays open past the timeout: retire fails, retryably, and a save after
    // it is not held up.
    let mut transaction = store.pool().begin().await.unwrap();
    store
        .save_in(&mut transaction, &group, "t", 0, 1)
        .await
        .unwrap();
    let impatient = store
        .clone()
        .with_timeout(Duration::from_millis(500))
        .unwrap();
    let started = Instant::now();
    let error = impatient.retire(&group, "t").await.unwrap_err();
    assert!(error.is_retryable(), "{error:?}");
    assert!(started.elapsed() < Duration::from_secs(2), "{error:?}");
    let started = Instant::now();
    store.save(&group, "u", 0, 1).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(1));
    transaction.rollback().await.unwrap();
    drop_table(store).await;
}

/// How long a retire holds up saves on the same table: one writer saves in a loop (one
/// connection, so each save's time is its own), while retires of other subscriptions come
/// one after the other. Prints the save latencies without and during retires; asserts only a
/// generous bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retire_pauses_saves_only_briefly() {
    let store = store_on_own_table("cp_retire_pause", 4).await;
    let group = fresh_group("retire-pause");
    let writes = |store: PostgresCheckpointStore, group: String, stop: Arc<AtomicBool>| {
        tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut connection = store.pool().acquire().await.unwrap();
            let mut position = 0;
            while !stop.load(Ordering::Relaxed) {
                position += 1;
                let started = Instant::now();
                store
                    .save_in(&mut connection, &group, "live", 0, position)
                    .await
                    .unwrap();
                latencies.push(started.elapsed());
            }
            latencies.sort();
            latencies
        })
    };
    let summary = |latencies: &[Duration]| {
        format!(
            "{} saves, median {:?}, p99 {:?}, max {:?}",
            latencies.len(),
            latencies[latencies.len() / 2],
            latencies[latencies.len() * 99 / 100],
            latencies[latencies.len() - 1]
        )
    };
    let stop = Arc::new(AtomicBool::new(false));
    let writer = writes(store.clone(), group.clone(), Arc::clone(&stop));
    tokio::time::sleep(Duration::from_secs(1)).await;
    stop.store(true, Ordering::Relaxed);
    let quiet = writer.await.unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let writer = writes(store.clone(), group.clone(), Arc::clone(&stop));
    let mut retires = Vec::new();
    let started = Instant::now();
    let mut index = 0;
    while started.elapsed() < Duration::from_secs(1) {
        let subscription = format!("old-{index}");
        index += 1;
        store.save(&group, &subscription, 0, 1).await.unwrap();
        let retiring = Instant::now();
        store.retire(&group, &subscription).await.unwrap();
        retires.push(retiring.elapsed());
    }
    stop.store(true, Ordering::Relaxed);
    let during = writer.await.unwrap();
    retires.sort();
    eprintln!(
        "saves alone: {}; saves during back-to-back retires: {}; {} retires, median {:?}, max {:?}",
        summary(&quiet),
        summary(&during),
        retires.len(),
        retires[retires.len() / 2],
        retires[retires.len() - 1]
    );
    assert!(during[during.len() - 1] < Duration::from_secs(1));
    drop_table(store).await;
}
