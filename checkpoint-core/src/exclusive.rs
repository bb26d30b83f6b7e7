//! The exclusive mode: a claim guarded by a query fingerprint and a compare-and-set advance.

use async_trait::async_trait;

use crate::{CheckpointStore, Error, Fingerprint};

/// Checkpoints for a projection that must never run twice.
///
/// The monotonic [`CheckpointStore::save`] is right for at-least-once consumers: any owner may
/// save, and the highest completed position wins. A projection that must not apply a batch
/// twice needs more:
///
/// - [`claim`](Self::claim) loads the position, creating it at `initial_position` on first use,
///   and stores the [`Fingerprint`] of the subscription's query. A later claim under a different
///   fingerprint is refused with [`Error::QueryChanged`]: a position is only meaningful over the
///   query it was computed for.
/// - [`advance`](Self::advance) is a compare-and-set: it moves the position from `from` to `to`
///   only if it is still `from`, and otherwise fails with [`Error::Moved`], which says where it
///   is now. Of two processes under one name, the second to commit finds its position gone and
///   stops instead of projecting the same events twice.
///
/// Exclusive checkpoints live under the same (group, subscription, partition) keys and in the
/// same storage as monotonic ones, so [`CheckpointStore::list`] and [`CheckpointStore::load`]
/// show them too. Backends with transactions also offer `advance` inside the caller's own
/// transaction, so the read model and its position commit together or not at all.
///
/// A claim on a checkpoint that was only ever saved monotonically (it has no fingerprint yet)
/// adopts it: the claim's fingerprint is stored and the stored position is returned.
#[async_trait]
pub trait ExclusiveCheckpointStore: CheckpointStore {
    /// Returns the stored position, creating the checkpoint at `initial_position` with
    /// `fingerprint` on first use. Once it exists, the stored position wins and
    /// `initial_position` is ignored.
    ///
    /// Fails with [`Error::QueryChanged`], carrying both fingerprints, when the checkpoint was
    /// claimed under a different fingerprint.
    async fn claim(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        fingerprint: Fingerprint,
        initial_position: u64,
    ) -> Result<u64, Error>;

    /// Moves the position from `from` to `to` if it is still `from`, as one atomic step.
    ///
    /// Fails with [`Error::Moved`], carrying the current position (`None` when the checkpoint
    /// does not exist), when it is anywhere else. `to` must be ahead of `from`
    /// ([`InvalidReason::NotAhead`](crate::InvalidReason::NotAhead) otherwise).
    async fn advance(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
    ) -> Result<(), Error>;
}
