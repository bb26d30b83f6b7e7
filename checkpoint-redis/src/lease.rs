//! Leases on Redis: [`LeaseStore`] for [`RedisCheckpointStore`], each operation validated
//! first, then one script of [`requests`] under the store's timeout, with the store's replica
//! acknowledgement in the same pipeline for those that write. The layout, the clock and the
//! costs are in the crate documentation's "Leases" section.

use std::time::Duration;

use async_trait::async_trait;
use checkpoint_core::validation::{
    validate_acquire, validate_key, validate_lease_owner, validate_release, validate_renew,
    validate_request_handover,
};
use checkpoint_core::{Acquired, Error, HeldLease, LeaseStore, LeaseTable, Operation, Released};
use redis::aio::ConnectionLike;

use crate::requests::LeaseNames;
use crate::{BACKEND, RedisCheckpointStore, layout, requests};

impl<C> RedisCheckpointStore<C> {
    /// The keys of the leases of (group, subscription).
    fn lease_keys(&self, group: &str, subscription: &str) -> layout::LeaseKeys {
        layout::lease_keys(&layout::group_key(self.key_prefix(), group), subscription)
    }
}

#[async_trait]
impl<C> LeaseStore for RedisCheckpointStore<C>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    /// One script, `acquire.lua`: the tombstone check, the renew of the owner's leases (read
    /// through its held index) and the grants, on the server's clock.
    #[tracing::instrument(
        name = "checkpoint.acquire",
        level = "debug",
        skip_all,
        fields(
            backend = BACKEND,
            group = group,
            subscription = subscription,
            partitions = partitions.len(),
            granted,
            refused,
        )
    )]
    async fn acquire(
        &self,
        group: &str,
        subscription: &str,
        owner: &str,
        partitions: &[u32],
        duration: Duration,
    ) -> Result<Acquired, Error> {
        validate_acquire(group, subscription, owner, partitions, duration)?;
        let keys = self.lease_keys(group, subscription);
        let names = LeaseNames {
            group,
            subscription,
            owner,
        };
        let ack = self.replica_ack();
        self.timed(Operation::Acquire, |mut connection| async move {
            let acquired =
                requests::acquire(&mut connection, &keys, names, partitions, duration, ack).await?;
            let span = tracing::Span::current();
            span.record("granted", acquired.granted.len());
            span.record("refused", acquired.refused.len());
            Ok(acquired)
        })
        .await
    }

    /// One script, `renew.lua`, whatever the number of the owner's leases.
    #[tracing::instrument(
        name = "checkpoint.renew",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, group = group, subscription = subscription, found)
    )]
    async fn renew(
        &self,
        group: &str,
        subscription: &str,
        owner: &str,
        duration: Duration,
    ) -> Result<Vec<HeldLease>, Error> {
        validate_renew(group, subscription, owner, duration)?;
        let keys = self.lease_keys(group, subscription);
        let names = LeaseNames {
            group,
            subscription,
            owner,
        };
        let ack = self.replica_ack();
        self.timed(Operation::Renew, |mut connection| async move {
            let held = requests::renew(&mut connection, &keys, names, duration, ack).await?;
            tracing::Span::current().record("found", held.len());
            Ok(held)
        })
        .await
    }

    /// One script, `release.lua`.
    #[tracing::instrument(
        name = "checkpoint.release",
        level = "debug",
        skip_all,
        fields(
            backend = BACKEND,
            group = group,
            subscription = subscription,
            partitions = partitions.len(),
            released,
        )
    )]
    async fn release(
        &self,
        group: &str,
        subscription: &str,
        owner: &str,
        partitions: &[u32],
    ) -> Result<Released, Error> {
        validate_release(group, subscription, owner, partitions)?;
        let keys = self.lease_keys(group, subscription);
        let names = LeaseNames {
            group,
            subscription,
            owner,
        };
        let ack = self.replica_ack();
        self.timed(Operation::Release, |mut connection| async move {
            let released =
                requests::release(&mut connection, &keys, names, partitions, ack).await?;
            tracing::Span::current().record("released", released.len());
            let mut not_held: Vec<u32> = partitions
                .iter()
                .copied()
                .filter(|partition| released.binary_search(partition).is_err())
                .collect();
            not_held.sort_unstable();
            Ok(Released { released, not_held })
        })
        .await
    }

    /// One script, `leave.lua`.
    #[tracing::instrument(
        name = "checkpoint.leave",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, group = group, subscription = subscription, released)
    )]
    async fn leave(&self, group: &str, subscription: &str, owner: &str) -> Result<Vec<u32>, Error> {
        validate_lease_owner(group, subscription, owner)?;
        let keys = self.lease_keys(group, subscription);
        let names = LeaseNames {
            group,
            subscription,
            owner,
        };
        let ack = self.replica_ack();
        self.timed(Operation::Leave, |mut connection| async move {
            let released = requests::leave(&mut connection, &keys, names, ack).await?;
            tracing::Span::current().record("released", released.len());
            Ok(released)
        })
        .await
    }

    /// One script, `leases.lua` (a read of every lease of the subscription; it also deletes
    /// the heartbeats that expired).
    #[tracing::instrument(
        name = "checkpoint.leases",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, group = group, subscription = subscription, found, owners)
    )]
    async fn leases(&self, group: &str, subscription: &str) -> Result<LeaseTable, Error> {
        validate_key(group, subscription)?;
        let keys = self.lease_keys(group, subscription);
        let names = LeaseNames {
            group,
            subscription,
            owner: "",
        };
        self.timed(Operation::Leases, |mut connection| async move {
            let table = requests::leases(&mut connection, &keys, names).await?;
            let span = tracing::Span::current();
            span.record("found", table.leases.len());
            span.record("owners", table.owners.len());
            Ok(table)
        })
        .await
    }

    /// One script, `request_handover.lua`.
    #[tracing::instrument(
        name = "checkpoint.request_handover",
        level = "debug",
        skip_all,
        fields(
            backend = BACKEND,
            group = group,
            subscription = subscription,
            partitions = partitions.len(),
            marked,
        )
    )]
    async fn request_handover(
        &self,
        group: &str,
        subscription: &str,
        requester: &str,
        partitions: &[u32],
    ) -> Result<(), Error> {
        validate_request_handover(group, subscription, requester, partitions)?;
        let keys = self.lease_keys(group, subscription);
        let names = LeaseNames {
            group,
            subscription,
            owner: requester,
        };
        let ack = self.replica_ack();
        self.timed(Operation::RequestHandover, |mut connection| async move {
            let marked =
                requests::request_handover(&mut connection, &keys, names, partitions, ack).await?;
            tracing::Span::current().record("marked", marked);
            Ok(())
        })
        .await
    }
}
