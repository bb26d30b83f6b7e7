//! What the tests share: a log filled in advance, a handler that records what it ran, a store
//! whose renewals can be made to hang, and waiting with a deadline.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use checkpoint_core::InMemoryCheckpointStore;
use checkpoint_core::door::BoxFuture;
use checkpoint_core::layer::{Around, Call, Layered};
use checkpoint_core::source::{Entry, InMemorySource};
use checkpoint_subscription::{Handler, HandlerResult};
use tokio::time::Instant;

/// A source of `partitions` partitions with `per_partition` entries each, positions from 1.
pub fn filled_source(partitions: u32, per_partition: u64) -> Arc<InMemorySource> {
    let source = Arc::new(InMemorySource::new(partitions));
    for n in 0..per_partition {
        for partition in 0..partitions {
            source
                .append(partition, format!("{partition}/{n}").into_bytes())
                .expect("a partition of the source");
        }
    }
    source
}

/// What a recording handler saw: how many times each (partition, position) ran, and the most
/// runs at once.
#[derive(Debug, Default)]
pub struct Record {
    pub runs: Mutex<BTreeMap<(u32, u64), u32>>,
    running: AtomicUsize,
    pub most_at_once: AtomicUsize,
}

impl Record {
    pub fn runs(&self) -> BTreeMap<(u32, u64), u32> {
        self.runs.lock().expect("not poisoned").clone()
    }

    pub fn total(&self) -> usize {
        self.runs.lock().expect("not poisoned").len()
    }

    /// Counts a run of `entry` while `work` runs.
    pub async fn run<F: Future<Output = HandlerResult>>(
        &self,
        entry: &Entry,
        work: F,
    ) -> HandlerResult {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_at_once.fetch_max(now, Ordering::SeqCst);
        let result = work.await;
        self.running.fetch_sub(1, Ordering::SeqCst);
        if result.is_ok() {
            *self
                .runs
                .lock()
                .expect("not poisoned")
                .entry((partition_of(entry), entry.position))
                .or_default() += 1;
        }
        result
    }
}

/// The partition an entry of [`filled_source`] was appended to (its payload says).
pub fn partition_of(entry: &Entry) -> u32 {
    let text = std::str::from_utf8(&entry.payload).expect("UTF-8 payload");
    text.split('/')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("a payload of filled_source")
}

/// A handler that records each run and sleeps in it between one and five times `pause`,
/// varying with the position, so that entries finish out of order.
pub fn recording(record: &Arc<Record>, pause: Duration) -> impl Handler + use<> {
    let record = Arc::clone(record);
    move |entry: Arc<Entry>| {
        let record = Arc::clone(&record);
        let times = 1 + (entry.position.wrapping_mul(7919) % 5) as u32;
        async move {
            record
                .run(&entry, async {
                    tokio::time::sleep(pause * times).await;
                    Ok(())
                })
                .await
        }
    }
}

/// Waits until `done` holds, checking every 5 ms, failing the test after `limit`.
pub async fn eventually(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "not within {limit:?}: {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The in-memory store, whose lease renewals hang (never answer) while its [`Hang`] is set.
pub type HangingStore = Layered<Arc<InMemoryCheckpointStore>, Hang>;

/// A client of `inner` of its own (its own [`Hang`]).
pub fn hanging_over(inner: &Arc<InMemoryCheckpointStore>) -> HangingStore {
    Layered::new(Arc::clone(inner), Hang::default())
}

/// While `hang` is set, acquires, renews and reads of the lease table never answer.
#[derive(Debug, Default)]
pub struct Hang {
    pub hang: AtomicBool,
}

impl Around for Hang {
    fn around<'a, T: Send + 'static>(
        &'a self,
        call: Call<'a>,
        request: BoxFuture<'a, T>,
    ) -> BoxFuture<'a, T> {
        if !matches!(
            call,
            Call::Acquire { .. } | Call::Renew { .. } | Call::Leases { .. }
        ) {
            return request;
        }
        Box::pin(async move {
            if self.hang.load(Ordering::SeqCst) {
                std::future::pending::<()>().await;
            }
            request.await
        })
    }
}
