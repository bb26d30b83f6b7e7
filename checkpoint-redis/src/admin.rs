//! The operations API on Redis: [`CheckpointAdmin`] for [`RedisCheckpointStore`], each
//! operation validated first, then one request of [`requests`] under the store's timeout, with
//! the store's replica acknowledgement in the same pipeline for those that write (`retire`,
//! `start_at`, `purge`). The tombstones and their cost are in the crate documentation.

use async_trait::async_trait;
use checkpoint_core::validation::{validate_group, validate_key, validate_start_at};
use checkpoint_core::{CheckpointAdmin, Error, Operation};
use redis::aio::ConnectionLike;

use crate::{BACKEND, RedisCheckpointStore, layout, requests};

#[async_trait]
impl<C> CheckpointAdmin for RedisCheckpointStore<C>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    /// `SCAN` of the store's keys, on every master of a cluster: see the crate's section on
    /// operating checkpoints.
    #[tracing::instrument(
        name = "checkpoint.groups",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, found)
    )]
    async fn groups(&self) -> Result<Vec<String>, Error> {
        let prefix = self.key_prefix();
        self.timed(Operation::Groups, |mut connection| async move {
            let groups = requests::groups(&mut connection, prefix).await?;
            tracing::Span::current().record("found", groups.len());
            Ok(groups)
        })
        .await
    }

    #[tracing::instrument(
        name = "checkpoint.start_at",
        level = "debug",
        skip_all,
        fields(
            backend = BACKEND,
            group = group,
            subscription = subscription,
            partitions = positions.len(),
        )
    )]
    async fn start_at(
        &self,
        group: &str,
        subscription: &str,
        positions: &[(u32, u64)],
    ) -> Result<(), Error> {
        validate_start_at(group, subscription, positions)?;
        let key = layout::group_key(self.key_prefix(), group);
        let ack = self.replica_ack();
        self.timed(Operation::StartAt, |mut connection| async move {
            requests::start_at(&mut connection, (group, &key), subscription, positions, ack).await
        })
        .await
    }

    #[tracing::instrument(
        name = "checkpoint.retire",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, group = group, subscription = subscription, deleted)
    )]
    async fn retire(&self, group: &str, subscription: &str) -> Result<(), Error> {
        validate_key(group, subscription)?;
        let key = layout::group_key(self.key_prefix(), group);
        let ack = self.replica_ack();
        self.timed(Operation::Retire, |mut connection| async move {
            let deleted = requests::retire(&mut connection, &key, subscription, ack).await?;
            tracing::Span::current().record("deleted", deleted);
            Ok(())
        })
        .await
    }

    #[tracing::instrument(
        name = "checkpoint.retired",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, group = group, found)
    )]
    async fn retired(&self, group: &str) -> Result<Vec<String>, Error> {
        validate_group(group)?;
        let key = layout::group_key(self.key_prefix(), group);
        self.timed(Operation::Retired, |mut connection| async move {
            let names = requests::retired_names(&mut connection, &key).await?;
            tracing::Span::current().record("found", names.len());
            Ok(names)
        })
        .await
    }

    #[tracing::instrument(
        name = "checkpoint.purge",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, group = group, subscription = subscription)
    )]
    async fn purge(&self, group: &str, subscription: &str) -> Result<(), Error> {
        validate_key(group, subscription)?;
        let key = layout::group_key(self.key_prefix(), group);
        let ack = self.replica_ack();
        self.timed(Operation::Purge, |mut connection| async move {
            requests::purge(&mut connection, (group, &key), subscription, ack).await
        })
        .await
    }
}
