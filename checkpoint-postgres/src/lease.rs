//! [`LeaseStore`] on PostgreSQL: partition leases in `<table>_leases` and owners' heartbeats in
//! `<table>_owners`, one statement per operation, expiry judged by the server's clock (see
//! the crate doc, "Leases").

use std::time::Duration;

use async_trait::async_trait;
use checkpoint_core::validation::{
    validate_acquire, validate_key, validate_lease_owner, validate_release, validate_renew,
    validate_request_handover,
};
use checkpoint_core::{Acquired, Error, HeldLease, LeaseStore, LeaseTable, Operation, Released};

use crate::BACKEND;
use crate::store::PostgresCheckpointStore;

#[async_trait]
impl LeaseStore for PostgresCheckpointStore {
    /// One statement (`sql/acquire.sql`), run again after a short pause while it refused a
    /// partition only because the expired holder's heartbeat was locked (see the crate doc,
    /// "Leases"). Idempotent (a second attempt finds the leases held and keeps their epochs),
    /// so also run once more on a lost connection.
    #[tracing::instrument(
        name = "checkpoint.acquire",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = %self.table, group = group, subscription = subscription, partitions = partitions.len())
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
        self.on_pool(Operation::Acquire)
            .run_once_more_if_lost(|mut connection| async move {
                let reply = self
                    .requests
                    .acquire(
                        &mut connection,
                        (group, subscription, owner),
                        partitions,
                        duration,
                        self.timeout,
                    )
                    .await;
                (connection, reply)
            })
            .await
    }

    /// One statement (`sql/renew.sql`), whatever the number of leases; run once more on a
    /// lost connection.
    #[tracing::instrument(
        name = "checkpoint.renew",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = %self.table, group = group, subscription = subscription)
    )]
    async fn renew(
        &self,
        group: &str,
        subscription: &str,
        owner: &str,
        duration: Duration,
    ) -> Result<Vec<HeldLease>, Error> {
        validate_renew(group, subscription, owner, duration)?;
        self.on_pool(Operation::Renew)
            .run_once_more_if_lost(|mut connection| async move {
                let reply = self
                    .requests
                    .renew(&mut connection, (group, subscription, owner), duration)
                    .await;
                (connection, reply)
            })
            .await
    }

    /// One statement (`sql/release.sql`). Not run a second time on a lost connection: had the
    /// first attempt committed, the second would report the released partitions as not held.
    #[tracing::instrument(
        name = "checkpoint.release",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = %self.table, group = group, subscription = subscription, partitions = partitions.len())
    )]
    async fn release(
        &self,
        group: &str,
        subscription: &str,
        owner: &str,
        partitions: &[u32],
    ) -> Result<Released, Error> {
        validate_release(group, subscription, owner, partitions)?;
        self.on_pool(Operation::Release)
            .run(|mut connection| async move {
                let reply = self
                    .requests
                    .release(&mut connection, (group, subscription, owner), partitions)
                    .await;
                (connection, reply)
            })
            .await
    }

    /// One statement (`sql/leave.sql`). Not run a second time on a lost connection, as
    /// [`release`](Self::release).
    #[tracing::instrument(
        name = "checkpoint.leave",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = %self.table, group = group, subscription = subscription)
    )]
    async fn leave(&self, group: &str, subscription: &str, owner: &str) -> Result<Vec<u32>, Error> {
        validate_lease_owner(group, subscription, owner)?;
        self.on_pool(Operation::Leave)
            .run(|mut connection| async move {
                let reply = self
                    .requests
                    .leave(&mut connection, (group, subscription, owner))
                    .await;
                (connection, reply)
            })
            .await
    }

    /// One statement (`sql/leases.sql`); run once more on a lost connection.
    #[tracing::instrument(
        name = "checkpoint.leases",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = %self.table, group = group, subscription = subscription, count)
    )]
    async fn leases(&self, group: &str, subscription: &str) -> Result<LeaseTable, Error> {
        validate_key(group, subscription)?;
        self.on_pool(Operation::Leases)
            .run_once_more_if_lost(|mut connection| async move {
                let reply = self
                    .requests
                    .leases(&mut connection, group, subscription)
                    .await;
                (connection, reply)
            })
            .await
    }

    /// One statement (`sql/request_handover.sql`); idempotent, so run once more on a lost
    /// connection.
    #[tracing::instrument(
        name = "checkpoint.request_handover",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = %self.table, group = group, subscription = subscription, partitions = partitions.len())
    )]
    async fn request_handover(
        &self,
        group: &str,
        subscription: &str,
        requester: &str,
        partitions: &[u32],
    ) -> Result<(), Error> {
        validate_request_handover(group, subscription, requester, partitions)?;
        self.on_pool(Operation::RequestHandover)
            .run_once_more_if_lost(|mut connection| async move {
                let reply = self
                    .requests
                    .request_handover(
                        &mut connection,
                        (group, subscription, requester),
                        partitions,
                    )
                    .await;
                (connection, reply)
            })
            .await
    }
}
