//! The committer (`checkpoint-committer`) between handlers and a store: what it gains end to
//! end over one `save` per entry, what it costs per entry in process, and what a held entry
//! costs in memory.
//!
//! - End to end (PostgreSQL, Redis, SQLite): 16 handler tasks over 64 partitions of one
//!   subscription, each handler owning 4 partitions. With the committer, a handler dispatches
//!   a batch of entries of its partitions and completes them in shuffled order; the entries
//!   count once the committer has written them. Against it, the same handlers complete each
//!   partition's entries in order and save the checkpoint after every entry (entry + 1), which
//!   is gap-free because each partition has one handler. A handler's work is nothing, so the
//!   figure is the cost of checkpointing. Every write is a durable commit in both.
//! - In process: `dispatched` + `completed` on `InMemoryCheckpointStore` with a flush interval
//!   that never comes, 16 tasks on the multi-thread runtime, each on its own partition.
//! - Memory: the live bytes (a counting global allocator) of 100,000 entries dispatched and not
//!   completed, over 64 partitions and in one.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Handler tasks of the end-to-end workload.
pub(super) const HANDLERS: u32 = 16;
/// Partitions of the one subscription; each handler owns `PARTITIONS / HANDLERS` of them.
pub(crate) const PARTITIONS: u32 = 64;
pub(crate) const SUBSCRIPTION: &str = "committer";
/// The committer's interval in the end-to-end workload.
pub(super) const INTERVAL: Duration = Duration::from_millis(100);
/// Entries a handler dispatches on each of its partitions before it completes the batch.
pub(super) const BATCH_PER_PARTITION: u64 = 64;
/// Pairs of `dispatched` + `completed` timed together in process: one `Instant::now` costs
/// tens of nanoseconds, as much as what is measured, so a batch is timed and divided.
pub(super) const TIMED_BATCH: u32 = 64;
/// Entries held for the memory figure.
pub(super) const HELD: u64 = 100_000;
/// A flush interval (and backoff) that never comes during an in-process measurement.
pub(super) const NEVER: Duration = Duration::from_secs(3_600);
/// How long the written positions may take to reach the gap-free ones before the run fails.
pub(super) const WRITE_TIMEOUT: Duration = Duration::from_secs(60);

/// How much of the committer workloads to run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan {
    /// Interleaved rounds of (committer, one save per entry).
    pub(crate) rounds: usize,
    /// How long the handlers run in each round.
    pub(crate) slice: Duration,
    /// An untimed round of each first (connections, prepared statements, scripts).
    pub(crate) warm_up: bool,
    /// Timed batches per task in process.
    batches: usize,
}

impl Plan {
    pub(crate) fn new(smoke: bool) -> Self {
        if smoke {
            Self {
                rounds: 1,
                slice: Duration::from_millis(200),
                warm_up: false,
                batches: 20,
            }
        } else {
            Self {
                rounds: 3,
                slice: Duration::from_secs(2),
                warm_up: true,
                batches: 2_000,
            }
        }
    }
}

/// A group of its own for every round.
pub(crate) fn group(what: &str) -> Arc<str> {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    format!("bench-{}-{nanos}-{what}", std::process::id()).into()
}

/// The partitions handler `handler` owns.
pub(super) fn owned(handler: u32) -> impl Iterator<Item = u32> {
    (handler..PARTITIONS).step_by(HANDLERS as usize)
}

/// Entries done and the time they took, summed over rounds.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Tally {
    entries: u64,
    took: Duration,
    writes: u64,
}

impl Tally {
    pub(crate) fn add(&mut self, other: Tally) {
        self.entries += other.entries;
        self.took += other.took;
        self.writes += other.writes;
    }

    pub(crate) fn per_sec(self) -> f64 {
        self.entries as f64 / self.took.as_secs_f64()
    }
}

mod end_to_end;
mod in_process;

pub use end_to_end::end_to_end;
pub(crate) use end_to_end::{check_stored, drive, start_committer, with_committer};
pub use in_process::in_process;
