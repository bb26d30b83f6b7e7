//! [`ParkedStore`] on SQLite: parked entries in `<table>_parked`, one statement per operation
//! in autocommit mode (see the crate doc, "Parked entries").

use async_trait::async_trait;
use checkpoint_core::parked::{ParkedEntry, ParkedStore, validate_park, validate_parked_key};
use checkpoint_core::validation::validate_group;
use checkpoint_core::{Error, Operation};

use crate::BACKEND;
use crate::store::SqliteCheckpointStore;

#[async_trait]
impl ParkedStore for SqliteCheckpointStore {
    /// One statement (`sql/park.sql`, an upsert).
    #[tracing::instrument(
        name = "checkpoint.park",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = self.table(), group = group, subscription = %entry.subscription)
    )]
    async fn park(&self, group: &str, entry: &ParkedEntry) -> Result<(), Error> {
        validate_park(group, entry)?;
        self.pooled(Operation::Park, |mut connection| async move {
            self.requests.park(&mut connection, group, entry).await
        })
        .await
    }

    /// One statement (`sql/parked.sql`).
    #[tracing::instrument(
        name = "checkpoint.parked",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = self.table(), group = group, count)
    )]
    async fn parked(&self, group: &str) -> Result<Vec<ParkedEntry>, Error> {
        validate_group(group)?;
        self.pooled(Operation::Parked, |mut connection| async move {
            self.requests.parked(&mut connection, group).await
        })
        .await
    }

    /// One statement (`sql/retry_parked.sql`).
    #[tracing::instrument(
        name = "checkpoint.retry_parked",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = self.table(), group = group, subscription = subscription)
    )]
    async fn retry_parked(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<bool, Error> {
        validate_parked_key(group, subscription, position)?;
        self.pooled(Operation::RetryParked, |mut connection| async move {
            self.requests
                .retry_parked(&mut connection, (group, subscription), partition, position)
                .await
        })
        .await
    }

    /// One statement (`sql/unpark.sql`).
    #[tracing::instrument(
        name = "checkpoint.unpark",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = self.table(), group = group, subscription = subscription)
    )]
    async fn unpark(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<bool, Error> {
        validate_parked_key(group, subscription, position)?;
        self.pooled(Operation::Unpark, |mut connection| async move {
            self.requests
                .unpark(&mut connection, (group, subscription), partition, position)
                .await
        })
        .await
    }
}
