//! The `*_in` family on Redis: [`advance_in`](RedisCheckpointStore::advance_in), the advance
//! that applies the caller's hash writes in the same atomic script.
//!
//! Redis has no transaction a store could join and run the caller's own logic in (`MULTI`
//! queues commands without reading their replies, and `WATCH` belongs to one connection). What
//! it does have is a script, which the server runs whole, with nothing else in between: so
//! "in" means here that the caller's writes, decided before the call, travel with the advance
//! in `advance.lua` and commit together with it, or not at all.

use checkpoint_core::door::front;
use checkpoint_core::error::{Argument, InvalidInput, InvalidReason};
use checkpoint_core::{Error, Operation};
use redis::aio::ConnectionLike;

use crate::{RedisCheckpointStore, layout, requests};

/// One `HSET key field value` that [`advance_in`](RedisCheckpointStore::advance_in) applies
/// in the same atomic step as the advance, and only when the advance succeeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HashWrite<'a> {
    /// The hash to write. On a cluster it must be in the group's slot: put
    /// [`RedisCheckpointStore::hash_tag`] in it.
    pub key: &'a str,
    /// The field of the hash.
    pub field: &'a [u8],
    /// The value to store.
    pub value: &'a [u8],
}

impl<'a> HashWrite<'a> {
    /// `HSET key field value`.
    pub fn new(
        key: &'a str,
        field: &'a (impl AsRef<[u8]> + ?Sized),
        value: &'a (impl AsRef<[u8]> + ?Sized),
    ) -> Self {
        Self {
            key,
            field: field.as_ref(),
            value: value.as_ref(),
        }
    }
}

impl<C> RedisCheckpointStore<C>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    /// Advances like [`ExclusiveCheckpointStore::advance`](checkpoint_core::ExclusiveCheckpointStore::advance)
    /// and, in the same atomic script, applies `writes` (`HSET key field value` each) only when
    /// the advance succeeds: the read model's writes and the new position commit together or
    /// not at all.
    ///
    /// This is what "in the caller's transaction" means on Redis, which has no transaction the
    /// store could join: the writes travel with the advance in one script, which the server
    /// applies whole. Limits: the writes are plain `HSET`s decided before the call (no logic of
    /// yours runs between the check and the writes); on a cluster every key must be in the
    /// group's slot, so put [`hash_tag`](Self::hash_tag) in your keys (the server refuses
    /// others with `CROSSSLOT`); and the atomicity is Redis's: a script is applied whole, but
    /// its durability is that of the server (see the crate's durability section). The store's
    /// timeout and replica acknowledgement apply as to `advance`.
    ///
    /// # Errors
    ///
    /// [`Error::Moved`] when the checkpoint is not at `from` (nothing is written), and
    /// [`Error::InvalidInput`] as for `advance`, or for a write into the group's own key, before
    /// any I/O.
    pub async fn advance_in(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
        writes: &[HashWrite<'_>],
    ) -> Result<(), Error> {
        let key = (group, subscription, partition);
        front::advance_in(self, key, (from, to), |_checked| {
            self.advance_writing(group, subscription, partition, from, to, writes)
        })
        .await
    }

    /// The advance with the caller's writes: [`advance_in`](Self::advance_in), and `advance`
    /// with none. Both come through the front, which has checked the key and positions; the
    /// writes are checked here.
    pub(crate) async fn advance_writing(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
        writes: &[HashWrite<'_>],
    ) -> Result<(), Error> {
        let key = layout::group_key(self.key_prefix(), group);
        if writes.iter().any(|write| write.key == key) {
            // A foreign field in the group's hash would make every later `list` fail.
            return Err(InvalidInput::new(
                Argument::Setting("writes"),
                InvalidReason::Malformed {
                    expected: "writes into keys other than the group's checkpoint hash",
                },
            )
            .into());
        }
        let field = layout::field(subscription, partition);
        self.on_connection(Operation::Advance, |mut connection| async move {
            let ack = self.replica_ack();
            let writes = writes
                .iter()
                .map(|write| (write.key, write.field, write.value));
            requests::advance(&mut connection, &key, &field, from, to, writes, ack).await
        })
        .await
    }
}
