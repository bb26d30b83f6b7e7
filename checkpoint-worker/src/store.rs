//! What a worker needs of a store: checkpoints and leases, in the same store.

use checkpoint_core::{CheckpointStore, LeaseStore};

/// A store a [`Worker`](crate::Worker) runs on: one that keeps both the checkpoint contract and
/// the lease contract (`CONTRACT.md`). Every store of the workspace is one, and so is any store
/// of yours that implements both traits: this trait is implemented for all of them.
pub trait WorkerStore: CheckpointStore + LeaseStore {}

impl<S: CheckpointStore + LeaseStore + ?Sized> WorkerStore for S {}
