//! Every entry to the handler: once each, concurrently within the limit, in order per key.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use checkpoint_core::source::{Entry, InMemorySource};
use checkpoint_core::{CheckpointStore, InMemoryCheckpointStore};
use checkpoint_subscription::{HandlerResult, Subscription};

use crate::support::{Record, eventually, filled_source, recording};

const LIMIT: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_entry_is_handled_once_and_the_checkpoints_end_after_the_last() {
    let store = Arc::new(InMemoryCheckpointStore::new());
    let source = filled_source(4, 100);
    let record = Arc::new(Record::default());
    let subscription = Subscription::builder(Arc::clone(&store), source, "g", "s")
        .handler(recording(&record, Duration::from_millis(1)))
        .max_in_flight(8)
        .worker(|w| w.lease_duration(Duration::from_millis(500)))
        .start()
        .expect("valid settings");
    eventually(LIMIT, "400 entries handled", || record.total() == 400).await;
    subscription.shutdown().await.expect("a clean shutdown");
    let runs = record.runs();
    assert!(
        runs.values().all(|&n| n == 1),
        "an entry ran twice: {runs:?}"
    );
    for partition in 0..4 {
        assert_eq!(
            store.load("g", "s", partition).await.expect("load"),
            Some(101)
        );
    }
    assert_eq!(subscription.stats().handled, 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handlers_of_a_partition_run_concurrently_up_to_the_limit() {
    let store = Arc::new(InMemoryCheckpointStore::new());
    let source = filled_source(1, 60);
    let record = Arc::new(Record::default());
    let subscription = Subscription::builder(Arc::clone(&store), source, "g", "s")
        .handler(recording(&record, Duration::from_millis(10)))
        .max_in_flight(4)
        .worker(|w| w.lease_duration(Duration::from_millis(500)))
        .start()
        .expect("valid settings");
    eventually(LIMIT, "60 entries handled", || record.total() == 60).await;
    subscription.shutdown().await.expect("a clean shutdown");
    let most = record.most_at_once.load(Ordering::SeqCst);
    assert!(
        most <= 4,
        "{most} handlers ran at once with max_in_flight 4"
    );
    assert!(
        most >= 2,
        "handlers never ran concurrently (at most {most} at once)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entries_of_one_key_run_one_at_a_time_in_log_order() {
    let store = Arc::new(InMemoryCheckpointStore::new());
    let source = Arc::new(InMemorySource::new(1));
    for position in 1..=90u64 {
        let mut entry = Entry::new(position, b"x".to_vec());
        entry.key = Some(format!("key-{}", position % 3));
        source.append_entry(0, entry).expect("ahead");
    }
    // Per key: the positions in the order they ran, and how many ran at once.
    let order: Arc<Mutex<BTreeMap<String, Vec<u64>>>> = Arc::default();
    let running: Arc<Mutex<BTreeMap<String, u32>>> = Arc::default();
    let record = Arc::new(Record::default());
    let handler = {
        let (order, running, record) = (order.clone(), running.clone(), record.clone());
        move |entry: Arc<Entry>| {
            let (order, running, record) = (order.clone(), running.clone(), record.clone());
            async move {
                let key = entry.key.clone().expect("every entry has a key");
                let at_once = {
                    let mut running = running.lock().expect("not poisoned");
                    let count = running.entry(key.clone()).or_default();
                    *count += 1;
                    *count
                };
                assert_eq!(at_once, 1, "two entries of {key} ran at once");
                order
                    .lock()
                    .expect("not poisoned")
                    .entry(key.clone())
                    .or_default()
                    .push(entry.position);
                record
                    .run(&Entry::new(entry.position, b"0/".to_vec()), async {
                        tokio::time::sleep(Duration::from_millis(3)).await;
                        HandlerResult::Ok(())
                    })
                    .await?;
                *running
                    .lock()
                    .expect("not poisoned")
                    .get_mut(&key)
                    .expect("counted") -= 1;
                Ok(())
            }
        }
    };
    let subscription = Subscription::builder(Arc::clone(&store), source, "g", "s")
        .handler(handler)
        .max_in_flight(16)
        .ordered_by_key(true)
        .worker(|w| w.lease_duration(Duration::from_millis(500)))
        .start()
        .expect("valid settings");
    eventually(LIMIT, "90 entries handled", || record.total() == 90).await;
    subscription.shutdown().await.expect("a clean shutdown");
    for (key, positions) in order.lock().expect("not poisoned").iter() {
        let mut sorted = positions.clone();
        sorted.sort_unstable();
        assert_eq!(positions, &sorted, "{key} ran out of log order");
        assert_eq!(positions.len(), 30);
    }
    let most = record.most_at_once.load(Ordering::SeqCst);
    assert!(
        most >= 2,
        "entries of different keys never ran concurrently"
    );
    assert_eq!(store.load("g", "s", 0).await.expect("load"), Some(91));
}
