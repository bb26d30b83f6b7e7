//! A worker under a run-time user beside an operator: the PostgreSQL and MySQL security tests'
//! store for the lease kit under least privilege.

use std::time::Duration;

use async_trait::async_trait;
use checkpoint_core::{
    Acquired, Checkpoint, CheckpointAdmin, CheckpointStore, Error, HeldLease, LeaseStore,
    LeaseTable, Released,
};

/// Two stores on one table, as a deployment has them: a worker's, connected as a user with the
/// run-time privileges only, and an operator's. Checkpoints and leases go to the worker's
/// store; the operations API, which the lease cases call too (`retire`, `purge`) and the
/// run-time user may not run, to the operator's.
///
/// Not a layer: it sends each call to one of two stores, where a layer runs around the calls
/// of one.
#[derive(Debug, Clone)]
pub struct RuntimeWorker<S> {
    worker: S,
    operator: S,
}

impl<S> RuntimeWorker<S> {
    /// `worker` for checkpoints and leases, `operator` for the operations API.
    pub fn new(worker: S, operator: S) -> Self {
        Self { worker, operator }
    }

    /// The store under the run-time user.
    pub fn worker(&self) -> &S {
        &self.worker
    }

    /// The operator's store.
    pub fn operator(&self) -> &S {
        &self.operator
    }
}

/// Checkpoints are the worker's, under the run-time user.
#[async_trait]
impl<S: CheckpointStore> CheckpointStore for RuntimeWorker<S> {
    async fn list(&self, group: &str) -> Result<Vec<Checkpoint>, Error> {
        self.worker.list(group).await
    }

    async fn load(&self, group: &str, sub: &str, partition: u32) -> Result<Option<u64>, Error> {
        self.worker.load(group, sub, partition).await
    }

    async fn save(&self, group: &str, sub: &str, partition: u32, at: u64) -> Result<(), Error> {
        self.worker.save(group, sub, partition, at).await
    }

    async fn save_all(&self, group: &str, checkpoints: &[Checkpoint]) -> Result<(), Error> {
        self.worker.save_all(group, checkpoints).await
    }
}

/// Leases are the worker's, under the run-time user.
#[async_trait]
impl<S: LeaseStore> LeaseStore for RuntimeWorker<S> {
    async fn acquire(
        &self,
        group: &str,
        sub: &str,
        owner: &str,
        partitions: &[u32],
        duration: Duration,
    ) -> Result<Acquired, Error> {
        let worker = &self.worker;
        worker
            .acquire(group, sub, owner, partitions, duration)
            .await
    }

    async fn renew(
        &self,
        group: &str,
        sub: &str,
        owner: &str,
        duration: Duration,
    ) -> Result<Vec<HeldLease>, Error> {
        self.worker.renew(group, sub, owner, duration).await
    }

    async fn release(
        &self,
        group: &str,
        sub: &str,
        owner: &str,
        partitions: &[u32],
    ) -> Result<Released, Error> {
        self.worker.release(group, sub, owner, partitions).await
    }

    async fn leave(&self, group: &str, sub: &str, owner: &str) -> Result<Vec<u32>, Error> {
        self.worker.leave(group, sub, owner).await
    }

    async fn leases(&self, group: &str, sub: &str) -> Result<LeaseTable, Error> {
        self.worker.leases(group, sub).await
    }

    async fn request_handover(
        &self,
        group: &str,
        sub: &str,
        requester: &str,
        partitions: &[u32],
    ) -> Result<(), Error> {
        let worker = &self.worker;
        worker
            .request_handover(group, sub, requester, partitions)
            .await
    }
}

/// The operations API is the operator's.
#[async_trait]
impl<S: CheckpointAdmin> CheckpointAdmin for RuntimeWorker<S> {
    async fn groups(&self) -> Result<Vec<String>, Error> {
        self.operator.groups().await
    }

    async fn start_at(&self, group: &str, sub: &str, at: &[(u32, u64)]) -> Result<(), Error> {
        self.operator.start_at(group, sub, at).await
    }

    async fn retire(&self, group: &str, subscription: &str) -> Result<(), Error> {
        self.operator.retire(group, subscription).await
    }

    async fn retired(&self, group: &str) -> Result<Vec<String>, Error> {
        self.operator.retired(group).await
    }

    async fn purge(&self, group: &str, subscription: &str) -> Result<(), Error> {
        self.operator.purge(group, subscription).await
    }
}
