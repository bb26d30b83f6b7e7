//! Bad input: invalid arguments are refused before any I/O, through every entry point (the
//! trait's and the `*_in` family on the caller's connection), and valid ones read back. SQLite
//! has no wire to count requests on; a closed pool shows instead that nothing was attempted.

use std::time::Duration;

use async_trait::async_trait;
use checkpoint_conformance::harness::bad_input::{
    BadInput, Call, MoreEntryPoints, Reply, bad_lease_input,
};
use checkpoint_core::{
    Argument, Checkpoint, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint, LeaseStore,
};
use checkpoint_sqlite::SqliteCheckpointStore;
use sqlx::sqlite::SqliteConnection;

use crate::support::{TempDb, sqlx_source};

/// The `*_in` family on one connection of the caller's, for the kit's bad-input driver.
struct OnConnection<'a> {
    store: &'a SqliteCheckpointStore,
    conn: &'a mut SqliteConnection,
}

#[async_trait(?Send)]
impl MoreEntryPoints for OnConnection<'_> {
    async fn send(&mut self, call: Call<'_>) -> Option<(&'static str, Result<Reply, Error>)> {
        let (store, conn) = (self.store, &mut *self.conn);
        Some(checkpoint_conformance::call_through!(
            call, store, (conn), load_in list_in save_in save_all_in claim_in advance_in
        ))
    }
}

/// The kit's bad-input driver over every entry point, on the pool and on a connection of the
/// caller's: arbitrary arguments, invalid ones refused naming the argument the contract says,
/// valid ones read back exactly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arbitrary_inputs_through_every_entry_point() {
    let db = TempDb::new();
    let store = db.store().await;
    let mut conn = store.pool().acquire().await.expect("acquire");
    let mut on_connection = OnConnection {
        store: &store,
        conn: &mut conn,
    };
    BadInput::uncounted(&store)
        .run(&mut on_connection)
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
}

/// Invalid input is rejected before any I/O: on a closed pool, invalid calls still report the
/// invalid argument, while a valid call reaches the pool and fails there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_input_is_rejected_before_any_io() {
    let db = TempDb::new();
    let store = db.store().await;
    store.pool().close().await;

    let too_far = i64::MAX as u64 + 1;
    let invalid = [
        store.save("", "s", 0, 1).await,
        store.save("g", "s", 0, too_far).await,
        store.load("g", "a\0b", 0).await.map(drop),
        store.list(&"g".repeat(513)).await.map(drop),
        store
            .save_all(
                "g",
                &[Checkpoint::new("s", 0, 1), Checkpoint::new("", 0, 1)],
            )
            .await,
        store
            .claim("g", "s", 0, Fingerprint::from_bytes([0; 32]), too_far)
            .await
            .map(drop),
        store.advance("g", "s", 0, 5, 5).await,
    ];
    for result in invalid {
        let error = result.expect_err("invalid");
        assert!(error.invalid_input().is_some(), "{error:?}");
    }
    let error = store.save("g", "s", 0, 1).await.expect_err("pool closed");
    assert!(
        matches!(sqlx_source(&error), sqlx::Error::PoolClosed),
        "{error:?}"
    );
    assert!(!error.is_retryable());

    // The same rules on the caller's connection.
    let db = TempDb::new();
    let store = db.store().await;
    let mut conn = store.pool().acquire().await.expect("acquire");
    let error = store
        .save_in(&mut conn, "g", "s", 0, too_far)
        .await
        .expect_err("invalid");
    assert_eq!(
        error.invalid_input().map(|invalid| invalid.argument),
        Some(Argument::Position)
    );
    let error = store
        .advance_in(&mut conn, "g", "s", 0, 2, 1)
        .await
        .expect_err("invalid");
    assert_eq!(
        error.invalid_input().map(|invalid| invalid.argument),
        Some(Argument::To)
    );
}

/// The kit's invalid lease calls (bad names, owners, durations, partitions, through all six
/// lease operations), on a closed pool: each is refused naming the right argument, so none
/// reached the pool; a valid lease call does reach it and fails there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_lease_input_is_rejected_before_any_io() {
    let db = TempDb::new();
    let store = db.store().await;
    store.pool().close().await;
    let refused = bad_lease_input(&store, None)
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    assert!(refused > 0);
    let error = store
        .acquire("g", "s", "w", &[0], Duration::from_secs(1))
        .await
        .expect_err("pool closed");
    assert!(
        matches!(sqlx_source(&error), sqlx::Error::PoolClosed),
        "{error:?}"
    );
}
