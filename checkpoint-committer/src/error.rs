//! The committer's error type.

use std::sync::Arc;

use checkpoint_core::{Checkpoint, Error};

/// What a [`Committer`](crate::Committer) or a [`Partition`](crate::Partition) refused or
/// failed to do.
///
/// A refused call changes nothing. A failed write loses nothing: the periodic flush keeps the
/// positions and writes them on a later tick, and the flushes of
/// [`release`](crate::Committer::release) and [`shutdown`](crate::Committer::shutdown) hand
/// back what they could not write in [`CommitterError::Flush`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CommitterError {
    /// A setting, name or position no committer accepts (a group, subscription or position
    /// the store would refuse, an interval or `max_in_flight` of zero). Nothing was changed.
    #[error(transparent)]
    Invalid(Error),

    /// A position dispatched or skipped out of log order: not ahead of the last one dispatched
    /// or skipped on the partition (or of the position it resumed at).
    #[error(
        "position {position} is not ahead of the last one dispatched or skipped: the lowest allowed is {lowest}"
    )]
    NotAhead {
        /// The position given.
        position: u64,
        /// The lowest position the call could have taken.
        lowest: u64,
    },

    /// A position dispatched or skipped above `i64::MAX - 1`: the checkpoint after it would
    /// not be a valid position.
    #[error(
        "position {position} is too high: the highest a committer can dispatch is i64::MAX - 1"
    )]
    PositionTooHigh {
        /// The position given.
        position: u64,
    },

    /// A completion of a position that is not in flight on the partition: never dispatched,
    /// or already completed.
    #[error("position {position} is not in flight: never dispatched, or already completed")]
    NotInFlight {
        /// The position given.
        position: u64,
    },

    /// The partition is already taken by a live [`Partition`](crate::Partition) of this
    /// committer; release it first.
    #[error(
        "partition {partition} of subscription {subscription:?} is already held by this committer"
    )]
    AlreadyHeld {
        /// The subscription.
        subscription: String,
        /// The partition.
        partition: u32,
    },

    /// The partition was released (or is not held by this committer): its handle no longer
    /// takes calls.
    #[error(
        "partition {partition} of subscription {subscription:?} is not held by this committer (released?)"
    )]
    NotHeld {
        /// The subscription.
        subscription: String,
        /// The partition.
        partition: u32,
    },

    /// The committer was shut down.
    #[error("the committer is shut down")]
    ShutDown,

    /// A committer was started outside a tokio runtime.
    #[error("a committer needs a tokio runtime: start it from within one")]
    NoRuntime,

    /// Loading the stored checkpoint for [`resume`](crate::Committer::resume) failed.
    #[error("loading the stored checkpoint failed")]
    Load(#[source] Error),

    /// A write of [`release`](crate::Committer::release), [`flush`](crate::Committer::flush)
    /// or [`shutdown`](crate::Committer::shutdown) failed. `unwritten` holds the checkpoints it could
    /// not write, so a caller can retry them (`CheckpointStore::save_all`) or log them: nothing
    /// is lost silently.
    #[error("the final write of {} checkpoint(s) failed", unwritten.len())]
    Flush {
        /// The store's error.
        #[source]
        source: Arc<Error>,
        /// The checkpoints that were not written.
        unwritten: Vec<Checkpoint>,
    },
}
