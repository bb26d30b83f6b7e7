//! The [`ParkedStore`] impl: each method validates, opens its span, and sends its request
//! through [`requests::parked`](crate::requests::parked) within the store's timeout (each page,
//! for `parked`). The crate documentation, "Parked entries", gives the items and the requests.

use checkpoint_core::door::{Checked, ParkedDoor};
use checkpoint_core::parked::ParkedEntry;
use checkpoint_core::{Error, Operation};

use crate::DynamoDbCheckpointStore;
use crate::requests::parked as requests;

impl ParkedDoor for DynamoDbCheckpointStore {
    /// One `PutItem` of the whole item: a record parked before is replaced, its retry request
    /// cleared.
    async fn send_park(
        &self,
        _checked: Checked,
        group: &str,
        entry: &ParkedEntry,
    ) -> Result<(), Error> {
        self.within(Operation::Park, requests::park(self, group, entry))
            .await
    }

    /// One consistent `Query` of the group's parked partition key, followed through every page,
    /// sorted here (the sort key orders by partition first).
    async fn send_parked(&self, _checked: Checked, group: &str) -> Result<Vec<ParkedEntry>, Error> {
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
    async fn send_retry_parked(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<bool, Error> {
        let key = (group, subscription, partition, position);
        self.within(Operation::RetryParked, requests::retry_parked(self, key))
            .await
    }

    /// One `DeleteItem` with the condition `attribute_exists(key)`; a refusal is `Ok(false)`.
    async fn send_unpark(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<bool, Error> {
        let key = (group, subscription, partition, position);
        self.within(Operation::Unpark, requests::unpark(self, key))
            .await
    }
}
