//! A worker's view of the shared in-memory store, with the faults a history injects: requests
//! that hang until woken (a paused worker, a zombie), that fail for a while (`Backend` or
//! `Timeout` errors), that are slow (virtual latency each way, so that a reply can arrive
//! well after the store executed the request), that lag for a while (more latency, beyond the
//! renew interval), and checkpoint writes that are slow or hang (beyond the drain timeout).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use checkpoint_core::{
    Acquired, Checkpoint, CheckpointStore, Error, HeldLease, InMemoryCheckpointStore, LeaseStore,
    LeaseTable, Operation, Released,
};
use tokio::sync::watch;
use tokio::time::Instant;

use super::record::{Record, Release, Save};

/// The faults of one worker's store, switched by the history.
#[derive(Debug)]
pub struct Faults {
    /// Virtual latency of a request, and again of its reply.
    latency_ms: AtomicU64,
    /// More latency each way, while the worker's store lags.
    lag_ms: AtomicU64,
    /// Virtual time a checkpoint write (`save`, `save_all`) takes on top.
    write_latency_ms: AtomicU64,
    /// Until when requests fail, and whether as `Timeout` (else `Backend`).
    failing: Mutex<Option<(Instant, bool)>>,
    /// How many errors were injected so far.
    injected: AtomicU64,
    /// Requests wait while this is true.
    paused: watch::Sender<bool>,
}

impl Default for Faults {
    fn default() -> Self {
        Self {
            latency_ms: AtomicU64::new(0),
            lag_ms: AtomicU64::new(0),
            write_latency_ms: AtomicU64::new(0),
            failing: Mutex::new(None),
            injected: AtomicU64::new(0),
            paused: watch::Sender::new(false),
        }
    }
}

impl Faults {
    pub fn set_latency(&self, latency: Duration) {
        let ms = u64::try_from(latency.as_millis()).unwrap_or(u64::MAX);
        self.latency_ms.store(ms, Ordering::Relaxed);
    }

    /// Every request (and its reply) takes `lag` more, until set back to zero.
    pub fn set_lag(&self, lag: Duration) {
        let ms = u64::try_from(lag.as_millis()).unwrap_or(u64::MAX);
        self.lag_ms.store(ms, Ordering::Relaxed);
    }

    /// Every checkpoint write takes `latency` more.
    pub fn set_write_latency(&self, latency: Duration) {
        let ms = u64::try_from(latency.as_millis()).unwrap_or(u64::MAX);
        self.write_latency_ms.store(ms, Ordering::Relaxed);
    }

    /// How long a checkpoint write takes now, there and back.
    pub fn write_ms(&self) -> u64 {
        let each_way =
            self.latency_ms.load(Ordering::Relaxed) + self.lag_ms.load(Ordering::Relaxed);
        2 * each_way + self.write_latency_ms.load(Ordering::Relaxed)
    }

    /// Every request fails until `until`.
    pub fn fail_until(&self, until: Instant, timeout: bool) {
        *self.failing.lock().unwrap_or_else(PoisonError::into_inner) = Some((until, timeout));
    }

    /// Requests hang (`true`) or go through again (`false`).
    pub fn pause(&self, paused: bool) {
        self.paused.send_replace(paused);
    }

    pub fn injected(&self) -> u64 {
        self.injected.load(Ordering::Relaxed)
    }

    async fn latency(&self) {
        let ms = self.latency_ms.load(Ordering::Relaxed) + self.lag_ms.load(Ordering::Relaxed);
        if ms > 0 {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
    }

    /// The injected error for `operation` now, if the store is failing.
    fn error(&self, operation: Operation) -> Option<Error> {
        let failing = *self.failing.lock().unwrap_or_else(PoisonError::into_inner);
        let (_, timeout) = failing.filter(|(until, _)| Instant::now() < *until)?;
        self.injected.fetch_add(1, Ordering::Relaxed);
        Some(if timeout {
            Error::Timeout {
                backend: "model",
                operation,
                after: Duration::from_millis(1),
            }
        } else {
            Error::backend("model", operation, true, "injected by the model")
        })
    }
}

/// The store one worker (and its committer) talks to.
pub struct FaultyStore {
    inner: Arc<InMemoryCheckpointStore>,
    faults: Arc<Faults>,
    worker: usize,
    record: Arc<Record>,
}

impl FaultyStore {
    pub fn new(
        inner: Arc<InMemoryCheckpointStore>,
        faults: Arc<Faults>,
        worker: usize,
        record: Arc<Record>,
    ) -> Self {
        Self {
            inner,
            faults,
            worker,
            record,
        }
    }

