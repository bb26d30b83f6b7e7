//! The monotonic checkpoint store: the trait every backend implements.

use async_trait::async_trait;

use crate::{Checkpoint, Error};

/// A store of checkpoints that only ever move forward.
///
/// For each (group, subscription, partition) a store keeps one position. [`save`](Self::save)
/// moves it only when the new position is ahead, as one atomic step on the server, so a late,
/// lower save from a zombie owner after a lease handover can never move a checkpoint back. No
/// fencing token is needed.
///
/// Every method validates its input with [`crate::validation`] before any I/O and rejects an
/// invalid group, subscription or position with [`Error::InvalidInput`].
///
/// The trait is object safe: `Arc<dyn CheckpointStore>` works.
#[async_trait]
pub trait CheckpointStore: Send + Sync {
    /// Every checkpoint of `group`, of every subscription and partition, in no particular
    /// order, and nothing of any other group.
    async fn list(&self, group: &str) -> Result<Vec<Checkpoint>, Error>;

    /// The stored position of `subscription` in `group` for `partition`, or `None` when
    /// nothing is stored yet.
    async fn load(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> Result<Option<u64>, Error>;

    /// Moves the checkpoint to `position` if that is ahead of the stored one (or nothing is
    /// stored); otherwise does nothing. A lower or equal position is not an error.
    async fn save(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<(), Error>;

    /// Saves each of `checkpoints` in `group` as [`save`](Self::save) would, on its own.
    ///
    /// Entries may repeat a key (the highest wins) and come in any order; an empty batch does
    /// nothing. A batch with any invalid entry is rejected whole before any I/O. A failure may
    /// leave some entries saved and others not, which only means those are saved again later.
    ///
    /// This default saves them one by one; backends override it to use as few round trips as
    /// they can.
    async fn save_all(&self, group: &str, checkpoints: &[Checkpoint]) -> Result<(), Error> {
        crate::validation::validate_batch(group, checkpoints)?;
        for checkpoint in checkpoints {
            self.save(
                group,
                &checkpoint.subscription,
                checkpoint.partition,
                checkpoint.position,
            )
            .await?;
        }
        Ok(())
    }
}
