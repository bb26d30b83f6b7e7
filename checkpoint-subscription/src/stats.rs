//! A snapshot of what a subscription has done and how far behind it is.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use checkpoint_worker::WorkerStats;

use crate::shared::Shared;

/// One partition a subscription reads now: where its checkpoint stands against the log.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PartitionStatus {
    /// The partition.
    pub partition: u32,
    /// The lease's epoch.
    pub epoch: u64,
    /// The gap-free position: what the next checkpoint write stores (the first entry not
    /// finished).
    pub checkpoint: u64,
    /// The last position a read can return, as last seen (by a read, or by the source's
    /// `head` every lag interval); `None` before the partition has shown an entry.
    pub head: Option<u64>,
    /// Positions from the checkpoint to the head, both counted: `head + 1 - checkpoint`, 0
    /// when caught up. On a dense log (SQLite, NATS, the in-memory source) that is entries;
    /// on a sparse one (PostgreSQL's positions are transaction ids) an upper bound of them.
    pub lag_positions: u64,
    /// How long ago the oldest entry read and not finished was appended, where the source
    /// keeps append times; `None` when caught up or unknown.
    pub lag_time: Option<Duration>,
    /// Entries handed to handlers and not finished.
    pub in_flight: usize,
    /// The poison entry the partition stopped on ([`OnPoison::Stop`](crate::OnPoison::Stop)).
    pub stopped_at: Option<u64>,
}

/// What a [`Subscription`](crate::Subscription) has done and how far behind it is. Cheap:
/// no I/O.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SubscriptionStats {
    /// The worker underneath: partitions held, leases, handovers, losses.
    pub worker: WorkerStats,
    /// Every partition read now, sorted.
    pub partitions: Vec<PartitionStatus>,
    /// Entries whose handler succeeded (retries of parked entries included).
    pub handled: u64,
    /// Handler runs that failed and were retried.
    pub retries: u64,
    /// Entries parked after their last retry.
    pub parked: u64,
    /// Partitions stopped on a poison entry.
    pub stopped_on_poison: u64,
    /// Failed reads and waits of the source (each retried after a pause).
    pub source_errors: u64,
    /// Failed attempts to park an entry (each retried until the store takes it).
    pub park_failures: u64,
    /// Parked entries whose retry, asked for by an operator, succeeded and were unparked.
    pub parked_retried: u64,
}

impl SubscriptionStats {
    pub(crate) fn read(shared: &Shared, worker: WorkerStats) -> Self {
        let now = SystemTime::now();
        let partitions = shared
            .held()
            .iter()
            .map(|state| {
                let (checkpoint, head, lag_positions, oldest) = state.lag();
                PartitionStatus {
                    partition: state.partition,
                    epoch: state.epoch,
                    checkpoint,
                    head,
                    lag_positions,
                    lag_time: oldest.map(|at| now.duration_since(at).unwrap_or_default()),
                    in_flight: state.in_flight(),
                    stopped_at: state.stopped_at(),
                }
            })
            .collect();
        let counters = &shared.counters;
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        Self {
            worker,
            partitions,
            handled: load(&counters.handled),
            retries: load(&counters.retries),
            parked: load(&counters.parked),
            stopped_on_poison: load(&counters.stopped_on_poison),
            source_errors: load(&counters.source_errors),
            park_failures: load(&counters.park_failures),
            parked_retried: load(&counters.parked_retried),
        }
    }
}
