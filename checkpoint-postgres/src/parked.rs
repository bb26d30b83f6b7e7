//! [`ParkedStore`] on PostgreSQL: parked entries in `<table>_parked`, one statement per
//! operation (see the crate doc, "Parked entries").

use async_trait::async_trait;
use checkpoint_core::parked::{ParkedEntry, ParkedStore, validate_park, validate_parked_key};
use checkpoint_core::validation::validate_group;
use checkpoint_core::{Error, Operation};

use crate::BACKEND;
use crate::store::PostgresCheckpointStore;

#[async_trait]
impl ParkedStore for PostgresCheckpointStore {
    /// One statement (`sql/park.sql`, an upsert); idempotent, so run once more on a lost
    /// connection.
    #[tracing::instrument(
        name = "checkpoint.park",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = %self.table, group = group, subscription = %entry.subscription)
    )]
    async fn park(&self, group: &str, entry: &ParkedEntry) -> Result<(), Error> {
        validate_park(group, entry)?;
        self.on_pool(Operation::Park)
            .run_once_more_if_lost(|mut connection| async move {
                let reply = self.requests.park(&mut connection, group, entry).await;
                (connection, reply)
            })
            .await
    }

    /// One statement (`sql/parked.sql`); run once more on a lost connection.
    #[tracing::instrument(
        name = "checkpoint.parked",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = %self.table, group = group, count)
    )]
    async fn parked(&self, group: &str) -> Result<Vec<ParkedEntry>, Error> {
        validate_group(group)?;
        self.on_pool(Operation::Parked)
            .run_once_more_if_lost(|mut connection| async move {
                let reply = self.requests.parked(&mut connection, group).await;
                (connection, reply)
            })
            .await
    }

    /// One statement (`sql/retry_parked.sql`); idempotent (a second run finds the entry
    /// still parked), so run once more on a lost connection.
    #[tracing::instrument(
        name = "checkpoint.retry_parked",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = %self.table, group = group, subscription = subscription)
    )]
    async fn retry_parked(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<bool, Error> {
        validate_parked_key(group, subscription, position)?;
        self.on_pool(Operation::RetryParked)
            .run_once_more_if_lost(|mut connection| async move {
                let reply = self
                    .requests
                    .retry_parked(&mut connection, (group, subscription), partition, position)
                    .await;
                (connection, reply)
            })
            .await
    }

    /// One statement (`sql/unpark.sql`). Not run a second time on a lost connection: had the
    /// first attempt committed, the second would report the entry as not parked.
    #[tracing::instrument(
        name = "checkpoint.unpark",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = %self.table, group = group, subscription = subscription)
    )]
    async fn unpark(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<bool, Error> {
        validate_parked_key(group, subscription, position)?;
        self.on_pool(Operation::Unpark)
            .run(|mut connection| async move {
                let reply = self
                    .requests
                    .unpark(&mut connection, (group, subscription), partition, position)
                    .await;
                (connection, reply)
            })
            .await
    }
}
