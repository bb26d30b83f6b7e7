//! Bad input: invalid arguments are refused before any I/O, through every entry point (the
//! trait's and the `*_in` family on the caller's connection), and valid ones read back.
//!
//! "Before any I/O" is shown without counting on the wire: on a store whose lazy pool points
//! at an address where nothing listens, and on a caller's connection the server has killed,
//! every invalid call still reports the invalid argument, while a valid call reaches the pool
//! or the connection and fails there.

use std::time::{Duration, Instant};

use async_trait::async_trait;
use checkpoint_conformance::harness::bad_input::{
    BadInput, Call, MoreEntryPoints, Reply, bad_lease_input,
};
use checkpoint_core::{
    Argument, Checkpoint, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint, LeaseStore,
};
use checkpoint_mysql::MysqlCheckpointStore;
use sqlx::MySqlConnection;
use sqlx::mysql::{MySqlConnectOptions, MySqlPoolOptions};

use crate::support;

/// A store over a lazy pool to 127.0.0.1:1, where nothing listens: it opens no connection
/// until a call needs one, and every such attempt fails.
fn unreachable_store() -> MysqlCheckpointStore {
    let pool = MySqlPoolOptions::new()
        .acquire_timeout(Duration::from_secs(1))
        .connect_lazy_with(MySqlConnectOptions::new().host("127.0.0.1").port(1));
    MysqlCheckpointStore::new(pool)
        .with_timeout(Duration::from_secs(3))
        .expect("a valid timeout")
}

/// A valid call that reached the unreachable pool: a retryable failure of the backend (the
/// pool could not connect) or the store's timeout, never an invalid argument.
fn assert_reached_the_pool(error: &Error) {
    assert!(error.invalid_input().is_none(), "{error:?}");
    assert!(
        matches!(error, Error::Backend { .. } | Error::Timeout { .. }),
        "{error:?}"
    );
    assert!(error.is_retryable(), "{error:?}");
}

/// The `*_in` family on one connection of the caller's, for the kit's bad-input driver.
struct OnConnection<'a> {
    store: &'a MysqlCheckpointStore,
    conn: &'a mut MySqlConnection,
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
/// valid ones read back exactly (on the shared server, under groups of the driver's own).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arbitrary_inputs_through_every_entry_point() {
    let store = support::store().await;
    let mut conn = store.pool().acquire().await.expect("acquire");
    let mut on_connection = OnConnection {
        store: &store,
        conn: &mut conn,
    };
    let report = BadInput::uncounted(&store)
        .run(&mut on_connection)
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    assert!(report.refused > 0 && report.performed > 0, "{report}");
}

/// Invalid input is rejected before any I/O: on a store whose pool cannot connect, invalid
/// calls still report the invalid argument, at once, while a valid call reaches the pool and
/// fails there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_input_is_rejected_before_any_io() {
    let store = unreachable_store();

    let too_far = i64::MAX as u64 + 1;
    let started = Instant::now();
    let invalid = [
        (store.save("", "s", 0, 1).await, Argument::Group),
        (store.save("g", "s", 0, too_far).await, Argument::Position),
        (
            store.load("g", "a\0b", 0).await.map(drop),
            Argument::Subscription,
        ),
        (
            store.list(&"g".repeat(513)).await.map(drop),
            Argument::Group,
        ),
        (
            store
                .save_all(
                    "g",
                    &[Checkpoint::new("s", 0, 1), Checkpoint::new("", 0, 1)],
                )
                .await,
            Argument::Subscription,
        ),
        (
            store
                .claim("g", "s", 0, Fingerprint::from_bytes([0; 32]), too_far)
                .await
                .map(drop),
            Argument::InitialPosition,
        ),
        (store.advance("g", "s", 0, 5, 5).await, Argument::To),
    ];
    let refused_in = started.elapsed();
    for (result, argument) in invalid {
        let error = result.expect_err("invalid");
        assert_eq!(
            error.invalid_input().map(|invalid| invalid.argument),
            Some(argument),
            "{error:?}"
        );
    }
    // Far below the pool's 1 s acquire timeout: no call waited for a connection.
    assert!(refused_in < Duration::from_millis(500), "{refused_in:?}");

    let error = store.save("g", "s", 0, 1).await.expect_err("unreachable");
    assert_reached_the_pool(&error);
    store.pool().close().await;
}

/// The same rules on the caller's connection: on one the server has killed, invalid `*_in`
/// calls are refused naming the argument (nothing was sent, or the dead connection would have
/// said so), and a valid one fails on the connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_input_on_the_callers_connection_is_rejected_before_any_io() {
    let store = support::store().await;
    let mut conn = support::admin_connection().await;
    let id: u64 = sqlx::query_scalar("SELECT CONNECTION_ID()")
        .fetch_one(&mut conn)
        .await
        .expect("CONNECTION_ID()");
    support::admin_sql(&[format!("KILL CONNECTION {id}")]).await;

    let too_far = i64::MAX as u64 + 1;
    let fingerprint = Fingerprint::from_bytes([1; 32]);
    let invalid = [
        (
            store.save_in(&mut conn, "g", "s", 0, too_far).await,
            Argument::Position,
        ),
        (
            store.advance_in(&mut conn, "g", "s", 0, 2, 1).await,
            Argument::To,
        ),
        (
            store.load_in(&mut conn, "", "s", 0).await.map(drop),
            Argument::Group,
        ),
        (
            store.list_in(&mut conn, "g\0").await.map(drop),
            Argument::Group,
        ),
        (
            store
                .save_all_in(&mut conn, "g", &[Checkpoint::new("s\0", 0, 1)])
                .await,
            Argument::Subscription,
        ),
        (
            store
                .claim_in(&mut conn, "g", "", 0, fingerprint, 0)
                .await
                .map(drop),
            Argument::Subscription,
        ),
    ];
    for (result, argument) in invalid {
        let error = result.expect_err("invalid");
        assert_eq!(
            error.invalid_input().map(|invalid| invalid.argument),
            Some(argument),
            "{error:?}"
        );
    }
    let error = store
        .load_in(&mut conn, "g", "s", 0)
        .await
        .expect_err("the connection was killed");
    assert!(error.invalid_input().is_none(), "{error:?}");
    assert!(matches!(error, Error::Backend { .. }), "{error:?}");
}

/// The kit's invalid lease calls (bad names, owners, durations, partitions, through all six
/// lease operations), on a store whose pool cannot connect: each is refused naming the right
/// argument, so none reached the pool; a valid lease call does reach it and fails there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_lease_input_is_rejected_before_any_io() {
    let store = unreachable_store();
    let refused = bad_lease_input(&store, None)
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    assert!(refused > 0);
    let error = store
        .acquire("g", "s", "w", &[0], Duration::from_secs(1))
        .await
        .expect_err("unreachable");
    assert_reached_the_pool(&error);
    store.pool().close().await;
}
