//! Timeouts, backend errors and what they (never) show.

use std::time::Duration;

use checkpoint_conformance::{error_chain, fresh_group};
use checkpoint_core::{CheckpointStore, Error, ExclusiveCheckpointStore, Operation};
use checkpoint_postgres::PostgresCheckpointStore;
use sqlx::postgres::PgPoolOptions;

use crate::support;

const SECRET: &str = "Distinct-Secret-Pw-8e1f";

/// A save that waits on a row another transaction holds ends in `Error::Timeout`, and once
/// the lock is gone the same save succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_operation_times_out() {
    let store = support::store().await;
    let group = fresh_group("timeout");
    store.save(&group, "s", 0, 1).await.unwrap();

    let mut holder = store.pool().begin().await.unwrap();
    sqlx::query(
        "SELECT position FROM checkpoints WHERE group_name = $1 AND subscription = 's' \
         AND partition_id = 0 FOR UPDATE",
    )
    .bind(&group)
    .fetch_one(&mut *holder)
    .await
    .unwrap();

    let impatient = store
        .clone()
        .with_timeout(Duration::from_millis(300))
        .unwrap();
    let result = impatient.save(&group, "s", 0, 2).await;
    match result {
        Err(
            ref error @ Error::Timeout {
                operation: Operation::Save,
                after,
                ..
            },
        ) => {
            assert_eq!(after, Duration::from_millis(300));
            assert!(error.is_retryable());
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    holder.rollback().await.unwrap();

    impatient.save(&group, "s", 0, 2).await.unwrap();
    assert_eq!(store.load(&group, "s", 0).await.unwrap(), Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_table_is_a_backend_error_not_worth_retrying() {
    let store = support::store()
        .await
        .with_table(&support::unique_ident("missing"))
        .unwrap();
    let error = store.load("g", "s", 0).await.unwrap_err();
    assert!(
        matches!(
            error,
            Error::Backend {
                operation: Operation::Load,
                retryable: false,
                ..
            }
        ),
        "{error:?}"
    );
    let chain = error_chain(&error);
    assert!(chain.contains("does not exist"), "{chain}");
}

/// No server needed: a refused connection is a retryable connect error, and neither the
/// error nor its sources show the password of the URL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_connection_is_retryable_and_hides_the_password() {
    let url = format!("postgres://app:{SECRET}@127.0.0.1:1/app");
    let error = PostgresCheckpointStore::connect(&url).await.unwrap_err();
    assert!(
        matches!(
            error,
            Error::Backend {
                operation: Operation::Connect,
                retryable: true,
                ..
            }
        ),
        "{error:?}"
    );
    let shown = format!("{} / {} / {error:?}", error, error_chain(&error));
    assert!(!shown.contains(SECRET), "{shown}");
}

/// No server needed: the store's Debug output never shows connection options.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debug_output_hides_credentials() {
    let options = support::connect_options_without_server(SECRET);
    let pool = PgPoolOptions::new().connect_lazy_with(options);
    let store = PostgresCheckpointStore::new(pool)
        .with_table("app.checkpoints")
        .unwrap();
    let shown = format!("{store:?} {store:#?}");
    assert!(!shown.contains(SECRET), "{shown}");
    assert!(shown.contains("app.checkpoints"), "{shown}");
}

/// Ends the server sessions of every connection whose `application_name` is `name`, as a
/// server restart or a proxy cutting idle connections would, and waits until they are gone.
async fn terminate_sessions(name: &str) -> i64 {
    let mut admin = support::admin_connection().await;
    let terminated: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE application_name = $1) AS t",
    )
    .bind(name)
    .fetch_one(&mut admin)
    .await
    .unwrap();
    for _ in 0..100 {
        let left: i64 =
            sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1")
                .bind(name)
                .fetch_one(&mut admin)
                .await
                .unwrap();
        if left == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    terminated
}

/// After the server has cut the pool's idle connections, the next idempotent call works (it
/// is tried once more on a fresh connection); `advance` is not retried, fails with a
/// retryable error for each dead connection left in the pool, and then works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_call_after_lost_connections_works() {
    let name = support::unique_ident("cp_cut");
    let store =
        PostgresCheckpointStore::connect_with(support::connect_options().application_name(&name))
            .await
            .unwrap();
    let group = fresh_group("cut");
    store.save(&group, "s", 0, 1).await.unwrap();
    store
        .claim(
            &group,
            "x",
            0,
            checkpoint_core::Fingerprint::from_bytes([3; 32]),
            0,
        )
        .await
        .unwrap();

    tokio::time::sleep(Duration::from_millis(100)).await; // connection back in the pool
    assert!(terminate_sessions(&name).await >= 1);
    store.save(&group, "s", 0, 2).await.unwrap();

    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(terminate_sessions(&name).await >= 1);
    assert_eq!(store.load(&group, "s", 0).await.unwrap(), Some(2));

    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(terminate_sessions(&name).await >= 1);
    assert_eq!(store.list(&group).await.unwrap().len(), 2);

    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(terminate_sessions(&name).await >= 1);
    let result = store.advance(&group, "x", 0, 0, 5).await;
    match result {
        Err(
            ref error @ Error::Backend {
                operation: Operation::Advance,
                ..
            },
        ) => {
            assert!(error.is_retryable(), "{error:?}");
        }
        other => panic!("expected the advance on a cut connection to fail, got {other:?}"),
    }
    // Each dead connection still in the pool costs one failed advance, then it works.
    let attempts = store.pool().size() + 1;
    let mut advanced = false;
    for _ in 0..attempts {
        match store.advance(&group, "x", 0, 0, 5).await {
            Ok(()) => {
                advanced = true;
                break;
            }
            Err(error) => assert!(error.is_retryable(), "{error:?}"),
        }
    }
    assert!(advanced, "advance still failing after {attempts} attempts");
    assert_eq!(store.load(&group, "x", 0).await.unwrap(), Some(5));
}
