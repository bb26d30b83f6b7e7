//! The operations API on SQLite: what only this backend can get wrong. A retire racing
//! zombies' saves from several pools (one writer at a time makes the tombstone check atomic
//! with each write), every group of a large file sorted by bytes, the upgrade of a file made
//! before tombstones, and the `*_in` family on a retired subscription. (Every clause of the
//! contract runs through the conformance kit in `kit::admin`.)

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use checkpoint_core::{
    Checkpoint, CheckpointAdmin, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint,
};
use checkpoint_sqlite::SqliteCheckpointStore;

use crate::support::TempDb;

const FINGERPRINT: Fingerprint = Fingerprint::from_bytes([0x3c; 32]);

/// Zombies on pools of their own (as other processes would be) save, batch, claim and save in
/// their own transactions, on existing and new partitions, while the subscription is retired;
/// from the moment `retire` returns nothing of it is ever visible, and the other subscription
/// in the same batches keeps being saved.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_retire_racing_zombies_on_new_and_existing_partitions_leaves_nothing() {
    const ROUNDS: u32 = 10;
    const WORKERS: u32 = 6;
    let db = TempDb::new();
    let store = db.store().await;
    let mut retire_times = Vec::new();
    let mut ignored_after = 0;
    for round in 0..ROUNDS {
        let group = format!("race-{round}");
        let seed: Vec<Checkpoint> = (0..8).map(|p| Checkpoint::new("zombie", p, 10)).collect();
        store.save_all(&group, &seed).await.unwrap();
        let fresh = Arc::new(AtomicU32::new(1_000));
        let retired = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let after_retire = Arc::new(AtomicU64::new(0));
        let mut workers = Vec::new();
        for worker in 0..WORKERS {
            let zombie_store = SqliteCheckpointStore::open(db.path()).await.unwrap();
            let (group, fresh, retired, stop, after_retire) = (
                group.clone(),
                Arc::clone(&fresh),
                Arc::clone(&retired),
                Arc::clone(&stop),
                Arc::clone(&after_retire),
            );
            workers.push(tokio::spawn(async move {
                let store = zombie_store;
                let mut position = 10;
                let mut step = 0u32;
                while !stop.load(Ordering::Relaxed) {
                    position += 1;
                    step += 1;
                    let after = retired.load(Ordering::SeqCst);
                    let existing = (worker + step) % 8;
                    let new = fresh.fetch_add(1, Ordering::Relaxed);
                    match step % 4 {
                        0 => store
                            .save(&group, "zombie", existing, position)
                            .await
                            .unwrap(),
                        1 => store
                            .save_all(
                                &group,
                                &[
                                    Checkpoint::new("zombie", existing, position),
                                    Checkpoint::new("zombie", new, position),
                                    Checkpoint::new("other", worker, position),
                                ],
                            )
                            .await
                            .unwrap(),
                        2 => match store.claim(&group, "zombie", new, FINGERPRINT, 1).await {
                            Ok(_) => assert!(!after, "a claim after the retire succeeded"),
                            Err(Error::Retired { .. }) => {}
                            Err(other) => panic!("claim: {other:?}"),
                        },
                        _ => {
                            let mut transaction = store.pool().begin().await.unwrap();
                            store
                                .save_in(&mut transaction, &group, "zombie", new, position)
                                .await
                                .unwrap();
                            transaction.commit().await.unwrap();
                        }
                    }
                    if after {
                        after_retire.fetch_add(1, Ordering::Relaxed);
                    }
                }
                store.pool().close().await;
            }));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        let started = Instant::now();
        store.retire(&group, "zombie").await.unwrap();
        retire_times.push(started.elapsed());
        retired.store(true, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(50)).await;
        stop.store(true, Ordering::Relaxed);
        for worker in workers {
            worker.await.unwrap();
        }
        let listed = store.list(&group).await.unwrap();
        assert!(
            listed.iter().all(|c| c.subscription != "zombie"),
            "round {round}: {listed:?}"
        );
        assert!(listed.iter().any(|c| c.subscription == "other"));
        for partition in [0, 7, 1_000, fresh.load(Ordering::Relaxed) - 1] {
            assert_eq!(store.load(&group, "zombie", partition).await.unwrap(), None);
        }
        assert_eq!(store.retired(&group).await.unwrap(), ["zombie"]);
        let after = after_retire.load(Ordering::Relaxed);
        assert!(after > 0, "round {round}: no zombie call after the retire");
        ignored_after += after;
    }
    retire_times.sort();
    eprintln!(
        "SQLite retire under {WORKERS} zombie pools: median {:?}, max {:?}; {ignored_after} \
         zombie calls after a retire, all ignored",
        retire_times[retire_times.len() / 2],
        retire_times[retire_times.len() - 1]
    );
}

