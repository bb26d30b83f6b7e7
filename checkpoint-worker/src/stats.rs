//! A snapshot of what a worker holds and has done, for dashboards and alerts.

use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::Instant;

use crate::shared::Shared;
use crate::view::HeldPartition;

/// What a [`Worker`](crate::Worker) holds and has done. Cheap: no I/O.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct WorkerStats {
    /// The worker's owner id.
    pub worker_id: String,
    /// The partition count it leases: partitions `0..partitions` (raised by
    /// [`Worker::grow_partitions`](crate::Worker::grow_partitions)).
    pub partitions: u32,
    /// The partitions it holds, sorted.
    pub held: Vec<HeldPartition>,
    /// How long its leases are held for by its local deadline; `None` when it holds none.
    pub held_for: Option<Duration>,
    /// Live workers of the subscription in the last table read (this one included).
    pub live_workers: usize,
    /// Partitions nobody held live in the last table read.
    pub unowned_partitions: usize,
    /// How long the longest-unowned of them has been seen unowned by this worker.
    pub longest_unowned: Option<Duration>,
    /// Leases granted to this worker.
    pub acquired: u64,
    /// Of those, the ones it had asked another owner to hand over.
    pub handovers_in: u64,
    /// Partitions it handed over (drained or not) and released.
    pub handovers_out: u64,
    /// Handovers whose drain deadline passed before the assignment was dropped.
    pub drain_timeouts: u64,
    /// Partitions it lost: not renewed before its local deadline, or found no longer held.
    pub losses: u64,
    /// Lease requests (renew, acquire, table reads, handover requests, releases) that failed.
    pub renew_failures: u64,
    /// Partitions whose final checkpoint write at a handover failed or outlasted its budget
    /// (they were released all the same; the next owner may redo from the stored position).
    pub final_write_failures: u64,
    /// Lease-store requests made so far: at rest, two per renew interval (fewer while rounds
    /// run slow).
    pub store_requests: u64,
    /// Rounds of renewing and balancing so far.
    pub rounds: u64,
}

impl WorkerStats {
    pub(crate) fn read(shared: &Shared) -> Self {
        let now = Instant::now();
        let view = shared.view().clone();
        let counters = &shared.counters;
        let load = |counter: &std::sync::atomic::AtomicU64| counter.load(Ordering::Relaxed);
        Self {
            worker_id: shared.worker_id.clone(),
            partitions: shared.partitions(),
            held_for: shared
                .deadline
                .get()
                .filter(|_| !view.held.is_empty())
                .map(|deadline| deadline.saturating_duration_since(now)),
            held: view.held,
            live_workers: view.live_workers,
            unowned_partitions: view.unowned_since.len(),
            longest_unowned: view
                .unowned_since
                .iter()
                .map(|(_, since)| now.saturating_duration_since(*since))
                .max(),
            acquired: load(&counters.acquired),
            handovers_in: load(&counters.handovers_in),
            handovers_out: load(&counters.handovers_out),
            drain_timeouts: load(&counters.drain_timeouts),
            losses: load(&counters.losses),
            renew_failures: load(&counters.renew_failures),
            final_write_failures: load(&counters.final_write_failures),
            store_requests: load(&counters.store_requests),
            rounds: load(&counters.rounds),
        }
    }
}
