//! A store whose checkpoint writes are slow (`--write-delay-ms`): a worker process's store as
//! a loaded server would be for its committer, while its lease requests go at the server's
//! own pace. It shows that a slow final write or periodic write never costs a worker its
//! leases: the renew goes out on its own cadence.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use checkpoint_core::{
    Acquired, Checkpoint, CheckpointStore, Error, HeldLease, LeaseStore, LeaseTable, Released,
};
use checkpoint_examples::ExampleStore;

/// Every call passed to `store` unchanged, `save` and `save_all` after `delay` (none when it
/// is zero).
pub struct SlowWrites {
    store: Arc<dyn ExampleStore>,
    delay: Duration,
    /// Writes slowed so far: the worker reports them at exit, so that a run shows the delay
    /// was applied.
    slowed: AtomicU64,
}

impl SlowWrites {
    pub fn new(store: Arc<dyn ExampleStore>, delay: Duration) -> Self {
        Self {
            store,
            delay,
            slowed: AtomicU64::new(0),
        }
    }

    /// Writes slowed so far.
    pub fn slowed(&self) -> u64 {
        self.slowed.load(Ordering::Relaxed)
    }

    async fn pause(&self) {
        if self.delay.is_zero() {
            return;
        }
        self.slowed.fetch_add(1, Ordering::Relaxed);
        tokio::time::sleep(self.delay).await;
    }
}

#[async_trait]
impl CheckpointStore for SlowWrites {
    async fn list(&self, group: &str) -> Result<Vec<Checkpoint>, Error> {
        self.store.list(group).await
    }

    async fn load(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> Result<Option<u64>, Error> {
        self.store.load(group, subscription, partition).await
    }

    async fn save(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<(), Error> {
        self.pause().await;
        self.store
            .save(group, subscription, partition, position)
            .await
    }

    async fn save_all(&self, group: &str, checkpoints: &[Checkpoint]) -> Result<(), Error> {
        self.pause().await;
        self.store.save_all(group, checkpoints).await
    }
}

#[async_trait]
impl LeaseStore for SlowWrites {
    async fn acquire(
        &self,
        group: &str,
        subscription: &str,
        owner: &str,
        partitions: &[u32],
        duration: Duration,
    ) -> Result<Acquired, Error> {
        self.store
            .acquire(group, subscription, owner, partitions, duration)
            .await
    }

    async fn renew(
        &self,
        group: &str,
        subscription: &str,
        owner: &str,
        duration: Duration,
    ) -> Result<Vec<HeldLease>, Error> {
        self.store.renew(group, subscription, owner, duration).await
    }

    async fn release(
        &self,
        group: &str,
        subscription: &str,
        owner: &str,
        partitions: &[u32],
    ) -> Result<Released, Error> {
        self.store
            .release(group, subscription, owner, partitions)
            .await
    }

    async fn leave(&self, group: &str, subscription: &str, owner: &str) -> Result<Vec<u32>, Error> {
        self.store.leave(group, subscription, owner).await
    }

    async fn leases(&self, group: &str, subscription: &str) -> Result<LeaseTable, Error> {
        self.store.leases(group, subscription).await
    }

    async fn request_handover(
        &self,
        group: &str,
        subscription: &str,
        requester: &str,
        partitions: &[u32],
    ) -> Result<(), Error> {
        self.store
            .request_handover(group, subscription, requester, partitions)
            .await
    }
}
