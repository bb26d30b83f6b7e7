//! Failing handlers: retried with backoff, then parked or stopped on; never skipped silently.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use checkpoint_core::parked::ParkedStore;
use checkpoint_core::source::Entry;
use checkpoint_core::{CheckpointStore, InMemoryCheckpointStore};
use checkpoint_subscription::{HandlerResult, OnPoison, Retry, Subscription};
use tokio::time::Instant;

use crate::support::{Record, eventually, filled_source, partition_of};

const LIMIT: Duration = Duration::from_secs(20);

/// A handler that fails on (partition, position) `poison` while `failing` is set, and records
/// every other run.
fn failing_on(
    record: &Arc<Record>,
    poison: (u32, u64),
    failing: &Arc<AtomicBool>,
) -> impl checkpoint_subscription::Handler + use<> {
    let (record, failing) = (Arc::clone(record), Arc::clone(failing));
    move |entry: Arc<Entry>| {
        let (record, failing) = (Arc::clone(&record), Arc::clone(&failing));
        async move {
            record
                .run(&entry, async {
                    if (partition_of(&entry), entry.position) == poison
                        && failing.load(Ordering::SeqCst)
                    {
                        return Err("no such customer".into());
                    }
                    HandlerResult::Ok(())
                })
                .await
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_failing_handler_is_retried_after_growing_pauses_with_jitter() {
    let store = Arc::new(InMemoryCheckpointStore::new());
    let source = filled_source(1, 1);
    let runs: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let handler = {
        let runs = runs.clone();
        move |_entry: Arc<Entry>| {
            let runs = runs.clone();
            async move {
                let mut runs = runs.lock().expect("not poisoned");
                runs.push(Instant::now());
                if runs.len() < 4 {
                    return Err("not yet".into());
                }
                HandlerResult::Ok(())
            }
        }
    };
    let retry = Retry::exponential(Duration::from_secs(1), Duration::from_secs(30)).attempts(5);
    let subscription = Subscription::builder(Arc::clone(&store), source, "g", "s")
        .handler(handler)
        .retry(retry)
        .start()
        .expect("valid settings");
    eventually(Duration::from_secs(120), "the fourth run", || {
        subscription.stats().handled == 1
    })
    .await;
    let runs = runs.lock().expect("not poisoned").clone();
    assert_eq!(runs.len(), 4, "three failures, then success");
    for (n, pair) in runs.windows(2).enumerate() {
        let pause = pair[1] - pair[0];
        let step = retry.step(n as u32 + 1);
        assert!(
            pause >= step / 2 && pause <= step + Duration::from_millis(10),
            "pause {pause:?} after failure {} outside [{:?}, {step:?}]",
            n + 1,
            step / 2
        );
    }
    assert_eq!(subscription.stats().retries, 3);
    subscription.shutdown().await.expect("a clean shutdown");
    assert_eq!(store.load("g", "s", 0).await.expect("load"), Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poison_entry_is_parked_with_its_error_and_the_partition_goes_on() {
    let store = Arc::new(InMemoryCheckpointStore::new());
    let source = filled_source(2, 20);
    let record = Arc::new(Record::default());
    let failing = Arc::new(AtomicBool::new(true));
    let subscription = Subscription::builder(Arc::clone(&store), source, "g", "s")
        .handler(failing_on(&record, (1, 5), &failing))
        .retry(Retry::exponential(Duration::from_millis(1), Duration::from_millis(5)).attempts(3))
        .on_poison(OnPoison::park(Arc::clone(&store)))
        .worker(|w| w.lease_duration(Duration::from_millis(500)))
        .start()
        .expect("valid settings");
    eventually(LIMIT, "39 entries handled, one parked", || {
        record.total() == 39 && subscription.stats().parked == 1
    })
    .await;
    subscription.shutdown().await.expect("a clean shutdown");
    let parked = store.parked("g").await.expect("parked");
    assert_eq!(parked.len(), 1, "{parked:?}");
    let entry = &parked[0];
    assert_eq!(
        (entry.subscription.as_str(), entry.partition, entry.position),
        ("s", 1, 5)
    );
    assert_eq!(entry.attempts, 3);
    assert_eq!(entry.error, "no such customer");
    assert!(!entry.retry_requested);
    assert!(
        !record.runs().contains_key(&(1, 5)),
        "the poison entry never succeeded"
    );
    // The checkpoint moved past the parked entry: parked is not skipped, it is recorded.
    assert_eq!(store.load("g", "s", 1).await.expect("load"), Some(21));
    assert_eq!(subscription.stats().retries, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poison_entry_stops_its_partition_and_no_other() {
    let store = Arc::new(InMemoryCheckpointStore::new());
    let source = filled_source(3, 20);
    let record = Arc::new(Record::default());
    let failing = Arc::new(AtomicBool::new(true));
    let subscription = Subscription::builder(Arc::clone(&store), source.clone(), "g", "s")
        .handler(failing_on(&record, (0, 5), &failing))
        .retry(Retry::never())
        .max_in_flight(1)
        .lag_interval(Duration::from_millis(50))
        .worker(|w| w.lease_duration(Duration::from_millis(500)))
        .start()
        .expect("valid settings");
    eventually(LIMIT, "partitions 1 and 2 handled, 0 stopped", || {
        let stats = subscription.stats();
        record.total() == 44 && stats.partitions.iter().any(|p| p.stopped_at == Some(5))
    })
    .await;
    // Nothing after the poison entry runs, however long the partition is held.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(record.total(), 44);
    let stats = subscription.stats();
    assert_eq!(stats.stopped_on_poison, 1);
    let stopped = stats
        .partitions
        .iter()
        .find(|p| p.partition == 0)
        .expect("held");
    assert_eq!((stopped.checkpoint, stopped.stopped_at), (5, Some(5)));
    // The log grows behind the stopped partition: its lag says so (the head is still read).
    let mut head = 0;
    for n in 0..10 {
        head = source
            .append(0, format!("0/late-{n}").into_bytes())
            .expect("a partition of the source");
    }
    eventually(
        LIMIT,
        "the stopped partition's lag follows the head",
        || {
            subscription.stats().partitions.iter().any(|p| {
                p.partition == 0 && p.head == Some(head) && p.lag_positions == head + 1 - 5
            })
        },
    )
    .await;
    subscription.shutdown().await.expect("a clean shutdown");
    assert_eq!(
        store.load("g", "s", 0).await.expect("load"),
        Some(5),
        "kept below the entry"
    );
    assert_eq!(store.load("g", "s", 1).await.expect("load"), Some(21));
    assert_eq!(store.load("g", "s", 2).await.expect("load"), Some(21));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_handler_counts_as_a_failure() {
    let store = Arc::new(InMemoryCheckpointStore::new());
    let source = filled_source(1, 3);
    let handler = |entry: Arc<Entry>| async move {
        assert_ne!(entry.position, 2, "the handler's own bug");
        HandlerResult::Ok(())
    };
    let subscription = Subscription::builder(Arc::clone(&store), source, "g", "s")
        .handler(handler)
        .retry(Retry::never())
        .on_poison(OnPoison::park(Arc::clone(&store)))
        .worker(|w| w.lease_duration(Duration::from_millis(500)))
        .start()
        .expect("valid settings");
    eventually(LIMIT, "one parked, two handled", || {
        let stats = subscription.stats();
        stats.parked == 1 && stats.handled == 2
    })
    .await;
    subscription.shutdown().await.expect("a clean shutdown");
    let parked = store.parked("g").await.expect("parked");
    assert_eq!(parked[0].position, 2);
    assert!(parked[0].error.contains("panicked"), "{}", parked[0].error);
    assert!(
        parked[0].error.contains("the handler's own bug"),
        "{}",
        parked[0].error
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_entry_is_retried_when_an_operator_asks_and_unparked_when_it_succeeds() {
    let store = Arc::new(InMemoryCheckpointStore::new());
    let source = filled_source(1, 10);
    let record = Arc::new(Record::default());
    let failing = Arc::new(AtomicBool::new(true));
    let subscription = Subscription::builder(Arc::clone(&store), source, "g", "s")
        .handler(failing_on(&record, (0, 4), &failing))
        .retry(Retry::never())
        .on_poison(OnPoison::park(Arc::clone(&store)))
        .parked_poll_interval(Duration::from_millis(50))
        .worker(|w| w.lease_duration(Duration::from_millis(500)))
        .start()
        .expect("valid settings");
    eventually(LIMIT, "nine handled, one parked", || {
        record.total() == 9 && subscription.stats().parked == 1
    })
    .await;
    // Not asked for: a parked entry stays parked.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(store.parked("g").await.expect("parked").len(), 1);
    failing.store(false, Ordering::SeqCst); // the sink is fixed
    assert!(
        store
            .retry_parked("g", "s", 0, 4)
            .await
            .expect("retry_parked")
    );
    eventually(LIMIT, "the parked entry retried", || {
        subscription.stats().parked_retried == 1
    })
    .await;
    assert!(store.parked("g").await.expect("parked").is_empty());
    assert_eq!(record.runs().get(&(0, 4)), Some(&1));
    subscription.shutdown().await.expect("a clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_retry_of_a_parked_entry_parks_it_again_with_the_attempts_added() {
    let store = Arc::new(InMemoryCheckpointStore::new());
    let source = filled_source(1, 5);
    let record = Arc::new(Record::default());
    let failing = Arc::new(AtomicBool::new(true));
    let subscription = Subscription::builder(Arc::clone(&store), source, "g", "s")
        .handler(failing_on(&record, (0, 2), &failing))
        .retry(Retry::exponential(Duration::from_millis(1), Duration::from_millis(2)).attempts(2))
        .on_poison(OnPoison::park(Arc::clone(&store)))
        .parked_poll_interval(Duration::from_millis(50))
        .worker(|w| w.lease_duration(Duration::from_millis(500)))
        .start()
        .expect("valid settings");
    eventually(LIMIT, "one parked", || subscription.stats().parked == 1).await;
    assert!(
        store
            .retry_parked("g", "s", 0, 2)
            .await
            .expect("retry_parked")
    );
    let mut parked = Vec::new();
    for _ in 0..400 {
        parked = store.parked("g").await.expect("parked");
        if parked
            .first()
            .is_some_and(|p| p.attempts == 4 && !p.retry_requested)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(parked.len(), 1);
    assert_eq!(
        (parked[0].attempts, parked[0].retry_requested),
        (4, false),
        "{parked:?}"
    );
    subscription.shutdown().await.expect("a clean shutdown");
}
