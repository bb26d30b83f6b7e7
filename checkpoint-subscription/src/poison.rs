//! What happens to an entry whose handler failed on every retry.

use std::fmt;
use std::sync::Arc;

use checkpoint_core::parked::ParkedStore;

/// What a subscription does with a **poison entry**: one whose handler failed on its last
/// [retry](crate::Retry). Nothing is ever skipped silently.
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum OnPoison {
    /// Stop the partition: dispatch nothing more on it, keep its checkpoint below the entry
    /// (the next owner, or this worker after a restart, runs it again), and say so:
    /// [`PartitionStatus::stopped_at`](crate::PartitionStatus::stopped_at), an ERROR log. The
    /// worker keeps the partition's lease, so no other worker runs into the same entry, until
    /// a handover or a shutdown. The default.
    #[default]
    Stop,
    /// Record the entry in a [`ParkedStore`] (group, subscription, partition, position, the
    /// last error, the attempts) and go on with the next: the checkpoint moves past it. The
    /// record is listed by `checkpoint parked GROUP`; a retry asked for there
    /// (`checkpoint parked retry …`) is run by the subscription that holds the partition.
    /// Parking is retried until the store takes it: the checkpoint never passes an entry that
    /// is neither handled nor parked. A retry asked for re-reads the entry from the source and
    /// runs the handler on it alone (a transactional handler in a transaction of its own,
    /// without the checkpoint, which has passed it), then unparks it: at least once, since a
    /// crash between the handler's success and the unpark runs it again at the next retry.
    Park(Arc<dyn ParkedStore>),
}

impl OnPoison {
    /// [`OnPoison::Park`] in `store` (usually the checkpoint store itself: every store of the
    /// workspace keeps parked entries).
    pub fn park(store: impl ParkedStore + 'static) -> Self {
        Self::Park(Arc::new(store))
    }
}

impl fmt::Debug for OnPoison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stop => f.write_str("Stop"),
            Self::Park(_) => f.write_str("Park(..)"),
        }
    }
}
