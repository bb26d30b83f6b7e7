//! A source that takes more partitions while subscriptions run: the new partitions are found
//! at the discovery interval, leased, balanced and read from their start, without a restart,
//! each entry handled once, nothing held moved.

use std::sync::Arc;
use std::time::Duration;

use checkpoint_core::source::InMemorySource;
use checkpoint_core::{CheckpointStore, InMemoryCheckpointStore};
use checkpoint_subscription::{Subscription, SubscriptionError};

use crate::support::{Record, eventually, filled_source, recording};

const LIMIT: Duration = Duration::from_secs(20);

/// Appends `count` entries to `partition`, numbered from `first` in their payloads.
fn append(source: &InMemorySource, partition: u32, first: u64, count: u64) {
    for n in first..first + count {
        source
            .append(partition, format!("{partition}/{n}").into_bytes())
            .expect("a partition of the source");
    }
}

fn subscription(
    store: &Arc<InMemoryCheckpointStore>,
    source: &Arc<InMemorySource>,
    record: &Arc<Record>,
    id: &str,
) -> Subscription {
    Subscription::builder(Arc::clone(store), source.clone(), "g", "s")
        .handler(recording(record, Duration::from_millis(1)))
        .discovery_interval(Duration::from_millis(50))
        .worker(|w| w.worker_id(id).lease_duration(Duration::from_millis(500)))
        .start()
        .expect("valid settings")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entries_of_partitions_added_after_start_are_handled_once_from_their_start() {
    let store = Arc::new(InMemoryCheckpointStore::new());
    let source = filled_source(2, 20);
    let record = Arc::new(Record::default());
    let subscription = subscription(&store, &source, &record, "a");
    eventually(LIMIT, "40 entries handled", || record.total() == 40).await;

    assert_eq!(source.add_partitions(2).expect("grown"), 4);
    // Appended before the subscription can know of partition 2: read from its start all the
    // same.
    append(&source, 2, 0, 20);
    eventually(LIMIT, "the worker leases 4 partitions", || {
        subscription.worker().stats().held.len() == 4
    })
    .await;
    append(&source, 3, 0, 20);
    append(&source, 0, 20, 5);
    eventually(LIMIT, "85 entries handled", || record.total() == 85).await;
    subscription.shutdown().await.expect("a clean shutdown");

    let runs = record.runs();
    assert!(
        runs.values().all(|&n| n == 1),
        "an entry ran twice: {runs:?}"
    );
    for partition in [2, 3] {
        let positions: Vec<u64> = runs
            .keys()
            .filter(|(p, _)| *p == partition)
            .map(|(_, position)| *position)
            .collect();
        assert_eq!(
            positions,
            (1..=20).collect::<Vec<_>>(),
            "partition {partition}"
        );
    }
    let mut checkpoints = Vec::new();
    for partition in 0..4 {
        checkpoints.push(store.load("g", "s", partition).await.expect("load"));
    }
    assert_eq!(checkpoints, [Some(26), Some(21), Some(21), Some(21)]);
    assert_eq!(subscription.worker().stats().partitions, 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_subscriptions_share_the_new_partitions_and_hand_nothing_over() {
    let store = Arc::new(InMemoryCheckpointStore::new());
    let source = filled_source(4, 10);
    let record = Arc::new(Record::default());
    let a = subscription(&store, &source, &record, "a");
    let b = subscription(&store, &source, &record, "b");
    let held = |s: &Subscription| s.worker().stats().held.len();
    eventually(LIMIT, "40 handled, 2 partitions each", || {
        record.total() == 40 && held(&a) == 2 && held(&b) == 2
    })
    .await;

    source.add_partitions(2).expect("grown");
    append(&source, 4, 0, 10);
    append(&source, 5, 0, 10);
    eventually(LIMIT, "60 handled, 3 partitions each", || {
        record.total() == 60 && held(&a) == 3 && held(&b) == 3
    })
    .await;
    let handed_over = a.worker().stats().handovers_out + b.worker().stats().handovers_out;
    a.shutdown().await.expect("a clean shutdown");
    b.shutdown().await.expect("a clean shutdown");
    assert_eq!(handed_over, 0, "a partition held before the growth moved");
    let runs = record.runs();
    assert!(
        runs.values().all(|&n| n == 1),
        "an entry ran twice: {runs:?}"
    );
}

#[test]
fn a_zero_discovery_interval_is_refused() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let _entered = runtime.enter();
    let refused = Subscription::builder(
        Arc::new(InMemoryCheckpointStore::new()),
        Arc::new(InMemorySource::new(1)),
        "g",
        "s",
    )
    .handler(recording(&Arc::new(Record::default()), Duration::ZERO))
    .discovery_interval(Duration::ZERO)
    .start();
    assert!(matches!(
        refused,
        Err(SubscriptionError::InvalidSetting {
            setting: "discovery_interval",
            ..
        })
    ));
}
