//! The value a store keeps: one position per (subscription, partition) of a group.

/// One checkpoint of a group: how far `subscription` has completed `partition`.
///
/// The group is not part of the value: every operation of
/// [`CheckpointStore`](crate::CheckpointStore) takes it as its own argument, and
/// [`list`](crate::CheckpointStore::list) returns the checkpoints of one group.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Checkpoint {
    /// The subscription within the group.
    pub subscription: String,
    /// The partition of the log the subscription reads.
    pub partition: u32,
    /// The lowest log position up to which every entry of the partition is completed.
    pub position: u64,
}

impl Checkpoint {
    /// A checkpoint of `subscription` on `partition` at `position`.
    pub fn new(subscription: impl Into<String>, partition: u32, position: u64) -> Self {
        Self {
            subscription: subscription.into(),
            partition,
            position,
        }
    }
}
