//! The subscription handle: runs the worker's assignments through readers and handlers.

use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use checkpoint_core::source::Source;
use checkpoint_worker::{Assignments, Worker, WorkerStore};
use tokio::task::{JoinHandle, JoinSet};

use crate::discovery::discover_partitions;
use crate::parked_retries::retry_parked_entries;
use crate::reader::read_assignment;
use crate::shared::Shared;
use crate::{OnPoison, SubscriptionBuilder, SubscriptionError, SubscriptionStats};

/// A subscription: a worker that owns its share of the partitions, and for each one a reader
/// that hands entries to the handler; see [the crate doc](crate).
///
/// Call [`shutdown`](Self::shutdown) (or [`run_until`](Self::run_until)) to hand every
/// partition over gracefully; dropping it starts the same shutdown in the background.
pub struct Subscription {
    worker: Worker,
    shared: Arc<Shared>,
    runner: Mutex<Option<JoinHandle<()>>>,
    /// Tasks that live as long as the handle: parked retries, metrics. (They must not outlive
    /// it: the metrics task holds a worker handle, which would keep the worker from shutting
    /// down when the subscription is dropped.)
    background: Vec<JoinHandle<()>>,
}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscription")
            .field("group", &self.shared.group)
            .field("subscription", &self.shared.subscription)
            .field("worker", &self.worker)
            .finish_non_exhaustive()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        for task in &self.background {
            task.abort();
        }
    }
}

impl Subscription {
    /// Settings for a subscription named `subscription` in `group`, reading every partition of
    /// `source` (`0..source.partitions()`) and keeping its checkpoints and leases in `store`.
    pub fn builder(
        store: impl WorkerStore + 'static,
        source: Arc<dyn Source>,
        group: impl Into<String>,
        subscription: impl Into<String>,
    ) -> SubscriptionBuilder {
        SubscriptionBuilder::new(store, source, group.into(), subscription.into())
    }

    /// Settings for a subscription whose handler writes each batch's effects in the
    /// transaction that advances its checkpoint ([`TransactionalHandler`](crate::TransactionalHandler)):
    /// exactly-once effects on a read model in the store's database (PostgreSQL, MySQL, SQLite).
    /// `fingerprint` is the projection's query fingerprint: a checkpoint claimed under another
    /// one is refused (the partition stops, saying so), so a changed projection never
    /// continues from the old one's position.
    pub fn transactional<S>(
        store: Arc<S>,
        source: Arc<dyn Source>,
        group: impl Into<String>,
        subscription: impl Into<String>,
        fingerprint: checkpoint_core::Fingerprint,
    ) -> crate::TransactionalBuilder<S>
    where
        S: checkpoint_core::transactional::TransactionalStore + WorkerStore + 'static,
    {
        crate::TransactionalBuilder::new(
            store,
            source,
            group.into(),
            subscription.into(),
            fingerprint,
        )
    }

    pub(crate) fn run(worker: Worker, assignments: Assignments, shared: Shared) -> Self {
        let parked_store = match &shared.settings.on_poison {
            OnPoison::Park(store) => Some(Arc::clone(store)),
            OnPoison::Stop => None,
        };
        let shared = Arc::new(shared);
        let runner = tokio::spawn(read_assignments(Arc::clone(&shared), assignments));
        let mut background: Vec<JoinHandle<()>> = parked_store
            .map(|store| tokio::spawn(retry_parked_entries(Arc::clone(&shared), store)))
            .into_iter()
            .collect();
        background.push(tokio::spawn(discover_partitions(
            Arc::clone(&shared),
            worker.clone(),
        )));
        #[cfg(feature = "metrics")]
        background.push(tokio::spawn(publish_metrics(
            Arc::clone(&shared),
            worker.clone(),
        )));
        Self {
            worker,
            shared,
            runner: Mutex::new(Some(runner)),
            background,
        }
    }

    /// The worker underneath: its id, committer and stats.
    pub fn worker(&self) -> &Worker {
        &self.worker
    }

    /// What the subscription has done and how far behind each partition is. Cheap: no I/O.
    pub fn stats(&self) -> SubscriptionStats {
        SubscriptionStats::read(&self.shared, self.worker.stats())
    }

    /// Hands every partition over gracefully: each reader stops dispatching, its handlers
    /// finish (up to the worker's drain timeout), the final checkpoint is written, the lease
    /// released; then the worker leaves. Returns when all of that is done.
    ///
    /// # Errors
    ///
    /// The worker's ([`SubscriptionError::Worker`]).
    pub async fn shutdown(&self) -> Result<(), SubscriptionError> {
        let result = self.worker.shutdown().await;
        let runner = self
            .runner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(runner) = runner {
            let _ = runner.await;
        }
        for task in &self.background {
            task.abort();
        }
        Ok(result?)
    }

    /// Runs until `signal` resolves (a `SIGTERM`, a `ctrl_c`), then [shuts
    /// down](Self::shutdown).
    ///
    /// # Errors
    ///
    /// As [`shutdown`](Self::shutdown).
    pub async fn run_until(
        &self,
        signal: impl Future<Output = ()>,
    ) -> Result<(), SubscriptionError> {
        signal.await;
        self.shutdown().await
    }
}

/// A reader per assignment, for as long as the worker hands out assignments; then waits for
/// the last readers.
async fn read_assignments(shared: Arc<Shared>, mut assignments: Assignments) {
    let mut readers = JoinSet::new();
    while let Some(assignment) = assignments.next().await {
        while readers.try_join_next().is_some() {}
        match &shared.batches {
            Some(batches) => {
                readers.spawn(Arc::clone(batches).read(Arc::clone(&shared), assignment))
            }
            None => readers.spawn(read_assignment(Arc::clone(&shared), assignment)),
        };
    }
    while readers.join_next().await.is_some() {}
}

/// Publishes the figures every lag interval, for as long as the subscription lives.
#[cfg(feature = "metrics")]
async fn publish_metrics(shared: Arc<Shared>, worker: Worker) {
    let mut ticks = tokio::time::interval(shared.settings.lag_interval);
    loop {
        ticks.tick().await;
        let stats = SubscriptionStats::read(&shared, worker.stats());
        crate::metrics::publish(&shared.group, &shared.subscription, &stats);
    }
}
