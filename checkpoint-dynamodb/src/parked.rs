//! The [`ParkedStore`] impl: each method validates, opens its span, and sends its request
//! through [`requests::parked`](crate::requests::parked) within the store's timeout (each page,
//! for `parked`). The crate documentation, "Parked entries", gives the items and the requests.

use async_trait::async_trait;
use checkpoint_core::parked::{ParkedEntry, ParkedStore, validate_park, validate_parked_key};
use checkpoint_core::validation::validate_group;
use checkpoint_core::{Error, Operation};

use crate::requests::parked as requests;
use crate::{BACKEND, DynamoDbCheckpointStore};

#[async_trait]
impl ParkedStore for DynamoDbCheckpointStore {
    /// One `PutItem` of the whole item: a record parked before is replaced, its retry request
    /// cleared.
    #[tracing::instrument(
        name = "checkpoint.park",
        level = "debug",
        skip_all,
        fields(
            backend = BACKEND, table = %self.table(), group = group,
            subscription = entry.subscription.as_str(), partition = entry.partition,
        )
    )]
    async fn park(&self, group: &str, entry: &ParkedEntry) -> Result<(), Error> {
        validate_park(group, entry)?;
        self.within(Operation::Park, requests::park(self, group, entry))
            .await
    }

    /// One consistent `Query` of the group's parked partition key, followed through every page,
    /// sorted here (the sort key orders by partition first).
    #[tracing::instrument(
        name = "checkpoint.parked",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = %self.table(), group = group)
    )]
    async fn parked(&self, group: &str) -> Result<Vec<ParkedEntry>, Error> {
        validate_group(group)?;
        let (mut entries, pages) = self
            .every_page(Operation::Parked, |start| {
                requests::parked_page(self, group, start)
            })
            .await?;
        entries.sort_by(|a, b| {
            (a.subscription.as_bytes(), a.partition, a.position).cmp(&(
                b.subscription.as_bytes(),
                b.partition,
                b.position,
            ))
        });
        tracing::debug!(pages, entries = entries.len(), "parked entries read");
        Ok(entries)
    }

    /// One `UpdateItem` with the condition `attribute_exists(key)`; a refusal is `Ok(false)`.
    #[tracing::instrument(
        name = "checkpoint.retry_parked",
        level = "debug",
        skip_all,
        fields(
            backend = BACKEND, table = %self.table(), group = group, subscription = subscription,
            partition = partition,
        )
    )]
    async fn retry_parked(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<bool, Error> {
        validate_parked_key(group, subscription, position)?;
        let key = (group, subscription, partition, position);
        self.within(Operation::RetryParked, requests::retry_parked(self, key))
            .await
    }

    /// One `DeleteItem` with the condition `attribute_exists(key)`; a refusal is `Ok(false)`.
    #[tracing::instrument(
        name = "checkpoint.unpark",
        level = "debug",
        skip_all,
        fields(
            backend = BACKEND, table = %self.table(), group = group, subscription = subscription,
            partition = partition,
        )
    )]
    async fn unpark(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<bool, Error> {
        validate_parked_key(group, subscription, position)?;
        let key = (group, subscription, partition, position);
        self.within(Operation::Unpark, requests::unpark(self, key))
            .await
    }
}
