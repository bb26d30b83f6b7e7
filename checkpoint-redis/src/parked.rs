//! Parked entries on Redis: [`ParkedStore`] for [`RedisCheckpointStore`], each operation
//! validated first, then one request of [`requests`] under the store's timeout, with the
//! store's replica acknowledgement in the same pipeline for those that write. The layout is in
//! the crate documentation's "Parked entries" section.

use async_trait::async_trait;
use checkpoint_core::parked::{ParkedEntry, ParkedStore, validate_park, validate_parked_key};
use checkpoint_core::validation::validate_group;
use checkpoint_core::{Error, Operation};
use redis::aio::ConnectionLike;

use crate::{BACKEND, RedisCheckpointStore, layout, requests};

impl<C> RedisCheckpointStore<C> {
    /// The key of the hash of `group`'s parked entries.
    fn parked_key(&self, group: &str) -> String {
        layout::parked_key(&layout::group_key(self.key_prefix(), group))
    }
}

#[async_trait]
impl<C> ParkedStore for RedisCheckpointStore<C>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    /// One `HSET` of the entry's field, which replaces a record parked before whole (its
    /// retry flag cleared with it).
    #[tracing::instrument(
        name = "checkpoint.park",
        level = "debug",
        skip_all,
        fields(
            backend = BACKEND,
            group = group,
            subscription = entry.subscription.as_str(),
            partition = entry.partition,
        )
    )]
    async fn park(&self, group: &str, entry: &ParkedEntry) -> Result<(), Error> {
        validate_park(group, entry)?;
        let key = self.parked_key(group);
        let field = layout::parked_field(&entry.subscription, entry.partition, entry.position);
        // Parking again clears a retry request: the value is written with the flag at 0.
        let value = layout::parked_value(&ParkedEntry {
            retry_requested: false,
            ..entry.clone()
        });
        let ack = self.replica_ack();
        self.timed(Operation::Park, |mut connection| async move {
            requests::park(&mut connection, &key, &field, &value, ack).await
        })
        .await
    }

    /// `HLEN`, then one `HGETALL` (or `HSCAN` steps for a large group), sorted client side.
    #[tracing::instrument(
        name = "checkpoint.parked",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, group = group, found)
    )]
    async fn parked(&self, group: &str) -> Result<Vec<ParkedEntry>, Error> {
        validate_group(group)?;
        let key = self.parked_key(group);
        self.timed(Operation::Parked, |mut connection| async move {
            let found = requests::parked(&mut connection, &key).await?;
            tracing::Span::current().record("found", found.len());
            Ok(found)
        })
        .await
    }

    /// One script, `retry_parked.lua`: the flag is set only if the entry is parked.
    #[tracing::instrument(
        name = "checkpoint.retry_parked",
        level = "debug",
        skip_all,
        fields(
            backend = BACKEND,
            group = group,
            subscription = subscription,
            partition = partition,
            found,
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
        let key = self.parked_key(group);
        let field = layout::parked_field(subscription, partition, position);
        let ack = self.replica_ack();
        self.timed(Operation::RetryParked, |mut connection| async move {
            let found = requests::retry_parked(&mut connection, &key, &field, ack).await?;
            tracing::Span::current().record("found", found);
            Ok(found)
        })
        .await
    }

    /// One `HDEL` of the entry's field.
    #[tracing::instrument(
        name = "checkpoint.unpark",
        level = "debug",
        skip_all,
        fields(
            backend = BACKEND,
            group = group,
            subscription = subscription,
            partition = partition,
            found,
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
        let key = self.parked_key(group);
        let field = layout::parked_field(subscription, partition, position);
        let ack = self.replica_ack();
        self.timed(Operation::Unpark, |mut connection| async move {
            let found = requests::unpark(&mut connection, &key, &field, ack).await?;
            tracing::Span::current().record("found", found);
            Ok(found)
        })
        .await
    }
}
