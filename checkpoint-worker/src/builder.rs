//! The settings of a worker, and starting one.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use checkpoint_committer::Committer;
use checkpoint_core::lease::{MAX_LEASE_PARTITIONS, safe_duration};
use checkpoint_core::validation;

use crate::keeper::Keeper;
use crate::settings::Settings;
use crate::shared::Shared;
use crate::{Assignments, Worker, WorkerError, WorkerStore};

/// The lease duration unless [`WorkerBuilder::lease_duration`] says otherwise: a crashed
/// worker's partitions are owned again within this plus one renew interval.
pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(10);

/// How long a partition being handed over waits for its handlers unless
/// [`WorkerBuilder::drain_timeout`] says otherwise.
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// The renew interval is the lease duration divided by this unless
/// [`WorkerBuilder::renew_interval`] says otherwise: five tries before a lease expires.
pub const DEFAULT_RENEWS_PER_LEASE: u32 = 5;

/// Settings of a [`Worker`], from [`Worker::builder`].
pub struct WorkerBuilder {
    store: Arc<dyn WorkerStore>,
    group: String,
    subscription: String,
    partitions: u32,
    worker_id: Option<String>,
    lease_duration: Duration,
    renew_interval: Option<Duration>,
    drain_timeout: Duration,
    start_position: u64,
    committer: Option<Committer>,
}

impl fmt::Debug for WorkerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkerBuilder")
            .field("group", &self.group)
            .field("subscription", &self.subscription)
            .field("partitions", &self.partitions)
            .field("worker_id", &self.worker_id)
            .field("lease_duration", &self.lease_duration)
            .field("renew_interval", &self.renew_interval)
            .field("drain_timeout", &self.drain_timeout)
            .field("start_position", &self.start_position)
            .field("committer", &self.committer.is_some())
            .finish_non_exhaustive()
    }
}

impl WorkerBuilder {
    pub(crate) fn new(
        store: Arc<dyn WorkerStore>,
        group: String,
        subscription: String,
        partitions: u32,
    ) -> Self {
        Self {
            store,
            group,
            subscription,
            partitions,
            worker_id: None,
            lease_duration: DEFAULT_LEASE_DURATION,
            renew_interval: None,
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
            start_position: 0,
            committer: None,
        }
    }

    /// The worker's owner id in the store; a name like a group's. Give each process a new one
    /// when it starts (an owner id belongs to one store instance at a time, `CONTRACT.md`).
    /// Default: `worker-{process id}-{a random number}`.
    pub fn worker_id(mut self, id: impl Into<String>) -> Self {
        self.worker_id = Some(id.into());
        self
    }

    /// How long a lease lasts without a renew (default [`DEFAULT_LEASE_DURATION`]). A crashed
    /// worker's partitions are owned again within this plus one renew interval; a worker that
    /// cannot reach the store stops its partitions within it.
    pub fn lease_duration(mut self, duration: Duration) -> Self {
        self.lease_duration = duration;
        self
    }

    /// How often the worker renews its leases and looks at the table to balance (default: the
    /// lease duration / [`DEFAULT_RENEWS_PER_LEASE`]). Each round costs two store requests at
    /// rest, whatever the number of partitions; a shorter interval sees free partitions sooner
    /// (a graceful handover completes within one interval after the drain).
    pub fn renew_interval(mut self, interval: Duration) -> Self {
        self.renew_interval = Some(interval);
        self
    }

    /// How long a partition being handed over waits for the application to drop its
    /// [`Assignment`](crate::Assignment) (its handlers done) before the final write and the
    /// release go ahead anyway (default [`DEFAULT_DRAIN_TIMEOUT`]). Entries still running
    /// then are redone by the next owner. The final write that follows is given the larger of
    /// this and the lease duration (see the crate doc, "Graceful handover").
    pub fn drain_timeout(mut self, timeout: Duration) -> Self {
        self.drain_timeout = timeout;
        self
    }

