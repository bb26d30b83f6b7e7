//! What the tests share: a log filled in advance, a handler that records what it ran, a store
//! whose renewals can be made to hang, and waiting with a deadline.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use checkpoint_core::source::{Entry, InMemorySource};
use checkpoint_core::{
    Acquired, Checkpoint, CheckpointStore, Error, HeldLease, InMemoryCheckpointStore, LeaseStore,
    LeaseTable, Released,
};
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

/// The in-memory store, whose lease renewals hang (never answer) while `hang` is set.
#[derive(Debug, Default)]
pub struct HangingStore {
    pub inner: Arc<InMemoryCheckpointStore>,
    pub hang: AtomicBool,
}

impl HangingStore {
    /// A client of `inner` of its own (its own `hang`).
    pub fn over(inner: &Arc<InMemoryCheckpointStore>) -> Self {
        Self {
            inner: Arc::clone(inner),
            hang: AtomicBool::new(false),
        }
    }
}

#[async_trait]
impl CheckpointStore for HangingStore {
    async fn list(&self, group: &str) -> Result<Vec<Checkpoint>, Error> {
        self.inner.list(group).await
    }
    async fn load(&self, group: &str, sub: &str, partition: u32) -> Result<Option<u64>, Error> {
        self.inner.load(group, sub, partition).await
    }
    async fn save(&self, group: &str, sub: &str, partition: u32, at: u64) -> Result<(), Error> {
        self.inner.save(group, sub, partition, at).await
    }
    async fn save_all(&self, group: &str, checkpoints: &[Checkpoint]) -> Result<(), Error> {
        self.inner.save_all(group, checkpoints).await
    }
}

#[async_trait]
impl LeaseStore for HangingStore {
    async fn acquire(
        &self,
        group: &str,
        sub: &str,
        owner: &str,
        partitions: &[u32],
        duration: Duration,
    ) -> Result<Acquired, Error> {
        self.hang_if_asked().await;
        self.inner
            .acquire(group, sub, owner, partitions, duration)
            .await
    }
    async fn renew(
        &self,
        group: &str,
        sub: &str,
        owner: &str,
        duration: Duration,
    ) -> Result<Vec<HeldLease>, Error> {
        self.hang_if_asked().await;
        self.inner.renew(group, sub, owner, duration).await
    }
    async fn release(
        &self,
        group: &str,
        sub: &str,
        owner: &str,
        partitions: &[u32],
    ) -> Result<Released, Error> {
        self.inner.release(group, sub, owner, partitions).await
    }
    async fn leave(&self, group: &str, sub: &str, owner: &str) -> Result<Vec<u32>, Error> {
        self.inner.leave(group, sub, owner).await
    }
    async fn leases(&self, group: &str, sub: &str) -> Result<LeaseTable, Error> {
        self.hang_if_asked().await;
        self.inner.leases(group, sub).await
    }
    async fn request_handover(
        &self,
        group: &str,
        sub: &str,
        requester: &str,
        partitions: &[u32],
    ) -> Result<(), Error> {
        self.inner
            .request_handover(group, sub, requester, partitions)
            .await
    }
}

impl HangingStore {
    async fn hang_if_asked(&self) {
        if self.hang.load(Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
    }
}
