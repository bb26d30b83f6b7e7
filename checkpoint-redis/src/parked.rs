//! Parked entries on Redis: [`ParkedStore`] for [`RedisCheckpointStore`], each operation
//! validated first, then one request of [`requests`] under the store's timeout, with the
//! store's replica acknowledgement in the same pipeline for those that write. The layout is in
//! the crate documentation's "Parked entries" section.

use checkpoint_core::door::{Checked, ParkedDoor};
use checkpoint_core::parked::ParkedEntry;
use checkpoint_core::{Error, Operation};
use redis::aio::ConnectionLike;

use crate::{RedisCheckpointStore, layout, requests};

impl<C> RedisCheckpointStore<C> {
    /// The key of the hash of `group`'s parked entries.
    fn parked_key(&self, group: &str) -> String {
        layout::parked_key(&layout::group_key(self.key_prefix(), group))
    }
}

impl<C> ParkedDoor for RedisCheckpointStore<C>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    /// One `HSET` of the entry's field, which replaces a record parked before whole (its
    /// retry flag cleared with it).
    async fn send_park(
        &self,
        _checked: Checked,
        group: &str,
        entry: &ParkedEntry,
    ) -> Result<(), Error> {
        let key = self.parked_key(group);
        let field = layout::parked_field(&entry.subscription, entry.partition, entry.position);
        // Parking again clears a retry request: the value is written with the flag at 0.
        let value = layout::parked_value(&ParkedEntry {
            retry_requested: false,
            ..entry.clone()
        });
        let ack = self.replica_ack();
        self.on_connection(Operation::Park, |mut connection| async move {
            requests::park(&mut connection, &key, &field, &value, ack).await
        })
        .await
    }

    /// `HLEN`, then one `HGETALL` (or `HSCAN` steps for a large group), sorted client side.
    async fn send_parked(&self, _checked: Checked, group: &str) -> Result<Vec<ParkedEntry>, Error> {
        let key = self.parked_key(group);
        self.on_connection(Operation::Parked, |mut connection| async move {
            let found = requests::parked(&mut connection, &key).await?;
            Ok(found)
        })
        .await
    }

    /// One script, `retry_parked.lua`: the flag is set only if the entry is parked.
    async fn send_retry_parked(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<bool, Error> {
        let key = self.parked_key(group);
        let field = layout::parked_field(subscription, partition, position);
        let ack = self.replica_ack();
        self.on_connection(Operation::RetryParked, |mut connection| async move {
            let found = requests::retry_parked(&mut connection, &key, &field, ack).await?;
            tracing::Span::current().record("found", found);
            Ok(found)
        })
        .await
    }

    /// One `HDEL` of the entry's field.
    async fn send_unpark(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<bool, Error> {
        let key = self.parked_key(group);
        let field = layout::parked_field(subscription, partition, position);
        let ack = self.replica_ack();
        self.on_connection(Operation::Unpark, |mut connection| async move {
            let found = requests::unpark(&mut connection, &key, &field, ack).await?;
            tracing::Span::current().record("found", found);
            Ok(found)
        })
        .await
    }
}
