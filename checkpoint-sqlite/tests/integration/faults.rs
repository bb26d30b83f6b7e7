//! Faults and how they are reported: a missing table, a lock held past the busy timeout, a
//! value this store never writes; each says honestly whether a retry may help, and keeps its
//! source. Leases go through the same: closing and reopening the file, a lock held past the
//! busy timeout, the store's timeout, an epoch no store writes.

use std::time::Duration;

use checkpoint_conformance::error_chain;
use checkpoint_core::{
    Checkpoint, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint, LeaseStore,
    Operation,
};
use checkpoint_sqlite::SqliteCheckpointStore;
use sqlx::Connection;

use crate::support::{TempDb, sqlx_source};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_table_is_not_retryable_and_keeps_its_source() {
    let db = TempDb::new();
    let store = SqliteCheckpointStore::open(db.path()).await.expect("open");
    // No migrate: the table does not exist.
    let error = store.save("g", "s", 0, 1).await.expect_err("no table");
    match &error {
        Error::Backend {
            backend,
            operation,
            retryable,
            ..
        } => {
            assert_eq!(*backend, "sqlite");
            assert_eq!(*operation, Operation::Save);
            assert!(!retryable);
        }
        other => panic!("expected a backend error, got {other:?}"),
    }
    assert!(
        error_chain(&error).contains("no such table"),
        "{}",
        error_chain(&error)
    );
    assert!(matches!(sqlx_source(&error), sqlx::Error::Database(_)));
}

/// A writer that outwaits the busy timeout gets a retryable error whose source is SQLite's
/// `SQLITE_BUSY`; once the lock is released, the same call succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_held_past_the_busy_timeout_is_retryable() {
    let db = TempDb::new();
    let holder = db.store().await;
    let impatient = SqliteCheckpointStore::open_with(
        SqliteCheckpointStore::connect_options(db.path()).busy_timeout(Duration::from_millis(100)),
    )
    .await
    .expect("open");

    let mut conn = holder.pool().acquire().await.expect("acquire");
    let mut tx = conn
        .begin_with("BEGIN IMMEDIATE")
        .await
        .expect("take the write lock");
    holder
        .save_in(&mut tx, "g", "s", 0, 1)
        .await
        .expect("save in the holding transaction");

    for result in [
        impatient.save("g", "s", 0, 2).await,
        impatient.save_all("g", &[Checkpoint::new("s", 0, 2)]).await,
        impatient
            .claim("g", "x", 0, Fingerprint::from_bytes([1; 32]), 0)
            .await
            .map(drop),
    ] {
        let error = result.expect_err("the write lock is held");
        assert!(error.is_retryable(), "{error:?}");
        match sqlx_source(&error) {
            sqlx::Error::Database(database) => {
                assert_eq!(database.code().as_deref(), Some("5"), "{database}")
            }
            other => panic!("expected SQLITE_BUSY, got {other:?}"),
        }
    }

    tx.commit().await.expect("commit");
    impatient
        .save("g", "s", 0, 2)
        .await
        .expect("save after the lock is released");
    assert_eq!(impatient.load("g", "s", 0).await.expect("load"), Some(2));
}

/// A row this store never writes (here a negative position, written by hand) is reported as a
/// non-retryable backend error, not wrapped into a wrong position.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_value_this_store_never_writes_is_an_error() {
    let db = TempDb::new();
    let store = db.store().await;
    sqlx::query(
        "INSERT INTO checkpoints (group_name, subscription, partition_id, position) \
         VALUES ('g', 's', 0, -1)",
    )
    .execute(store.pool())
    .await
    .expect("insert by hand");
    for result in [
        store.load("g", "s", 0).await.map(drop),
        store.list("g").await.map(drop),
    ] {
        let error = result.expect_err("negative position");
        assert!(!error.is_retryable());
        assert!(
            error_chain(&error).contains("position"),
            "{}",
            error_chain(&error)
        );
    }
}

const LEASE: Duration = Duration::from_secs(30);

/// Leases survive what checkpoints survive: the pools closed (every process gone) and the file
/// opened again, the lease is held by the same owner under the same epoch, and its owner
/// renews it; a pool dropped without closing loses nothing either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_survive_closing_and_reopening_the_file() {
    let db = TempDb::new();
    let epoch = {
        let store = db.store().await;
        store
            .acquire("g", "s", "other", &[0], LEASE)
            .await
            .expect("acquire");
        store
            .release("g", "s", "other", &[0])
            .await
            .expect("release");
        let acquired = store
            .acquire("g", "s", "w", &[0, 1], LEASE)
            .await
            .expect("acquire");
        store.pool().close().await;
        acquired.granted[0].epoch
    };
    assert_eq!(epoch, 2);
    let dropped = SqliteCheckpointStore::open(db.path())
        .await
        .expect("reopen");
    let held = dropped.renew("g", "s", "w", LEASE).await.expect("renew");
    drop(dropped);

    let reopened = SqliteCheckpointStore::open(db.path())
        .await
        .expect("reopen");
    reopened.migrate().await.expect("migrate again");
    let table = reopened.leases("g", "s").await.expect("leases");
    let holders: Vec<(u32, &str, u64)> = table
        .leases
        .iter()
        .map(|lease| (lease.partition, lease.owner.as_str(), lease.epoch))
        .collect();
    assert_eq!(holders, [(0, "w", 2), (1, "w", 1)]);
    let owners: Vec<&str> = table.owners.iter().map(|o| o.owner.as_str()).collect();
    assert_eq!(owners, ["other", "w"], "heartbeats survive too");
    let renewed = reopened.renew("g", "s", "w", LEASE).await.expect("renew");
    assert_eq!(renewed, held);
    let refused = reopened
        .acquire("g", "s", "other", &[0], LEASE)
        .await
        .expect("acquire");
    assert_eq!(refused.refused, [0]);
}

