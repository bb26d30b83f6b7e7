//! What the committer's handles, partitions and periodic flush share.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use checkpoint_core::CheckpointStore;
use tokio::sync::{Notify, Semaphore};
use tokio::task::JoinHandle;

use crate::builder::Settings;
use crate::state::PartitionState;
use crate::writer::Writer;

pub(crate) type Registry = HashMap<(String, u32), Arc<PartitionState>>;

/// What the committer's handles, partitions and periodic flush share.
pub(crate) struct Shared {
    pub store: Arc<dyn CheckpointStore>,
    pub group: String,
    pub settings: Settings,
    pub epoch: Instant,
    /// One permit per entry the committer may still hold (`max_in_flight` in all).
    pub permits: Semaphore,
    pub partitions: Mutex<Registry>,
    /// Serializes writes, so a partition's written positions never go backwards, and keeps the
    /// backoff after failures.
    pub writer: tokio::sync::Mutex<Writer>,
    pub shut_down: AtomicBool,
    pub stop: Arc<Notify>,
    pub flusher: Mutex<Option<JoinHandle<()>>>,
    pub ticks: AtomicU64,
    pub writes: AtomicU64,
    pub failed_writes: AtomicU64,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Committer")
            .field("group", &self.group)
            .field("interval", &self.settings.interval)
            .field("max_in_flight", &self.settings.max_in_flight)
            .field("shut_down", &self.shut_down.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Shared {
    /// Nanoseconds since the committer started: the clock of dispatch times.
    pub fn since_epoch(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    pub fn registry(&self) -> MutexGuard<'_, Registry> {
        self.partitions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Every partition held now, in subscription and partition order.
    pub fn held_partitions(&self) -> Vec<Arc<PartitionState>> {
        let mut held: Vec<_> = self.registry().values().cloned().collect();
        held.sort_by(|a, b| (&a.subscription, a.partition).cmp(&(&b.subscription, b.partition)));
        held
    }

    pub fn is_shut_down(&self) -> bool {
        self.shut_down.load(Ordering::Acquire)
    }
}
