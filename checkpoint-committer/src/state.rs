//! The state of one held partition, shared by its handles, the committer and the flush.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use checkpoint_core::Error;

use crate::CommitterError;
use crate::stats::PartitionStats;
use crate::tracker::Tracker;

/// The state of one held partition, shared by its handles and the flush.
#[derive(Debug)]
pub(crate) struct PartitionState {
    pub subscription: String,
    pub partition: u32,
    cell: Mutex<Cell>,
}

/// Everything of a partition that changes, under one lock so that a snapshot agrees with
/// itself.
#[derive(Debug)]
pub(crate) struct Cell {
    pub tracker: Tracker,
    /// The highest position known to be in the store.
    pub committed: u64,
    pub last_write: Option<SystemTime>,
    pub last_error: Option<Arc<Error>>,
    /// Set by `release` and `shutdown`: the handles refuse every call from then on.
    pub released: bool,
}

impl PartitionState {
    pub fn new(subscription: String, partition: u32, resume_at: u64) -> Self {
        Self {
            subscription,
            partition,
            cell: Mutex::new(Cell {
                tracker: Tracker::new(resume_at),
                committed: resume_at,
                last_write: None,
                last_error: None,
                released: false,
            }),
        }
    }

    /// The partition's lock. A panic while it was held cannot leave the tracker half changed
    /// (every change is a single push, pop or flag), so a poisoned lock is still used.
    pub fn lock(&self) -> MutexGuard<'_, Cell> {
        self.cell.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn not_held(&self) -> CommitterError {
        CommitterError::NotHeld {
            subscription: self.subscription.clone(),
            partition: self.partition,
        }
    }

    /// Why a handle of this released partition refuses a call: the committer was shut down,
    /// or (while it runs) the partition alone was released. `shutdown` sets its flag before it
    /// releases any partition, so a handle released by it always answers `ShutDown`.
    pub fn refusal(&self, shut_down: bool) -> CommitterError {
        if shut_down {
            CommitterError::ShutDown
        } else {
            self.not_held()
        }
    }

    /// Where the partition stands, `now` being the committer's clock
    /// ([`Shared::since_epoch`](crate::shared::Shared::since_epoch)).
    pub fn stats(&self, now: u64) -> PartitionStats {
        let cell = self.lock();
        PartitionStats {
            subscription: self.subscription.clone(),
            partition: self.partition,
            committed: cell.committed,
            gap_free: cell.tracker.gap_free(),
            in_flight: cell.tracker.running(),
            held: cell.tracker.held(),
            oldest_in_flight_age: cell
                .tracker
                .oldest_running_since()
                .map(|since| now.saturating_sub(since))
                .map(std::time::Duration::from_nanos),
            last_write: cell.last_write,
            last_error: cell.last_error.clone(),
        }
    }
}
