//! [`LeaseStore`] on SQLite: partition leases in `<table>_leases` and owners' heartbeats in
//! `<table>_lease_owners` (see the crate doc, "Leases").
//!
//! Each operation is one transaction (`requests/lease.rs`), its expiries judged by SQLite's
//! clock read once inside it: the host's one clock, whatever process calls.

use std::time::Duration;

use async_trait::async_trait;
use checkpoint_core::lease::{Acquired, HeldLease, LeaseStore, LeaseTable, Released};
use checkpoint_core::validation::{
    validate_acquire, validate_key, validate_lease_owner, validate_release, validate_renew,
    validate_request_handover,
};
use checkpoint_core::{Error, Operation};

use crate::BACKEND;
use crate::layout::duration_ms;
use crate::requests::LeaseKey;
use crate::store::SqliteCheckpointStore;

fn key<'a>(group: &'a str, subscription: &'a str, owner: &'a str) -> LeaseKey<'a> {
    LeaseKey {
        group,
        subscription,
        owner,
    }
}

#[async_trait]
impl LeaseStore for SqliteCheckpointStore {
    #[tracing::instrument(
        name = "checkpoint.acquire",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = self.table(), group = group, subscription = subscription, partitions = partitions.len(), count)
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
        let acquired = self
            .pooled(Operation::Acquire, |mut connection| async move {
                let key = key(group, subscription, owner);
                self.requests
                    .acquire(&mut connection, key, partitions, duration_ms(duration))
                    .await
            })
            .await?;
        tracing::Span::current().record("count", acquired.granted.len());
        Ok(acquired)
    }

    #[tracing::instrument(
        name = "checkpoint.renew",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = self.table(), group = group, subscription = subscription, count)
    )]
    async fn renew(
        &self,
        group: &str,
        subscription: &str,
        owner: &str,
        duration: Duration,
    ) -> Result<Vec<HeldLease>, Error> {
        validate_renew(group, subscription, owner, duration)?;
        let held = self
            .pooled(Operation::Renew, |mut connection| async move {
                let key = key(group, subscription, owner);
                self.requests
                    .renew(&mut connection, key, duration_ms(duration))
                    .await
            })
            .await?;
        tracing::Span::current().record("count", held.len());
        Ok(held)
    }

    #[tracing::instrument(
        name = "checkpoint.release",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = self.table(), group = group, subscription = subscription, partitions = partitions.len(), count)
    )]
    async fn release(
        &self,
        group: &str,
        subscription: &str,
        owner: &str,
        partitions: &[u32],
    ) -> Result<Released, Error> {
        validate_release(group, subscription, owner, partitions)?;
        let released = self
            .pooled(Operation::Release, |mut connection| async move {
                let key = key(group, subscription, owner);
                self.requests
                    .release(&mut connection, key, partitions)
                    .await
            })
            .await?;
        tracing::Span::current().record("count", released.released.len());
        Ok(released)
    }

    #[tracing::instrument(
        name = "checkpoint.leave",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = self.table(), group = group, subscription = subscription, count)
    )]
    async fn leave(&self, group: &str, subscription: &str, owner: &str) -> Result<Vec<u32>, Error> {
        validate_lease_owner(group, subscription, owner)?;
        let released = self
            .pooled(Operation::Leave, |mut connection| async move {
                let key = key(group, subscription, owner);
                self.requests.leave(&mut connection, key).await
            })
            .await?;
        tracing::Span::current().record("count", released.len());
        Ok(released)
    }

    #[tracing::instrument(
        name = "checkpoint.leases",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = self.table(), group = group, subscription = subscription, count)
    )]
    async fn leases(&self, group: &str, subscription: &str) -> Result<LeaseTable, Error> {
        validate_key(group, subscription)?;
        let table = self
            .pooled(Operation::Leases, |mut connection| async move {
                self.requests
                    .leases(&mut connection, group, subscription)
                    .await
            })
            .await?;
        tracing::Span::current().record("count", table.leases.len());
        Ok(table)
    }

    #[tracing::instrument(
        name = "checkpoint.request_handover",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = self.table(), group = group, subscription = subscription, partitions = partitions.len())
    )]
    async fn request_handover(
        &self,
        group: &str,
        subscription: &str,
        requester: &str,
        partitions: &[u32],
    ) -> Result<(), Error> {
        validate_request_handover(group, subscription, requester, partitions)?;
        self.pooled(Operation::RequestHandover, |mut connection| async move {
            let key = key(group, subscription, requester);
            self.requests
                .request_handover(&mut connection, key, partitions)
                .await
        })
        .await
    }
}
