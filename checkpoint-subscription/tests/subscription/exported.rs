//! The `metrics` feature: the subscription's figures reach the recorder with their labels. The
//! recorder is this thread's (a current-thread runtime runs every task on it), so the other
//! tests of the binary are not recorded.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use checkpoint_core::InMemoryCheckpointStore;
use checkpoint_core::source::Entry;
use checkpoint_subscription::metrics as names;
use checkpoint_subscription::{HandlerResult, OnPoison, Retry, Subscription};
use metrics::{
    Counter, CounterFn, Gauge, GaugeFn, Histogram, Key, KeyName, Metadata, Recorder, SharedString,
    Unit,
};

use crate::support::filled_source;

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

fn series(key: &Key) -> String {
    let labels: Vec<String> = key
        .labels()
        .map(|l| format!("{}={}", l.key(), l.value()))
        .collect();
    format!("{}{{{}}}", key.name(), labels.join(","))
}

impl Recorder for LastValues {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(Arc::new(Series(series(key), Arc::clone(&self.0))))
    }
    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::from_arc(Arc::new(Series(series(key), Arc::clone(&self.0))))
    }
    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

#[tokio::test(flavor = "current_thread")]
async fn lag_and_counters_are_exported_with_their_labels() {
    let values: Values = Arc::default();
    let recorder = LastValues(Arc::clone(&values));
    let _guard = metrics::set_default_local_recorder(&recorder);
    let store = Arc::new(InMemoryCheckpointStore::new());
    let handler = |entry: Arc<Entry>| async move {
        if entry.position == 3 {
            return Err("poison".into());
        }
        HandlerResult::Ok(())
    };
    let subscription = Subscription::builder(Arc::clone(&store), filled_source(2, 10), "m", "s")
        .handler(handler)
        .retry(Retry::exponential(Duration::from_millis(1), Duration::from_millis(1)).attempts(2))
        .on_poison(OnPoison::park(Arc::clone(&store)))
        .lag_interval(Duration::from_millis(20))
        .worker(|w| w.lease_duration(Duration::from_millis(500)))
        .start()
        .unwrap();
    while subscription.stats().handled < 18 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let value = |name: &str| {
        let values = values.lock().unwrap();
        values
            .get(name)
            .copied()
            .unwrap_or_else(|| panic!("{name} was not exported: {values:?}"))
    };
    let per_subscription = "group=m,subscription=s";
    assert_eq!(
        value(&format!("{}{{{per_subscription}}}", names::HANDLED_TOTAL)),
        18.0
    );
    assert_eq!(
        value(&format!("{}{{{per_subscription}}}", names::PARKED_TOTAL)),
        2.0
    );
    assert_eq!(
        value(&format!("{}{{{per_subscription}}}", names::RETRIES_TOTAL)),
        2.0
    );
    assert_eq!(
        value(&format!(
            "{}{{{per_subscription}}}",
            names::SOURCE_ERRORS_TOTAL
        )),
        0.0
    );
    for partition in 0..2 {
        let labels = format!("{{{per_subscription},partition={partition}}}");
        assert_eq!(value(&format!("{}{labels}", names::LAG_POSITIONS)), 0.0);
        assert_eq!(value(&format!("{}{labels}", names::LAG_SECONDS)), 0.0);
        assert_eq!(value(&format!("{}{labels}", names::IN_FLIGHT)), 0.0);
        assert_eq!(value(&format!("{}{labels}", names::STOPPED_ON_POISON)), 0.0);
    }
    subscription.shutdown().await.unwrap();
}
