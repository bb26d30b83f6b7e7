//! Leases on Redis: [`LeaseStore`] for [`RedisCheckpointStore`], each operation validated
//! first, then one script of [`requests`] under the store's timeout, with the store's replica
//! acknowledgement in the same pipeline for those that write. The layout, the clock and the
//! costs are in the crate documentation's "Leases" section.

use std::time::Duration;

use checkpoint_core::door::{Checked, LeaseDoor};
use checkpoint_core::{Acquired, Error, HeldLease, LeaseTable, Operation, Released};
use redis::aio::ConnectionLike;

use crate::requests::LeaseNames;
use crate::{RedisCheckpointStore, layout, requests};

impl<C> RedisCheckpointStore<C> {
    /// The keys of the leases of (group, subscription).
    fn lease_keys(&self, group: &str, subscription: &str) -> layout::LeaseKeys {
        layout::lease_keys(&layout::group_key(self.key_prefix(), group), subscription)
    }
}

impl<C> LeaseDoor for RedisCheckpointStore<C>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    /// One script, `acquire.lua`: the tombstone check, the renew of the owner's leases (read
    /// through its held index) and the grants, on the server's clock.
    async fn send_acquire(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        owner: &str,
        partitions: &[u32],
        duration: Duration,
    ) -> Result<Acquired, Error> {
        let keys = self.lease_keys(group, subscription);
        let names = LeaseNames {
            group,
            subscription,
            owner,
        };
        let ack = self.replica_ack();
        self.on_connection(Operation::Acquire, |mut connection| async move {
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
    async fn send_renew(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        owner: &str,
        duration: Duration,
    ) -> Result<Vec<HeldLease>, Error> {
        let keys = self.lease_keys(group, subscription);
        let names = LeaseNames {
            group,
            subscription,
            owner,
        };
        let ack = self.replica_ack();
        self.on_connection(Operation::Renew, |mut connection| async move {
            let held = requests::renew(&mut connection, &keys, names, duration, ack).await?;
            Ok(held)
        })
        .await
    }

    /// One script, `release.lua`.
    async fn send_release(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        owner: &str,
        partitions: &[u32],
    ) -> Result<Released, Error> {
        let keys = self.lease_keys(group, subscription);
        let names = LeaseNames {
            group,
            subscription,
            owner,
        };
        let ack = self.replica_ack();
        self.on_connection(Operation::Release, |mut connection| async move {
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
    async fn send_leave(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        owner: &str,
    ) -> Result<Vec<u32>, Error> {
        let keys = self.lease_keys(group, subscription);
        let names = LeaseNames {
            group,
            subscription,
            owner,
        };
        let ack = self.replica_ack();
        self.on_connection(Operation::Leave, |mut connection| async move {
            let released = requests::leave(&mut connection, &keys, names, ack).await?;
            tracing::Span::current().record("released", released.len());
            Ok(released)
        })
        .await
    }

    /// One script, `leases.lua` (a read of every lease of the subscription; it also deletes
    /// the heartbeats that expired).
    async fn send_leases(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
    ) -> Result<LeaseTable, Error> {
        let keys = self.lease_keys(group, subscription);
        let names = LeaseNames {
            group,
            subscription,
            owner: "",
        };
        self.on_connection(Operation::Leases, |mut connection| async move {
            let table = requests::leases(&mut connection, &keys, names).await?;
            tracing::Span::current().record("owners", table.owners.len());
            Ok(table)
        })
        .await
    }

    /// One script, `request_handover.lua`.
    async fn send_request_handover(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        requester: &str,
        partitions: &[u32],
    ) -> Result<(), Error> {
        let keys = self.lease_keys(group, subscription);
        let names = LeaseNames {
            group,
            subscription,
            owner: requester,
        };
        let ack = self.replica_ack();
        self.on_connection(Operation::RequestHandover, |mut connection| async move {
            let marked =
                requests::request_handover(&mut connection, &keys, names, partitions, ack).await?;
            tracing::Span::current().record("marked", marked);
            Ok(())
        })
        .await
    }
}
