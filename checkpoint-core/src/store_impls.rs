//! The traits for shared and boxed stores, so `Arc<dyn CheckpointStore>`, `Box<S>` and `&S`
//! can be passed wherever a store is expected.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use crate::{
    Acquired, Checkpoint, CheckpointAdmin, CheckpointStore, Error, ExclusiveCheckpointStore,
    Fingerprint, HeldLease, LeaseStore, LeaseTable, Released,
};

macro_rules! forward_store {
    ($($pointer:ty),*) => {$(
        #[async_trait]
        impl<S: CheckpointStore + ?Sized> CheckpointStore for $pointer {
            async fn list(&self, group: &str) -> Result<Vec<Checkpoint>, Error> {
                (**self).list(group).await
            }
            async fn load(&self, group: &str, subscription: &str, partition: u32)
                -> Result<Option<u64>, Error> {
                (**self).load(group, subscription, partition).await
            }
            async fn save(&self, group: &str, subscription: &str, partition: u32, position: u64)
                -> Result<(), Error> {
                (**self).save(group, subscription, partition, position).await
            }
            async fn save_all(&self, group: &str, checkpoints: &[Checkpoint]) -> Result<(), Error> {
                (**self).save_all(group, checkpoints).await
            }
        }

        #[async_trait]
        impl<S: ExclusiveCheckpointStore + ?Sized> ExclusiveCheckpointStore for $pointer {
            async fn claim(&self, group: &str, subscription: &str, partition: u32,
                fingerprint: Fingerprint, initial_position: u64) -> Result<u64, Error> {
                (**self).claim(group, subscription, partition, fingerprint, initial_position).await
            }
            async fn advance(&self, group: &str, subscription: &str, partition: u32,
                from: u64, to: u64) -> Result<(), Error> {
                (**self).advance(group, subscription, partition, from, to).await
            }
        }

        #[async_trait]
        impl<S: CheckpointAdmin + ?Sized> CheckpointAdmin for $pointer {
            async fn groups(&self) -> Result<Vec<String>, Error> {
                (**self).groups().await
            }
            async fn start_at(&self, group: &str, subscription: &str, positions: &[(u32, u64)])
                -> Result<(), Error> {
                (**self).start_at(group, subscription, positions).await
            }
            async fn retire(&self, group: &str, subscription: &str) -> Result<(), Error> {
                (**self).retire(group, subscription).await
            }
            async fn retired(&self, group: &str) -> Result<Vec<String>, Error> {
                (**self).retired(group).await
            }
            async fn purge(&self, group: &str, subscription: &str) -> Result<(), Error> {
                (**self).purge(group, subscription).await
            }
        }

        #[async_trait]
        impl<S: LeaseStore + ?Sized> LeaseStore for $pointer {
            async fn acquire(&self, group: &str, subscription: &str, owner: &str,
                partitions: &[u32], duration: Duration) -> Result<Acquired, Error> {
                (**self).acquire(group, subscription, owner, partitions, duration).await
            }
            async fn renew(&self, group: &str, subscription: &str, owner: &str,
                duration: Duration) -> Result<Vec<HeldLease>, Error> {
                (**self).renew(group, subscription, owner, duration).await
            }
            async fn release(&self, group: &str, subscription: &str, owner: &str,
                partitions: &[u32]) -> Result<Released, Error> {
                (**self).release(group, subscription, owner, partitions).await
            }
            async fn leave(&self, group: &str, subscription: &str, owner: &str)
                -> Result<Vec<u32>, Error> {
                (**self).leave(group, subscription, owner).await
            }
            async fn leases(&self, group: &str, subscription: &str) -> Result<LeaseTable, Error> {
                (**self).leases(group, subscription).await
            }
            async fn request_handover(&self, group: &str, subscription: &str, requester: &str,
                partitions: &[u32]) -> Result<(), Error> {
                (**self).request_handover(group, subscription, requester, partitions).await
            }
        }
    )*};
}

forward_store!(Arc<S>, Box<S>, &S);
