//! One partition a worker owns: where its entries are dispatched, completed and skipped.

use std::sync::Arc;

use crate::CommitterError;
use crate::shared::Shared;
use crate::state::PartitionState;
use crate::stats::PartitionStats;
use crate::tracker::Refusal;

/// A partition held by a [`Committer`](crate::Committer), from
/// [`Committer::partition`](crate::Committer::partition).
///
/// Cheap to clone: hand a clone to every task that completes entries. The reader of the
/// partition calls [`dispatched`](Self::dispatched) (or [`skipped`](Self::skipped)) for every
/// entry in log order; handlers call [`completed`](Self::completed) from any task, in any
/// order. The committer writes the gap-free position on its next tick.
#[derive(Debug, Clone)]
pub struct Partition {
    shared: Arc<Shared>,
    state: Arc<PartitionState>,
}

impl Partition {
    pub(crate) fn new(shared: Arc<Shared>, state: Arc<PartitionState>) -> Self {
        Self { shared, state }
    }

    /// The subscription.
    pub fn subscription(&self) -> &str {
        &self.state.subscription
    }

    /// The partition.
    pub fn partition(&self) -> u32 {
        self.state.partition
    }

    /// Records the entry at `position` as handed to a handler. Call it in log order, before
    /// the handler can complete it; positions must increase but may be sparse.
    ///
    /// Waits while the committer holds `max_in_flight` entries (backpressure): it never drops
    /// an entry and never grows past the bound.
    ///
    /// # Errors
    ///
    /// [`CommitterError::NotAhead`] for a position not ahead of the last one dispatched or
    /// skipped, [`CommitterError::PositionTooHigh`] above `i64::MAX - 1`,
    /// [`CommitterError::NotHeld`] once the partition is released and
    /// [`CommitterError::ShutDown`] once the committer is shut down. A refused call records
    /// nothing.
    pub async fn dispatched(&self, position: u64) -> Result<(), CommitterError> {
        // Refuse a bad position before waiting for room: the wait could be long.
        {
            let cell = self.state.lock();
            if cell.released {
                return Err(self.state.refusal(self.shared.is_shut_down()));
            }
            cell.tracker.check_next(position).map_err(refused)?;
        }
        let permit = self
            .shared
            .permits
            .acquire()
            .await
            .map_err(|_| CommitterError::ShutDown)?;
        let now = self.shared.since_epoch();
        let mut cell = self.state.lock();
        if cell.released {
            return Err(self.state.refusal(self.shared.is_shut_down()));
        }
        cell.tracker.dispatch(position, now).map_err(refused)?;
        // The slot is now the entry's: given back when the gap-free position passes it.
        permit.forget();
        Ok(())
    }

    /// Records the entry at `position` as completed. Call it from any task, in any order,
    /// once per dispatched entry.
    ///
    /// # Errors
    ///
    /// [`CommitterError::NotInFlight`] for a position that was never dispatched or is already
    /// completed, [`CommitterError::NotHeld`] once the partition is released (a late
    /// completion after a handover: the next owner redoes that entry) and
    /// [`CommitterError::ShutDown`] once the committer is shut down. A refused call records
    /// nothing.
    pub fn completed(&self, position: u64) -> Result<(), CommitterError> {
        let passed = {
            let mut cell = self.state.lock();
            if cell.released {
                return Err(self.state.refusal(self.shared.is_shut_down()));
            }
            cell.tracker.complete(position).map_err(refused)?
        };
        if passed > 0 {
            self.shared.permits.add_permits(passed);
        }
        Ok(())
    }

    /// Records the entry at `position` as one the subscription does not handle (filtered
    /// out): done as soon as it is seen. Call it in log order, like
    /// [`dispatched`](Self::dispatched); it never waits. Skipping lets the checkpoint pass a
    /// run of filtered entries instead of parking below them.
    ///
    /// # Errors
    ///
    /// As [`dispatched`](Self::dispatched), without the wait.
    pub fn skipped(&self, position: u64) -> Result<(), CommitterError> {
        let mut cell = self.state.lock();
        if cell.released {
            return Err(self.state.refusal(self.shared.is_shut_down()));
        }
        cell.tracker.skip(position).map_err(refused)
    }

    /// The gap-free position now: what the next write will save if it moved.
    pub fn gap_free(&self) -> u64 {
        self.state.lock().tracker.gap_free()
    }

    /// Where the partition stands: see [`PartitionStats`].
    pub fn stats(&self) -> PartitionStats {
        self.state.stats(self.shared.since_epoch())
    }
}

fn refused(refusal: Refusal) -> CommitterError {
    match refusal {
        Refusal::NotAhead { position, lowest } => CommitterError::NotAhead { position, lowest },
        Refusal::TooHigh { position } => CommitterError::PositionTooHigh { position },
        Refusal::NotInFlight { position } => CommitterError::NotInFlight { position },
    }
}
