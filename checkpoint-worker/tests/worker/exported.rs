//! The `metrics` feature: the worker's figures reach the recorder, with their labels. The
//! recorder is this thread's (a current-thread runtime runs the keeper on it), so the other
//! tests of the binary are not recorded.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use checkpoint_core::InMemoryCheckpointStore;
use checkpoint_worker::Worker;
use checkpoint_worker::metrics as names;
use metrics::{
    Counter, CounterFn, Gauge, GaugeFn, Histogram, Key, KeyName, Metadata, Recorder, SharedString,
    Unit,
};

type Values = Arc<Mutex<HashMap<String, f64>>>;

/// Keeps the last value of every series, keyed by name and labels.
struct LastValues(Values);

struct Series(String, Values);

impl GaugeFn for Series {
    fn increment(&self, value: f64) {
        *self.1.lock().unwrap().entry(self.0.clone()).or_default() += value;
    }
    fn decrement(&self, value: f64) {
        *self.1.lock().unwrap().entry(self.0.clone()).or_default() -= value;
    }
    fn set(&self, value: f64) {
        self.1.lock().unwrap().insert(self.0.clone(), value);
    }
}

impl CounterFn for Series {
    fn increment(&self, value: u64) {
        *self.1.lock().unwrap().entry(self.0.clone()).or_default() += value as f64;
    }
    fn absolute(&self, value: u64) {
        self.1.lock().unwrap().insert(self.0.clone(), value as f64);
    }
}

impl Recorder for LastValues {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(Arc::new(Series(key.name().to_owned(), Arc::clone(&self.0))))
    }
    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        let labels: Vec<String> = key
            .labels()
            .map(|l| format!("{}={}", l.key(), l.value()))
            .collect();
        assert_eq!(
            labels,
            ["group=exported", "subscription=orders", "worker=w"],
            "{}",
            key.name()
        );
        Gauge::from_arc(Arc::new(Series(key.name().to_owned(), Arc::clone(&self.0))))
    }
    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

#[tokio::test(start_paused = true)]
async fn every_figure_is_exported_with_its_labels() {
    let values: Values = Arc::default();
    let recorder = LastValues(Arc::clone(&values));
    let _guard = metrics::set_default_local_recorder(&recorder);
    let store =
        InMemoryCheckpointStore::new().with_clock(|| tokio::time::Instant::now().into_std());
    let (worker, mut assignments) = Worker::builder(store, "exported", "orders", 3)
        .worker_id("w")
        .lease_duration(Duration::from_secs(2))
        .start()
        .unwrap();
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(assignments.next().await.unwrap());
    }
    tokio::time::sleep(Duration::from_secs(2)).await;

    let value = |name: &str| {
        let values = values.lock().unwrap();
        values
            .get(name)
            .copied()
            .unwrap_or_else(|| panic!("{name} was not exported: {values:?}"))
    };
    assert_eq!(value(names::PARTITIONS_HELD), 3.0);
    assert_eq!(value(names::LIVE_WORKERS), 1.0);
    assert_eq!(value(names::UNOWNED_PARTITIONS), 0.0);
    assert_eq!(value(names::LONGEST_UNOWNED_SECONDS), 0.0);
    assert_eq!(value(names::ACQUIRED_TOTAL), 3.0);
    assert_eq!(value(names::HANDOVERS_IN_TOTAL), 0.0);
    assert_eq!(value(names::HANDOVERS_OUT_TOTAL), 0.0);
    assert_eq!(value(names::LOSSES_TOTAL), 0.0);
    assert_eq!(value(names::RENEW_FAILURES_TOTAL), 0.0);
    let stats = worker.stats();
    assert_eq!(
        value(names::STORE_REQUESTS_TOTAL),
        stats.store_requests as f64
    );
    drop(held);
    worker.shutdown().await.unwrap();
}
