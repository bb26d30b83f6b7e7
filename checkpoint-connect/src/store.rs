//! [`Store`]: what [`open`](crate::open) returns.

use std::fmt;

use checkpoint_core::parked::ParkedStore;
use checkpoint_core::{CheckpointAdmin, CheckpointStore, ExclusiveCheckpointStore, LeaseStore};

/// Every operation a store of the workspace has: checkpoints, the exclusive mode, the
/// operations API, leases and parked entries. [`open`](crate::open) returns one of these.
pub trait Store:
    CheckpointStore
    + ExclusiveCheckpointStore
    + CheckpointAdmin
    + LeaseStore
    + ParkedStore
    + fmt::Debug
    + Send
    + Sync
{
}

impl<T> Store for T where
    T: CheckpointStore
        + ExclusiveCheckpointStore
        + CheckpointAdmin
        + LeaseStore
        + ParkedStore
        + fmt::Debug
        + Send
        + Sync
        + ?Sized
{
}
