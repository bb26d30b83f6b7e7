//! What the subscription's tasks share.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use checkpoint_core::source::Source;
use checkpoint_worker::Assignment;
use futures_util::future::BoxFuture;

use crate::Handler;
use crate::partition::PartitionState;
use crate::settings::Settings;

#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) handled: AtomicU64,
    pub(crate) retries: AtomicU64,
    pub(crate) parked: AtomicU64,
    pub(crate) stopped_on_poison: AtomicU64,
    pub(crate) source_errors: AtomicU64,
    pub(crate) park_failures: AtomicU64,
    pub(crate) parked_retried: AtomicU64,
}

/// The reader of a subscription whose handler is transactional: one per assignment.
pub(crate) trait ReadBatches: Send + Sync {
    fn read(self: Arc<Self>, shared: Arc<Shared>, assignment: Assignment)
    -> BoxFuture<'static, ()>;
}

pub(crate) struct Shared {
    pub(crate) group: String,
    pub(crate) subscription: String,
    pub(crate) source: Arc<dyn Source>,
    /// The handler of one entry: the user's, or for a transactional handler one entry in a
    /// transaction of its own (for retries of parked entries).
    pub(crate) handler: Arc<dyn Handler>,
    /// Set for a transactional handler: reads and commits batches instead of dispatching
    /// entries.
    pub(crate) batches: Option<Arc<dyn ReadBatches>>,
    pub(crate) settings: Settings,
    pub(crate) counters: Counters,
    partitions: Mutex<BTreeMap<u32, Arc<PartitionState>>>,
}

impl Shared {
    pub(crate) fn new(
        group: String,
        subscription: String,
        source: Arc<dyn Source>,
        handler: Arc<dyn Handler>,
        batches: Option<Arc<dyn ReadBatches>>,
        settings: Settings,
    ) -> Self {
        Self {
            group,
            subscription,
            source,
            handler,
            batches,
            settings,
            counters: Counters::default(),
            partitions: Mutex::new(BTreeMap::new()),
        }
    }

    fn partitions(&self) -> MutexGuard<'_, BTreeMap<u32, Arc<PartitionState>>> {
        self.partitions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// A reader starts on a partition.
    pub(crate) fn register(&self, state: Arc<PartitionState>) {
        self.partitions().insert(state.partition, state);
    }

    /// A reader is done with a partition (only its own registration: a later epoch's reader
    /// may have registered already).
    pub(crate) fn unregister(&self, partition: u32, epoch: u64) {
        let mut partitions = self.partitions();
        if partitions
            .get(&partition)
            .is_some_and(|state| state.epoch == epoch)
        {
            partitions.remove(&partition);
        }
    }

    /// The partitions read now.
    pub(crate) fn held(&self) -> Vec<Arc<PartitionState>> {
        self.partitions().values().cloned().collect()
    }

    pub(crate) fn held_partition(&self, partition: u32) -> Option<Arc<PartitionState>> {
        self.partitions().get(&partition).cloned()
    }
}
