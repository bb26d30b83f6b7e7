//! What the lease keeper last saw and holds, as it publishes it for the stats.

use tokio::time::Instant;

/// A partition the worker holds.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HeldPartition {
    /// The partition.
    pub partition: u32,
    /// Its lease's epoch.
    pub epoch: u64,
    /// Whether it is being handed over (stop signalled, waiting for the drain).
    pub handing_over: bool,
}

/// What the lease keeper last saw and holds, kept for [`WorkerStats`].
#[derive(Debug, Clone, Default)]
pub(crate) struct View {
    pub held: Vec<HeldPartition>,
    pub live_workers: usize,
    /// Partitions without a live lease in the last table, with when each was first seen so.
    pub unowned_since: Vec<(u32, Instant)>,
}
