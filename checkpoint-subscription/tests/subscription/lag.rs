//! Lag per partition: positions behind the head, and the age of the oldest unfinished entry.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use checkpoint_core::InMemoryCheckpointStore;
use checkpoint_core::source::{Entry, InMemorySource};
use checkpoint_subscription::{HandlerResult, Subscription};
use tokio::sync::Semaphore;

use crate::support::eventually;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lag_shows_the_backlog_and_how_old_it_is_then_nothing_once_caught_up() {
    let store = Arc::new(InMemoryCheckpointStore::new());
    let source = Arc::new(InMemorySource::new(1));
    let appended_at = SystemTime::now() - Duration::from_secs(30);
    for position in 1..=500u64 {
        let mut entry = Entry::new(position, b"x".to_vec());
        entry.appended_at = Some(appended_at);
        source.append_entry(0, entry).expect("ahead");
    }
    let gate = Arc::new(Semaphore::new(0));
    let handler = {
        let gate = gate.clone();
        move |_entry: Arc<Entry>| {
            let gate = gate.clone();
            async move {
                gate.acquire().await.expect("open").forget();
                HandlerResult::Ok(())
            }
        }
    };
    let subscription = Subscription::builder(Arc::clone(&store), source.clone(), "g", "s")
        .handler(handler)
        .max_in_flight(4)
        .page_size(16)
        .lag_interval(Duration::from_millis(50))
        .worker(|w| w.lease_duration(Duration::from_millis(500)))
        .start()
        .expect("valid settings");
    // The reader is held back by the handlers; the head read every lag interval shows the
    // whole backlog.
    eventually(
        Duration::from_secs(10),
        "the whole backlog in the lag",
        || {
            subscription
                .stats()
                .partitions
                .first()
                .is_some_and(|p| p.head == Some(500) && p.lag_positions == 500)
        },
    )
    .await;
    let status = subscription.stats().partitions[0].clone();
    assert_eq!(status.checkpoint, 1);
    assert_eq!(status.in_flight, 4);
    let age = status.lag_time.expect("the source keeps append times");
    assert!(age >= Duration::from_secs(30), "lag time {age:?}");
    gate.add_permits(500);
    eventually(Duration::from_secs(10), "caught up", || {
        subscription
            .stats()
            .partitions
            .first()
            .is_some_and(|p| p.lag_positions == 0 && p.lag_time.is_none() && p.checkpoint == 501)
    })
    .await;
    subscription.shutdown().await.expect("a clean shutdown");
}
