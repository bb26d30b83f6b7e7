//! A store that times every request the workers make of it, by operation: what the scale row
//! reports beside its convergence, so that a fleet that does not converge says which requests
//! were slow or failed (a renew, a read of the whole lease table, a claim).

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use checkpoint_core::{
    Acquired, Checkpoint, CheckpointAdmin, CheckpointStore, Error, HeldLease, LeaseStore,
    LeaseTable, Released,
};

use crate::measure::Samples;
use crate::subject::BenchStore;

/// One operation's requests: how long each took, how many failed, and how many the caller
/// gave up on before their answer (a worker bounds each request by its local deadline).
#[derive(Debug, Default, Clone)]
pub(super) struct Requests {
    pub took: Vec<Duration>,
    pub failed: u64,
    pub abandoned: u64,
}

/// How a request ended.
#[derive(Debug, Clone, Copy)]
enum Outcome {
    Answered,
    Failed,
    Abandoned,
}

/// Records one request when dropped: answered, failed, or abandoned (dropped unanswered).
struct Record<'a> {
    timed: &'a Timed,
    operation: &'static str,
    started: Instant,
    outcome: Outcome,
}

impl Drop for Record<'_> {
    fn drop(&mut self) {
        let took = self.started.elapsed();
        let mut requests = self
            .timed
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let entry = requests.entry(self.operation).or_default();
        entry.took.push(took);
        match self.outcome {
            Outcome::Answered => {}
            Outcome::Failed => entry.failed += 1,
            Outcome::Abandoned => entry.abandoned += 1,
        }
    }
}

/// Every call passed to `store` unchanged, timed from the call to its answer (a wait for a
/// pooled connection included: the worker waits for it too).
pub(super) struct Timed {
    store: Arc<dyn BenchStore>,
    requests: Mutex<BTreeMap<&'static str, Requests>>,
}

impl Timed {
    pub(super) fn new(store: Arc<dyn BenchStore>) -> Self {
        Self {
            store,
            requests: Mutex::default(),
        }
    }

    /// The requests so far, by operation; the record starts again empty.
    pub(super) fn take(&self) -> BTreeMap<&'static str, Requests> {
        std::mem::take(&mut *self.requests.lock().unwrap_or_else(PoisonError::into_inner))
    }

    async fn time<T>(
        &self,
        operation: &'static str,
        request: impl Future<Output = Result<T, Error>>,
    ) -> Result<T, Error> {
        let mut record = Record {
            timed: self,
            operation,
            started: Instant::now(),
            outcome: Outcome::Abandoned,
        };
        let result = request.await;
        record.outcome = if result.is_ok() {
            Outcome::Answered
        } else {
            Outcome::Failed
        };
        result
    }
}

/// The requests of each operation: count, failures, abandoned, p50, p99, max.
pub(super) fn describe(requests: &BTreeMap<&'static str, Requests>) -> String {
    requests
        .iter()
        .map(|(operation, requests)| {
            let max = requests.took.iter().max().copied().unwrap_or_default();
            let samples = Samples::from(requests.took.clone());
            format!(
                "{operation} {} ({} failed, {} abandoned) p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
                samples.len(),
                requests.failed,
                requests.abandoned,
                samples.p50().as_secs_f64() * 1e3,
                samples.p99().as_secs_f64() * 1e3,
                max.as_secs_f64() * 1e3
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[async_trait]
impl CheckpointStore for Timed {
    async fn list(&self, group: &str) -> Result<Vec<Checkpoint>, Error> {
        self.time("list", self.store.list(group)).await
    }

    async fn load(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> Result<Option<u64>, Error> {
        self.time("load", self.store.load(group, subscription, partition))
            .await
    }

    async fn save(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<(), Error> {
        let request = self.store.save(group, subscription, partition, position);
        self.time("save", request).await
    }

    async fn save_all(&self, group: &str, checkpoints: &[Checkpoint]) -> Result<(), Error> {
        self.time("save_all", self.store.save_all(group, checkpoints))
            .await
    }
}

#[async_trait]
impl CheckpointAdmin for Timed {
    async fn groups(&self) -> Result<Vec<String>, Error> {
        self.store.groups().await
    }

    async fn start_at(
        &self,
        group: &str,
        subscription: &str,
        positions: &[(u32, u64)],
    ) -> Result<(), Error> {
        self.store.start_at(group, subscription, positions).await
    }

    async fn retire(&self, group: &str, subscription: &str) -> Result<(), Error> {
        self.store.retire(group, subscription).await
    }

    async fn retired(&self, group: &str) -> Result<Vec<String>, Error> {
        self.store.retired(group).await
    }

    async fn purge(&self, group: &str, subscription: &str) -> Result<(), Error> {
        self.store.purge(group, subscription).await
    }
}

#[async_trait]
impl LeaseStore for Timed {
    async fn acquire(
        &self,
        group: &str,
        subscription: &str,
        owner: &str,
        partitions: &[u32],
        duration: Duration,
    ) -> Result<Acquired, Error> {
        let request = self
            .store
            .acquire(group, subscription, owner, partitions, duration);
        // A join (nothing asked for) apart from a claim.
        let operation = if partitions.is_empty() {
            "join"
        } else {
            "acquire"
        };
        self.time(operation, request).await
    }

    async fn renew(
        &self,
        group: &str,
        subscription: &str,
        owner: &str,
        duration: Duration,
    ) -> Result<Vec<HeldLease>, Error> {
        let request = self.store.renew(group, subscription, owner, duration);
        self.time("renew", request).await
    }

    async fn release(
        &self,
        group: &str,
        subscription: &str,
        owner: &str,
        partitions: &[u32],
    ) -> Result<Released, Error> {
        let request = self.store.release(group, subscription, owner, partitions);
        self.time("release", request).await
    }

    async fn leave(&self, group: &str, subscription: &str, owner: &str) -> Result<Vec<u32>, Error> {
        self.time("leave", self.store.leave(group, subscription, owner))
            .await
    }

    async fn leases(&self, group: &str, subscription: &str) -> Result<LeaseTable, Error> {
        self.time("leases", self.store.leases(group, subscription))
            .await
    }

    async fn request_handover(
        &self,
        group: &str,
        subscription: &str,
        requester: &str,
        partitions: &[u32],
    ) -> Result<(), Error> {
        let request = self
            .store
            .request_handover(group, subscription, requester, partitions);
        self.time("request_handover", request).await
    }
}