/// A lease call that outwaits the busy timeout behind another connection's write lock gets a
/// retryable `SQLITE_BUSY` and changes nothing; reads (`leases`) go on beside the writer; once
/// the lock is released, the same calls succeed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_call_behind_a_lock_held_past_the_busy_timeout_is_retryable() {
    let db = TempDb::new();
    let holder = db.store().await;
    holder
        .acquire("g", "s", "w", &[0], LEASE)
        .await
        .expect("acquire");
    let impatient = SqliteCheckpointStore::open_with(
        SqliteCheckpointStore::connect_options(db.path()).busy_timeout(Duration::from_millis(100)),
    )
    .await
    .expect("open");

    let mut conn = holder.pool().acquire().await.expect("acquire");
    let tx = conn
        .begin_with("BEGIN IMMEDIATE")
        .await
        .expect("take the write lock");
    for result in [
        impatient
            .acquire("g", "s", "x", &[1], LEASE)
            .await
            .map(drop),
        impatient.renew("g", "s", "w", LEASE).await.map(drop),
        impatient.release("g", "s", "w", &[0]).await.map(drop),
        impatient.leave("g", "s", "w").await.map(drop),
        impatient.request_handover("g", "s", "x", &[0]).await,
    ] {
        let error = result.expect_err("the write lock is held");
        assert!(error.is_retryable(), "{error:?}");
        match sqlx_source(&error) {
            sqlx::Error::Database(database) => {
                assert_eq!(database.code().as_deref(), Some("5"), "{database}")
            }
            other => panic!("expected SQLITE_BUSY, got {other:?}"),
        }
    }
    let table = impatient
        .leases("g", "s")
        .await
        .expect("a read beside the writer");
    assert_eq!(table.leases.len(), 1);
    assert_eq!(table.leases[0].handover_requested_by, None);

    tx.rollback().await.expect("rollback");
    let acquired = impatient
        .acquire("g", "s", "x", &[1], LEASE)
        .await
        .expect("acquire after the lock is released");
    assert_eq!(acquired.granted.len(), 1);
    assert_eq!(
        impatient.renew("g", "s", "w", LEASE).await.expect("renew")[0].epoch,
        1
    );
}

/// An acquire ended by the store's timeout while it waits for the write lock grants nothing:
/// its transaction never began, and the connection goes back to the pool clean.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_acquire_grants_nothing() {
    let db = TempDb::new();
    let holder = db.store().await;
    let hasty = SqliteCheckpointStore::open(db.path())
        .await
        .expect("open")
        .with_timeout(Duration::from_millis(100))
        .expect("timeout");
    let mut conn = holder.pool().acquire().await.expect("acquire");
    let tx = conn
        .begin_with("BEGIN IMMEDIATE")
        .await
        .expect("take the write lock");
    let error = hasty
        .acquire("g", "s", "w", &[0], LEASE)
        .await
        .expect_err("the write lock is held");
    assert!(matches!(error, Error::Timeout { .. }), "{error:?}");
    tx.rollback().await.expect("rollback");
    drop(conn);
    // Nothing was granted: another owner gets the partition under the first epoch.
    let acquired = holder
        .acquire("g", "s", "other", &[0], LEASE)
        .await
        .expect("acquire");
    assert_eq!(acquired.granted.len(), 1);
    assert_eq!(acquired.granted[0].epoch, 1);
    assert_eq!(
        hasty.leases("g", "s").await.expect("leases").leases[0].owner,
        "other"
    );
}

/// An epoch this store never writes (below 1, written by hand) is a non-retryable error naming
/// the column, not a lease under a made-up epoch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_epoch_this_store_never_writes_is_an_error() {
    let db = TempDb::new();
    let store = db.store().await;
    store
        .acquire("g", "s", "w", &[0], LEASE)
        .await
        .expect("acquire");
    sqlx::query("UPDATE checkpoints_leases SET epoch = 0")
        .execute(store.pool())
        .await
        .expect("update by hand");
    for result in [
        store.leases("g", "s").await.map(drop),
        store.renew("g", "s", "w", LEASE).await.map(drop),
    ] {
        let error = result.expect_err("epoch 0");
        assert!(!error.is_retryable());
        assert!(
            error_chain(&error).contains("epoch"),
            "{}",
            error_chain(&error)
        );
    }
}
