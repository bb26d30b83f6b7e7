//! The `metrics` feature: every partition's figures reach the installed recorder.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use checkpoint_committer::Committer;
use checkpoint_committer::metrics as names;
use checkpoint_core::InMemoryCheckpointStore;
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

fn series_name(key: &Key) -> String {
    let mut labels: Vec<String> = key
        .labels()
        .map(|label| format!("{}={}", label.key(), label.value()))
        .collect();
    labels.sort();
    format!("{}{{{}}}", key.name(), labels.join(","))
}

impl Recorder for LastValues {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(Arc::new(Series(series_name(key), Arc::clone(&self.0))))
    }
    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::from_arc(Arc::new(Series(series_name(key), Arc::clone(&self.0))))
    }
    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

#[tokio::test]
async fn every_figure_is_exported_with_its_labels() {
    let values: Values = Arc::default();
    metrics::set_global_recorder(LastValues(Arc::clone(&values)))
        .expect("the only test of this binary that installs a recorder");
    let committer = Committer::builder(InMemoryCheckpointStore::new(), "exported")
        .interval(Duration::from_millis(20))
        .start()
        .unwrap();
    let p = committer.partition("orders", 4, 100).unwrap();
    for position in 100..110 {
        p.dispatched(position).await.unwrap();
    }
    for position in 101..110 {
        p.completed(position).unwrap();
    }
    p.completed(100).unwrap();
    p.dispatched(110).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;

    let labels = "{group=exported,partition=4,subscription=orders}";
    let value = |name: &str, labels: &str| {
        values
            .lock()
            .unwrap()
            .get(&format!("{name}{labels}"))
            .copied()
            .unwrap_or_else(|| {
                panic!(
                    "{name}{labels} was not exported: {:?}",
                    values.lock().unwrap()
                )
            })
    };
    assert_eq!(value(names::COMMITTED_POSITION, labels), 110.0);
    assert_eq!(value(names::GAP_FREE_POSITION, labels), 110.0);
    assert_eq!(value(names::LAG_POSITIONS, labels), 0.0);
    assert_eq!(value(names::IN_FLIGHT, labels), 1.0);
    assert!(value(names::OLDEST_IN_FLIGHT_SECONDS, labels) >= 0.2);
    assert_eq!(value(names::WRITE_FAILING, labels), 0.0);
    assert_eq!(value(names::WRITES_TOTAL, "{group=exported}"), 1.0);
    assert_eq!(value(names::WRITE_ERRORS_TOTAL, "{group=exported}"), 0.0);
    committer.shutdown().await.unwrap();
}
