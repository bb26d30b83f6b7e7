//! [`CheckpointAdmin`] on SQLite: the operations API, over the tombstone table
//! `<table>_retired` (see the crate doc, "Retired subscriptions").
//!
//! `groups` and `retired` are one `SELECT`. `start_at`, `retire` and `purge` each run in one
//! `BEGIN IMMEDIATE` transaction: it takes the database's write lock first, so what they read
//! cannot change before they write, and they are all-or-nothing (`requests/admin.rs`).

use async_trait::async_trait;
use checkpoint_core::validation::{validate_group, validate_key, validate_start_at};
use checkpoint_core::{CheckpointAdmin, Error, Operation};

use crate::BACKEND;
use crate::store::SqliteCheckpointStore;

#[async_trait]
impl CheckpointAdmin for SqliteCheckpointStore {
    #[tracing::instrument(
        name = "checkpoint.groups",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = self.table(), count)
    )]
    async fn groups(&self) -> Result<Vec<String>, Error> {
        self.pooled(Operation::Groups, |mut connection| async move {
            self.requests.groups(&mut connection).await
        })
        .await
    }

    #[tracing::instrument(
        name = "checkpoint.start_at",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = self.table(), group = group, subscription = subscription, partitions = positions.len())
    )]
    async fn start_at(
        &self,
        group: &str,
        subscription: &str,
        positions: &[(u32, u64)],
    ) -> Result<(), Error> {
        validate_start_at(group, subscription, positions)?;
        self.pooled(Operation::StartAt, |mut connection| async move {
            self.requests
                .start_at(&mut connection, group, subscription, positions)
                .await
        })
        .await
    }

    #[tracing::instrument(
        name = "checkpoint.retire",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = self.table(), group = group, subscription = subscription)
    )]
    async fn retire(&self, group: &str, subscription: &str) -> Result<(), Error> {
        validate_key(group, subscription)?;
        self.pooled(Operation::Retire, |mut connection| async move {
            self.requests
                .retire(&mut connection, group, subscription)
                .await
        })
        .await
    }

    #[tracing::instrument(
        name = "checkpoint.retired",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = self.table(), group = group, count)
    )]
    async fn retired(&self, group: &str) -> Result<Vec<String>, Error> {
        validate_group(group)?;
        self.pooled(Operation::Retired, |mut connection| async move {
            self.requests.retired(&mut connection, group).await
        })
        .await
    }

    #[tracing::instrument(
        name = "checkpoint.purge",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = self.table(), group = group, subscription = subscription)
    )]
    async fn purge(&self, group: &str, subscription: &str) -> Result<(), Error> {
        validate_key(group, subscription)?;
        self.pooled(Operation::Purge, |mut connection| async move {
            self.requests
                .purge(&mut connection, group, subscription)
                .await
        })
        .await
    }
}