    /// Where a partition with no stored checkpoint starts (default 0).
    pub fn start_position(mut self, position: u64) -> Self {
        self.start_position = position;
        self
    }

    /// The committer that writes the partitions' checkpoints; it must be of the worker's group
    /// and over the same store. Default: one the worker starts with the committer's defaults
    /// and shuts down with itself. A committer given here is not shut down by the worker.
    pub fn committer(mut self, committer: Committer) -> Self {
        self.committer = Some(committer);
        self
    }

    /// Checks the settings, joins the subscription in the background and returns the worker
    /// with the stream of its [`Assignments`]. Must be called within a tokio runtime.
    ///
    /// # Errors
    ///
    /// [`WorkerError::Invalid`] for names the store would refuse or a lease duration out of
    /// range; [`WorkerError::Settings`] for no partitions, more than
    /// [`MAX_LEASE_PARTITIONS`], a zero drain timeout, or a renew interval longer than a third
    /// of the lease's safe duration; [`WorkerError::Committer`] for a committer of another
    /// group; [`WorkerError::NoRuntime`] outside a tokio runtime.
    pub fn start(self) -> Result<(Worker, Assignments), WorkerError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| WorkerError::NoRuntime)?;
        let worker_id = self.worker_id.clone().unwrap_or_else(default_worker_id);
        let settings = self.settings(&worker_id)?;
        let (committer, own_committer) = match self.committer {
            Some(committer) if committer.group() != self.group => {
                return Err(WorkerError::Settings(format!(
                    "the committer writes group {:?}, the worker leases group {:?}",
                    committer.group(),
                    self.group
                )));
            }
            Some(committer) => (committer, false),
            None => (
                Committer::builder(Arc::clone(&self.store), self.group.clone()).start()?,
                true,
            ),
        };
        let (shared, events) = Shared::new(
            self.store,
            committer,
            own_committer,
            self.group,
            self.subscription,
            self.partitions,
            worker_id,
            settings,
        );
        let (keeper, assignments) = Keeper::new(Arc::clone(&shared), events);
        let task = runtime.spawn(keeper.run());
        *shared
            .keeper_task
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(task.abort_handle());
        Ok((Worker::new(shared), assignments))
    }

    fn settings(&self, worker_id: &str) -> Result<Settings, WorkerError> {
        validation::validate_acquire(
            &self.group,
            &self.subscription,
            worker_id,
            &[],
            self.lease_duration,
        )
        .map_err(WorkerError::Invalid)?;
        validation::validate_save(&self.group, &self.subscription, self.start_position)
            .map_err(WorkerError::Invalid)?;
        if self.partitions == 0 || self.partitions as usize > MAX_LEASE_PARTITIONS {
            return Err(WorkerError::Settings(format!(
                "{} partitions: a worker leases 1 to {MAX_LEASE_PARTITIONS}",
                self.partitions
            )));
        }
        let safe = safe_duration(self.lease_duration);
        let renew_interval = self
            .renew_interval
            .unwrap_or(self.lease_duration / DEFAULT_RENEWS_PER_LEASE);
        // Three tries before the local deadline: one slow or failed renew never costs the
        // partitions.
        if renew_interval.is_zero() || renew_interval > safe / 3 {
            return Err(WorkerError::Settings(format!(
                "renew interval {renew_interval:?}: it must be above zero and at most a third of the lease's safe duration ({:?} for a {:?} lease)",
                safe / 3,
                self.lease_duration
            )));
        }
        if self.drain_timeout.is_zero() {
            return Err(WorkerError::Settings(
                "a drain timeout of zero: handlers could never finish".to_owned(),
            ));
        }
        Ok(Settings {
            lease_duration: self.lease_duration,
            renew_interval,
            drain_timeout: self.drain_timeout,
            start_position: self.start_position,
        })
    }
}

/// `worker-{pid}-{random}`: unique per process start, so that a restarted worker never reuses
/// the id of its previous run.
fn default_worker_id() -> String {
    format!("worker-{}-{:08x}", std::process::id(), fastrand::u32(..))
}
