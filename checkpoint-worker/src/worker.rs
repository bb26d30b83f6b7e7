//! The worker handle and the stream of assignments.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use checkpoint_committer::Committer;
use futures_util::Stream;
use tokio::sync::{mpsc, oneshot};

use crate::event::Event;
use crate::shared::Shared;
use crate::{Assignment, WorkerBuilder, WorkerError, WorkerStats, WorkerStore};

/// A worker that owns some of a subscription's partitions through leases in the store; see
/// [the crate doc](crate).
///
/// Cheap to clone; every clone is the same worker. Call [`shutdown`](Self::shutdown) to hand
/// every partition over gracefully and leave; dropping the last handle starts the same
/// shutdown in the background.
#[derive(Clone)]
pub struct Worker {
    handle: Arc<Handle>,
}

/// The last handle's drop starts a graceful shutdown.
struct Handle {
    shared: Arc<Shared>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        let _ = self.shared.events.send(Event::Shutdown(None));
    }
}

impl fmt::Debug for Worker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shared = &self.handle.shared;
        f.debug_struct("Worker")
            .field("id", &shared.worker_id)
            .field("group", &shared.group)
            .field("subscription", &shared.subscription)
            .field("partitions", &shared.partitions())
            .finish_non_exhaustive()
    }
}

impl Worker {
    /// Settings for a worker of `subscription` in `group`, whose partitions are `0..partitions`,
    /// over `store`: any store that keeps both the checkpoint and the lease contract (every
    /// store of the workspace, or yours).
    pub fn builder(
        store: impl WorkerStore + 'static,
        group: impl Into<String>,
        subscription: impl Into<String>,
        partitions: u32,
    ) -> WorkerBuilder {
        WorkerBuilder::new(
            Arc::new(store),
            group.into(),
            subscription.into(),
            partitions,
        )
    }

    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self {
            handle: Arc::new(Handle { shared }),
        }
    }

    /// The worker's owner id in the store.
    pub fn id(&self) -> &str {
        &self.handle.shared.worker_id
    }

    /// The committer that writes the partitions' checkpoints.
    pub fn committer(&self) -> &Committer {
        &self.handle.shared.committer
    }

    /// The partition count the worker leases now: partitions `0..partitions()`.
    pub fn partitions(&self) -> u32 {
        self.handle.shared.partitions()
    }

    /// Raises the partition count to `count`, for a log that took more partitions while the
    /// worker runs (`Source::discover_partitions`; a subscription calls this for you). The
    /// worker balances at once: it claims the new partitions it is owed, as a worker below
    /// its share does, and hands over only what the new share per worker asks of it (when the
    /// shares grow, nothing already held moves). A new partition without a checkpoint starts
    /// at the [start position](WorkerBuilder::start_position). A count at or below the
    /// current one changes nothing: the count never decreases. Returns the count now in force.
    ///
    /// Every worker of the subscription must be told (each subscription discovers on its own):
    /// until one is, it neither claims nor counts the new partitions, and a partition only
    /// it would take waits for it.
    ///
    /// # Errors
    ///
    /// [`WorkerError::Settings`] above [`MAX_LEASE_PARTITIONS`](checkpoint_core::lease::MAX_LEASE_PARTITIONS)
    /// (nothing changes); [`WorkerError::Stopped`] once the worker has stopped.
    pub fn grow_partitions(&self, count: u32) -> Result<u32, WorkerError> {
        let shared = &self.handle.shared;
        if count as usize > checkpoint_core::lease::MAX_LEASE_PARTITIONS {
            return Err(WorkerError::Settings(format!(
                "{count} partitions: a worker leases at most {}",
                checkpoint_core::lease::MAX_LEASE_PARTITIONS
            )));
        }
        if shared.finished.load(Ordering::Acquire) {
            return Err(WorkerError::Stopped);
        }
        let before = shared.raise_partitions(count);
        if count > before {
            tracing::info!(worker = %shared.worker_id, from = before, to = count, "the partition count grew");
            if shared.events.send(Event::Grown).is_err() {
                return Err(WorkerError::Stopped);
            }
        }
        Ok(before.max(count))
    }

    /// What the worker holds and has done. Cheap: no I/O.
    pub fn stats(&self) -> WorkerStats {
        WorkerStats::read(&self.handle.shared)
    }

    /// Hands every partition over gracefully (stop signal, drain up to the drain timeout, the
    /// committer's final write, the release, in that order), ends the worker's heartbeat so the
    /// others rebalance at once, and shuts down the committer the worker started. Returns when
    /// all of that is done. A second call returns `Ok` at once.
    ///
    /// # Errors
    ///
    /// [`WorkerError::Leave`] when ending the heartbeat failed (every partition was released
    /// or let go before), [`WorkerError::Stopped`] when the worker had stopped on an error
    /// before (a retired subscription).
    pub async fn shutdown(&self) -> Result<(), WorkerError> {
        let shared = &self.handle.shared;
        if shared.finished.load(Ordering::Acquire) {
            return self.finished_before();
        }
        let (reply, answer) = oneshot::channel();
        if shared.events.send(Event::Shutdown(Some(reply))).is_err() {
            return Err(WorkerError::Stopped);
        }
        match answer.await {
            Ok(result) => result,
            // The keeper finished before it saw this request (another shutdown, or a refusal).
            Err(_) if shared.finished.load(Ordering::Acquire) => self.finished_before(),
            Err(_) => Err(WorkerError::Stopped),
        }
    }

    /// What a shutdown of a worker whose keeper had already finished returns: `Ok` after an
    /// earlier shutdown, [`WorkerError::Stopped`] when it stopped on the store's refusal (the
    /// refusal itself went to whoever was waiting then, if anyone, and to the logs).
    fn finished_before(&self) -> Result<(), WorkerError> {
        match self.handle.shared.refused.load(Ordering::Acquire) {
            true => Err(WorkerError::Stopped),
            false => Ok(()),
        }
    }
}

