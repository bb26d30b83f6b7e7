//! The operations API on PostgreSQL: what only this backend can get wrong. A retire racing
//! zombies' saves (the table lock that closes the READ COMMITTED window), start_at racing
//! saves, every group of a large table, the upgrade of a table made before tombstones, and
//! the `*_in` family on a retired subscription. (Every clause of the contract runs through the
//! conformance kit in `kit::admin`; the privileges are in `security`.)

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use checkpoint_conformance::fresh_group;
use checkpoint_conformance::sql_family::admin as family;
use checkpoint_conformance::sql_family::retire_race::{self, OwnTables, RetireRace};
use checkpoint_core::{Checkpoint, CheckpointAdmin, CheckpointStore};
use checkpoint_postgres::{PostgresCheckpointStore, PostgresEngine};
use sqlx::postgres::PgPoolOptions;

use crate::support;

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
        "DROP TABLE \"{table}\", \"{table}_retired\", \"{table}_leases\", \"{table}_owners\", \
             \"{table}_parked\";",
        table = store.table()
    ))
    .await;
}

/// The window a READ COMMITTED save would have without retire's table lock: its snapshot
/// taken before the retire commits, its insert after. Twelve zombies on the test's pool hammer
/// new and existing partitions of one subscription while it is retired, 25 rounds; from the
/// moment `retire` returns nothing of it may ever be visible (the kit's SQL family). (Run with
/// the lock removed from `retire`, this test finds rows of the retired subscription within the
/// first rounds.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_retire_racing_zombies_on_new_and_existing_partitions_leaves_nothing() {
    let race = RetireRace {
        rounds: 25,
        workers: 12,
        own_pools: false,
        settle_ms: (5, 3),
        after_retire: Duration::from_millis(30),
        deadlock_victims: false,
    };
    retire_race::a_retire_racing_zombies_on_new_and_existing_partitions_leaves_nothing(
        &support::Server,
        race,
    )
    .await;
}

/// Tables of the test's own for the kit's retire race.
impl OwnTables<PostgresEngine> for support::Server {
    async fn store_on_own_table(&self, prefix: &str, connections: u32) -> PostgresCheckpointStore {
        store_on_own_table(prefix, connections).await
    }

    async fn store_on(&self, table: &str) -> PostgresCheckpointStore {
        PostgresCheckpointStore::connect_with(support::connect_options())
            .await
            .unwrap()
            .with_table(table)
            .unwrap()
    }

    async fn deadlocks(&self) -> Option<u64> {
        None
    }

    async fn drop_tables(&self, store: PostgresCheckpointStore) {
        drop_table(store).await;
    }
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
