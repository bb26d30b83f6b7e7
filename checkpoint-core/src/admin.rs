//! Operating checkpoints: what an operator does to a store, beside what a subscription does.

use async_trait::async_trait;

use crate::{CheckpointStore, Error};

/// The operations API: see every group, start a subscription at chosen positions, retire one
/// for good, and purge what a retired one leaves.
///
/// It is a trait of its own, beside [`CheckpointStore`], so that a store of your own can keep
/// the contract without it. Every store of the workspace implements it natively.
///
/// None of it can move a checkpoint backwards. A replay from an earlier position is a **new
/// subscription**: [`start_at`](Self::start_at) creates it where you choose, and refuses any
/// name that already has a checkpoint. The old one is then [`retire`](Self::retire)d: from
/// the moment `retire` returns, it is gone from [`list`](CheckpointStore::list) and
/// [`load`](CheckpointStore::load), and it **stays gone**. A late
/// [`save`](CheckpointStore::save) or [`save_all`](CheckpointStore::save_all) from a zombie
/// owner that still runs under the old name is ignored (`Ok`, exactly like a save that is
/// behind), also for a partition that had no checkpoint when the subscription was retired; a
/// [`claim`](crate::ExclusiveCheckpointStore::claim) fails with [`Error::Retired`] and an
/// [`advance`](crate::ExclusiveCheckpointStore::advance) with [`Error::Moved`] (the checkpoint
/// is absent). What keeps it gone is a tombstone the store checks inside the same atomic step
/// as every save, so it costs no extra round trip. The name cannot be used again until an
/// operator [`purge`](Self::purge)s it, once no process can still be running under it.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use checkpoint_core::{CheckpointAdmin, CheckpointStore, Error, InMemoryCheckpointStore};
///
/// let store = InMemoryCheckpointStore::new();
/// store.save("billing", "invoices", 0, 42).await?;
///
/// // Replay partition 0 from 10 under a new name, then retire the old one.
/// store.start_at("billing", "invoices-v2", &[(0, 10)]).await?;
/// store.retire("billing", "invoices").await?;
/// store.save("billing", "invoices", 0, 50).await?; // a zombie's late save: ignored
/// assert_eq!(store.load("billing", "invoices", 0).await?, None);
/// assert_eq!(store.retired("billing").await?, vec!["invoices".to_owned()]);
///
/// // The retired name stays taken until it is purged.
/// assert!(matches!(store.start_at("billing", "invoices", &[(0, 0)]).await, Err(Error::Retired { .. })));
/// store.purge("billing", "invoices").await?;
/// store.start_at("billing", "invoices", &[(0, 0)]).await?;
/// # Ok::<(), checkpoint_core::Error>(())
/// # }).unwrap();
/// ```
#[async_trait]
pub trait CheckpointAdmin: CheckpointStore {
    /// Every group that holds at least one checkpoint or retired subscription, each once,
    /// sorted by the bytes of its name, however many there are.
    async fn groups(&self) -> Result<Vec<String>, Error>;

    /// Creates `subscription` in `group` with one checkpoint per `(partition, position)`.
    ///
    /// Refuses with [`Error::Exists`] if the subscription has any checkpoint already (so it
    /// can never move one), and with [`Error::Retired`] if it is retired. `positions` must not
    /// be empty nor name a partition twice ([`InvalidInput`](crate::InvalidInput) otherwise).
    /// Every partition is created, or (where the backend has transactions) none; the crate
    /// doc of each backend says which.
    async fn start_at(
        &self,
        group: &str,
        subscription: &str,
        positions: &[(u32, u64)],
    ) -> Result<(), Error>;

    /// Retires `subscription` of `group`: when this returns, its checkpoints are gone from
    /// `list` and `load`, and every later save under its name is ignored, until it is
    /// [`purge`](Self::purge)d. Retiring a name with no checkpoint (or one already retired)
    /// is allowed: the tombstone guards against a zombie that never saved yet.
    async fn retire(&self, group: &str, subscription: &str) -> Result<(), Error>;

    /// The retired subscriptions of `group`, sorted, each once.
    async fn retired(&self, group: &str) -> Result<Vec<String>, Error>;

    /// Removes every trace of a retired `subscription`, so that its name can be used again.
    ///
    /// Only a retired subscription is purged: one with live checkpoints is refused with
    /// [`Error::NotRetired`]; a name that has nothing at all is `Ok`. Purge only once no
    /// process can still save under the name: after a purge, a zombie's save creates a
    /// checkpoint again.
    async fn purge(&self, group: &str, subscription: &str) -> Result<(), Error>;
}
