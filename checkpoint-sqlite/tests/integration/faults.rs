//! Faults and how they are reported: a missing table, a lock held past the busy timeout, a
//! value this store never writes; each says honestly whether a retry may help, and keeps its
//! source.

use std::time::Duration;

use checkpoint_conformance::error_chain;
use checkpoint_core::{
    Checkpoint, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint, Operation,
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
