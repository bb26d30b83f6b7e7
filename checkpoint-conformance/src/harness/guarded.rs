//! A store that keeps something alive for as long as it is used.

use async_trait::async_trait;
use std::time::Duration;

use checkpoint_core::parked::{ParkedEntry, ParkedStore};
use checkpoint_core::{
    Acquired, Checkpoint, CheckpointAdmin, CheckpointStore, Error, ExclusiveCheckpointStore,
    Fingerprint, HeldLease, LeaseStore, LeaseTable, Released,
};

/// A store under test together with what it needs kept alive (a temporary directory, a server
/// started for it), which goes only after the store: every call of the store traits is passed
/// to `store` unchanged.
#[derive(Debug)]
pub struct Guarded<S, G> {
    /// The store every call goes to.
    pub store: S,
    // Dropped after `store`: the guard goes once nothing uses it any more.
    guard: G,
}

impl<S, G> Guarded<S, G> {
    /// `store`, keeping `guard` alive until it is dropped itself.
    pub fn new(store: S, guard: G) -> Self {
        Self { store, guard }
    }

    /// What is kept alive.
    pub fn guard(&self) -> &G {
        &self.guard
    }
}

#[async_trait]
impl<S: CheckpointStore, G: Send + Sync> CheckpointStore for Guarded<S, G> {
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
        self.store
            .save(group, subscription, partition, position)
            .await
    }
    async fn save_all(&self, group: &str, checkpoints: &[Checkpoint]) -> Result<(), Error> {
        self.store.save_all(group, checkpoints).await
    }
}

#[async_trait]
impl<S: ExclusiveCheckpointStore, G: Send + Sync> ExclusiveCheckpointStore for Guarded<S, G> {
    async fn claim(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        fingerprint: Fingerprint,
        initial_position: u64,
    ) -> Result<u64, Error> {
        self.store
            .claim(
                group,
                subscription,
                partition,
                fingerprint,
                initial_position,
            )
            .await
    }
    async fn advance(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
    ) -> Result<(), Error> {
        self.store
            .advance(group, subscription, partition, from, to)
            .await
    }
}

#[async_trait]
impl<S: CheckpointAdmin, G: Send + Sync> CheckpointAdmin for Guarded<S, G> {
    async fn groups(&self) -> Result<Vec<String>, Error> {
        self.store.groups().await
    }
    async fn start_at(
        &self,
        group: &str,
        subscription: &str,
        positions: &[(u32, u64)],
    ) -> Result<(), Error> {
        self.store.start_at(group, subscription, positions).await
    }
    async fn retire(&self, group: &str, subscription: &str) -> Result<(), Error> {
        self.store.retire(group, subscription).await
    }
    async fn retired(&self, group: &str) -> Result<Vec<String>, Error> {
        self.store.retired(group).await
    }
    async fn purge(&self, group: &str, subscription: &str) -> Result<(), Error> {
        self.store.purge(group, subscription).await
    }
}

#[async_trait]
impl<S: LeaseStore, G: Send + Sync> LeaseStore for Guarded<S, G> {
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

#[async_trait]
impl<S: ParkedStore, G: Send + Sync> ParkedStore for Guarded<S, G> {
    async fn park(&self, group: &str, entry: &ParkedEntry) -> Result<(), Error> {
        self.store.park(group, entry).await
    }

    async fn parked(&self, group: &str) -> Result<Vec<ParkedEntry>, Error> {
        self.store.parked(group).await
    }

    async fn retry_parked(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<bool, Error> {
        self.store
            .retry_parked(group, subscription, partition, position)
            .await
    }

    async fn unpark(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<bool, Error> {
        self.store
            .unpark(group, subscription, partition, position)
            .await
    }
}
