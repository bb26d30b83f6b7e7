//! The operations API on Redis: [`CheckpointAdmin`] for [`RedisCheckpointStore`], each
//! operation validated first, then one request of [`requests`] under the store's timeout, with
//! the store's replica acknowledgement in the same pipeline for those that write (`retire`,
//! `start_at`, `purge`). The tombstones and their cost are in the crate documentation.

use checkpoint_core::door::{AdminDoor, Checked};
use checkpoint_core::{Error, Operation};
use redis::aio::ConnectionLike;

use crate::{RedisCheckpointStore, layout, requests};

impl<C> AdminDoor for RedisCheckpointStore<C>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    /// `SCAN` of the store's keys, on every master of a cluster: see the crate's section on
    /// operating checkpoints.
    async fn send_groups(&self, _checked: Checked) -> Result<Vec<String>, Error> {
        let prefix = self.key_prefix();
        self.on_connection(Operation::Groups, |mut connection| async move {
            let groups = requests::groups(&mut connection, prefix).await?;
            Ok(groups)
        })
        .await
    }

    async fn send_start_at(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        positions: &[(u32, u64)],
    ) -> Result<(), Error> {
        let key = layout::group_key(self.key_prefix(), group);
        let ack = self.replica_ack();
        self.on_connection(Operation::StartAt, |mut connection| async move {
            requests::start_at(&mut connection, (group, &key), subscription, positions, ack).await
        })
        .await
    }

    async fn send_retire(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
    ) -> Result<(), Error> {
        let key = layout::group_key(self.key_prefix(), group);
        let ack = self.replica_ack();
        self.on_connection(Operation::Retire, |mut connection| async move {
            let deleted = requests::retire(&mut connection, &key, subscription, ack).await?;
            tracing::Span::current().record("deleted", deleted);
            Ok(())
        })
        .await
    }

    async fn send_retired(&self, _checked: Checked, group: &str) -> Result<Vec<String>, Error> {
        let key = layout::group_key(self.key_prefix(), group);
        self.on_connection(Operation::Retired, |mut connection| async move {
            let names = requests::retired_names(&mut connection, &key).await?;
            Ok(names)
        })
        .await
    }

    async fn send_purge(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
    ) -> Result<(), Error> {
        let key = layout::group_key(self.key_prefix(), group);
        let ack = self.replica_ack();
        self.on_connection(Operation::Purge, |mut connection| async move {
            requests::purge(&mut connection, (group, &key), subscription, ack).await
        })
        .await
    }
}