/// Every group, sorted by bytes: 2,000 groups with checkpoints or only tombstones, and names
/// a locale would order differently.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_returns_every_group_sorted_by_bytes() {
    let db = TempDb::new();
    let store = db.store().await;
    let mut expected: Vec<String> = (0..2_000).map(|i| format!("g-{i:05}")).collect();
    expected.extend(["B", "a", "Z", "é", "e", "_x", "a b", "😀", "ab"].map(str::to_owned));
    for (index, group) in expected.iter().enumerate() {
        let batch: Vec<Checkpoint> = (0..3).map(|p| Checkpoint::new("s", p, 1)).collect();
        store.save_all(group, &batch).await.unwrap();
        if index % 10 == 0 {
            store.retire(group, "s").await.unwrap(); // only a tombstone is left
        }
    }
    expected.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    assert_eq!(store.groups().await.unwrap(), expected);
}

/// A file made before tombstones existed (the old table alone) gets its tombstone table from
/// the next migrate, keeping its checkpoints.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_adds_the_tombstone_table_to_an_existing_file() {
    let db = TempDb::new();
    let store = SqliteCheckpointStore::open(db.path()).await.unwrap();
    sqlx::raw_sql(
        "CREATE TABLE checkpoints (
            group_name TEXT NOT NULL, subscription TEXT NOT NULL, partition_id INTEGER NOT NULL,
            position INTEGER NOT NULL, query_fingerprint BLOB NULL,
            updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
            PRIMARY KEY (group_name, subscription, partition_id)
        ) WITHOUT ROWID;
        INSERT INTO checkpoints (group_name, subscription, partition_id, position)
        VALUES ('g', 's', 0, 42);",
    )
    .execute(store.pool())
    .await
    .unwrap();
    assert!(
        store.save("g", "s", 0, 43).await.is_err(),
        "no tombstone table yet"
    );
    store.migrate().await.unwrap();
    store.migrate().await.unwrap();
    assert_eq!(store.load("g", "s", 0).await.unwrap(), Some(42));
    store.retire("g", "s").await.unwrap();
    assert_eq!(store.groups().await.unwrap(), ["g"]);
    assert_eq!(store.load("g", "s", 0).await.unwrap(), None);
}

/// The `*_in` family on a retired subscription, in the caller's transaction (the kit's SQL
/// family).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_in_family_obeys_the_tombstone() {
    checkpoint_conformance::sql_family::admin::the_in_family_obeys_the_tombstone(&TempDb::new())
        .await;
}

/// start_at is all-or-nothing: a subscription that exists or is retired gets nothing of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_at_refuses_whole() {
    let db = TempDb::new();
    let store = db.store().await;
    store.save("g", "s", 3, 7).await.unwrap();
    let refused = store.start_at("g", "s", &[(0, 1), (3, 100)]).await;
    assert!(matches!(refused, Err(Error::Exists { .. })), "{refused:?}");
    assert_eq!(store.list("g").await.unwrap(), [Checkpoint::new("s", 3, 7)]);
    store.retire("g", "s").await.unwrap();
    let refused = store.start_at("g", "s", &[(0, 1)]).await;
    assert!(matches!(refused, Err(Error::Retired { .. })), "{refused:?}");
    assert!(store.list("g").await.unwrap().is_empty());
    store.purge("g", "s").await.unwrap();
    store
        .start_at("g", "s", &[(u32::MAX, i64::MAX as u64), (0, 0)])
        .await
        .unwrap();
    let mut listed = store.list("g").await.unwrap();
    listed.sort();
    assert_eq!(
        listed,
        [
            Checkpoint::new("s", 0, 0),
            Checkpoint::new("s", u32::MAX, i64::MAX as u64)
        ]
    );
}