impl Worker {
    /// Stops the worker as a crash would (feature `test-hooks`, for tests and benchmarks): its
    /// lease keeper stops at once, with no handover, no release, no leave. Its leases expire
    /// in the store. Its assignments' [`stopped`](crate::Assignment::stopped) resolves to
    /// [`Stop::Lost`](crate::Stop::Lost) (the keeper is gone); in a test, abort the
    /// application's tasks too, as a crash would.
    #[cfg(feature = "test-hooks")]
    #[doc(hidden)]
    pub fn crash(&self) {
        let task = self
            .handle
            .shared
            .keeper_task
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(task) = task {
            task.abort();
        }
    }
}

/// The partitions handed to the application, as the worker acquires them: from
/// [`WorkerBuilder::start`]. Ends after the worker shut down.
///
/// Read it with the inherent [`next`](Self::next), or as a [`Stream`] of [`Assignment`]s
/// (with `StreamExt`'s combinators: `for_each_concurrent`, `take`, a `select` beside other
/// streams). Both read the same queue: an assignment is yielded once, by whichever is polled.
/// Once it has yielded `None` it yields `None` again on every poll.
#[derive(Debug)]
pub struct Assignments {
    pub(crate) receiver: mpsc::UnboundedReceiver<Assignment>,
}

impl Assignments {
    /// The next partition acquired, or `None` once the worker has stopped.
    ///
    /// The same as the [`Stream`] implementation's `StreamExt::next`, without importing the
    /// trait (an inherent method wins over the trait's, so either import works). Cancel safe:
    /// dropped in a `select!` before it resolved, it loses no assignment.
    pub async fn next(&mut self) -> Option<Assignment> {
        self.receiver.recv().await
    }
}

/// The stream of [`Assignments`]: each partition acquired, then the end once the worker has
/// stopped.
impl Stream for Assignments {
    type Item = Assignment;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Assignment>> {
        self.receiver.poll_recv(cx)
    }
}
