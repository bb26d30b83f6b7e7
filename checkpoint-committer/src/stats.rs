//! Snapshots of what a committer holds and has written, for dashboards and alerts.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use checkpoint_core::Error;

/// Where one partition stands, taken under its lock in one go (so the figures agree with each
/// other). Cheap: no I/O, one short lock.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PartitionStats {
    /// The subscription.
    pub subscription: String,
    /// The partition.
    pub partition: u32,
    /// The highest position known to be in the store: the position the partition resumed at,
    /// then every position this committer wrote.
    pub committed: u64,
    /// The gap-free position now: what the next write will save when it is ahead of
    /// `committed`.
    pub gap_free: u64,
    /// Entries dispatched and not completed yet.
    pub in_flight: usize,
    /// Entries the partition holds in memory: the ones in flight and the completed ones behind
    /// the oldest in flight. This is what counts against `max_in_flight`.
    pub held: usize,
    /// How long the oldest entry in flight has been running; `None` when none runs. A value
    /// that keeps growing is a stuck handler holding the checkpoint back.
    pub oldest_in_flight_age: Option<Duration>,
    /// When this committer last wrote the partition's checkpoint.
    pub last_write: Option<SystemTime>,
    /// The error of the last write that included this partition, if it failed; cleared by the
    /// next successful write.
    pub last_error: Option<Arc<Error>>,
}

impl PartitionStats {
    /// How far the store is behind the gap-free position, in positions.
    pub fn unwritten_positions(&self) -> u64 {
        self.gap_free.saturating_sub(self.committed)
    }
}

/// The figures of a whole committer.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CommitterStats {
    /// Every partition it holds, sorted by subscription and partition.
    pub partitions: Vec<PartitionStats>,
    /// Ticks of the periodic flush so far.
    pub ticks: u64,
    /// `save_all` calls that succeeded (periodic, release and shutdown writes).
    pub writes: u64,
    /// `save_all` calls that failed.
    pub failed_writes: u64,
}
