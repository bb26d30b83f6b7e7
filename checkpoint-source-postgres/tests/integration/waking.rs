//! Waking: a commit wakes an idle waiter by notification, a dropped notification connection
//! loses no wake-up, and a wait behind a long transaction ends when that transaction does.
//!
//! The sources here poll only every 60 s, so a wait that ends within 20 s was woken (the
//! bound leaves room for other sessions that hold the horizon back for a while, such as the
//! stress test's long transaction).

use std::time::Duration;

use checkpoint_core::source::Source;
use checkpoint_source_postgres::{LISTENER_APPLICATION_NAME, PostgresSource};

use crate::support::source;

const SLOW_POLL: Duration = Duration::from_secs(60);
const BOUND: Duration = Duration::from_secs(20);

async fn slow_polling(prefix: &str, partitions: u32) -> PostgresSource {
    source(prefix, partitions)
        .await
        .with_poll_interval(SLOW_POLL)
}

#[tokio::test]
async fn wait_returns_at_once_when_a_read_can_return_something() {
    let _shared = crate::support::shared().await;
    let source = slow_polling("ready", 1).await;
    let position = source.append(0, None, b"x").await.unwrap();
    tokio::time::timeout(BOUND, source.wait(0, 0))
        .await
        .unwrap()
        .unwrap();
    tokio::time::timeout(BOUND, source.wait(0, position))
        .await
        .unwrap()
        .unwrap();
    // Past the last entry there is nothing to wait for yet.
    let waiting = tokio::time::timeout(Duration::from_millis(300), source.wait(0, position + 1));
    assert!(waiting.await.is_err(), "nothing new: the wait goes on");
}

#[tokio::test]
async fn a_commit_wakes_an_idle_waiter() {
    let _shared = crate::support::shared().await;
    let source = slow_polling("wake", 4).await;
    let waiter = {
        let source = source.clone();
        tokio::spawn(async move { source.wait(2, 0).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiter.is_finished(), "nothing committed yet");
    source.append(2, None, b"x").await.unwrap();
    tokio::time::timeout(BOUND, waiter)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

async fn terminate_listeners(source: &PostgresSource) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
          WHERE application_name = $1) t",
    )
    .bind(LISTENER_APPLICATION_NAME)
    .fetch_one(source.pool())
    .await
    .unwrap()
}

#[tokio::test]
async fn a_commit_while_the_notification_connection_is_down_still_wakes_the_waiter() {
    let _shared = crate::support::shared().await;
    let source = slow_polling("dropped", 2).await;
    for round in 0..3u8 {
        let from = source.head(1).await.unwrap().map_or(0, |head| head + 1);
        let waiter = {
            let source = source.clone();
            tokio::spawn(async move { source.wait(1, from).await })
        };
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(
            terminate_listeners(&source).await >= 1,
            "the listener was connected"
        );
        // Committed while the listener is down or reconnecting: its notification is lost.
        source.append(1, None, &[round]).await.unwrap();
        tokio::time::timeout(BOUND, waiter)
            .await
            .unwrap_or_else(|_| panic!("round {round}: the wake-up was lost"))
            .unwrap()
            .unwrap();
    }
    // And after the reconnections, a commit wakes a waiter again.
    let from = source.head(1).await.unwrap().map_or(0, |head| head + 1);
    let waiter = {
        let source = source.clone();
        tokio::spawn(async move { source.wait(1, from).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    source.append(1, None, b"after").await.unwrap();
    tokio::time::timeout(BOUND, waiter)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn a_wait_behind_a_long_transaction_ends_when_it_ends() {
    let _shared = crate::support::shared().await;
    let source = slow_polling("behind", 1).await;
    let mut long = source.pool().begin().await.unwrap();
    sqlx::query("SELECT pg_current_xact_id()")
        .execute(&mut *long)
        .await
        .unwrap();
    source.append(0, None, b"x").await.unwrap();
    let waiter = {
        let source = source.clone();
        tokio::spawn(async move { source.wait(0, 0).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !waiter.is_finished(),
        "the entry waits for the older transaction"
    );
    // It ends without writing to the table: no notification, the horizon's polling sees it.
    long.rollback().await.unwrap();
    tokio::time::timeout(BOUND, waiter)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(source.read(0, 0, 10).await.unwrap().entries.len(), 1);
}