    /// Before the store executes a request: wait while paused, the request's latency, then
    /// the injected error if failing.
    async fn send(&self, operation: Operation) -> Result<(), Error> {
        let mut paused = self.faults.paused.subscribe();
        let _ = paused.wait_for(|paused| !paused).await;
        self.faults.latency().await;
        match self.faults.error(operation) {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    /// A checkpoint write's own latency, before the store executes it.
    async fn write(&self) {
        let ms = self.faults.write_latency_ms.load(Ordering::Relaxed);
        if ms > 0 {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
    }

    /// After the store executed it: the reply's latency.
    async fn reply<T>(&self, result: T) -> T {
        self.faults.latency().await;
        result
    }

    fn record_saves(&self, saved: &[(u32, u64)]) {
        let at = Instant::now();
        let mut events = self.record.lock();
        for &(partition, position) in saved {
            events.saves.push(Save {
                partition,
                position,
                at,
            });
        }
    }
}

#[async_trait]
impl CheckpointStore for FaultyStore {
    async fn list(&self, group: &str) -> Result<Vec<Checkpoint>, Error> {
        self.send(Operation::List).await?;
        let result = self.inner.list(group).await;
        self.reply(result).await
    }

    async fn load(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> Result<Option<u64>, Error> {
        self.send(Operation::Load).await?;
        let result = self.inner.load(group, subscription, partition).await;
        self.reply(result).await
    }

    async fn save(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<(), Error> {
        self.send(Operation::Save).await?;
        self.write().await;
        let result = self
            .inner
            .save(group, subscription, partition, position)
            .await;
        if result.is_ok() {
            self.record_saves(&[(partition, position)]);
        }
        self.reply(result).await
    }

    async fn save_all(&self, group: &str, checkpoints: &[Checkpoint]) -> Result<(), Error> {
        self.send(Operation::SaveAll).await?;
        self.write().await;
        let result = self.inner.save_all(group, checkpoints).await;
        if result.is_ok() {
            let saved: Vec<(u32, u64)> = checkpoints
                .iter()
                .map(|checkpoint| (checkpoint.partition, checkpoint.position))
                .collect();
            self.record_saves(&saved);
        }
        self.reply(result).await
    }
}

#[async_trait]
impl LeaseStore for FaultyStore {
    async fn acquire(
        &self,
        group: &str,
        subscription: &str,
        owner: &str,
        partitions: &[u32],
        duration: Duration,
    ) -> Result<Acquired, Error> {
        self.send(Operation::Acquire).await?;
        let result = self
            .inner
            .acquire(group, subscription, owner, partitions, duration)
            .await;
        self.reply(result).await
    }

    async fn renew(
        &self,
        group: &str,
        subscription: &str,
        owner: &str,
        duration: Duration,
    ) -> Result<Vec<HeldLease>, Error> {
        self.send(Operation::Renew).await?;
        let result = self.inner.renew(group, subscription, owner, duration).await;
        self.reply(result).await
    }

    async fn release(
        &self,
        group: &str,
        subscription: &str,
        owner: &str,
        partitions: &[u32],
    ) -> Result<Released, Error> {
        self.send(Operation::Release).await?;
        let result = self
            .inner
            .release(group, subscription, owner, partitions)
            .await;
        if let Ok(released) = &result {
            let (at, injected) = (Instant::now(), self.faults.injected());
            let mut events = self.record.lock();
            for &partition in &released.released {
                events.releases.push(Release {
                    worker: self.worker,
                    partition,
                    at,
                    injected,
                    write_ms: self.faults.write_ms(),
                });
            }
        }
        self.reply(result).await
    }

    async fn leave(&self, group: &str, subscription: &str, owner: &str) -> Result<Vec<u32>, Error> {
        self.send(Operation::Leave).await?;
        let result = self.inner.leave(group, subscription, owner).await;
        self.reply(result).await
    }

    async fn leases(&self, group: &str, subscription: &str) -> Result<LeaseTable, Error> {
        self.send(Operation::Leases).await?;
        let result = self.inner.leases(group, subscription).await;
        self.reply(result).await
    }

    async fn request_handover(
        &self,
        group: &str,
        subscription: &str,
        requester: &str,
        partitions: &[u32],
    ) -> Result<(), Error> {
        self.send(Operation::RequestHandover).await?;
        let result = self
            .inner
            .request_handover(group, subscription, requester, partitions)
            .await;
        self.reply(result).await
    }
}
