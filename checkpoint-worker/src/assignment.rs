//! What the application is handed for each partition the worker owns, and the signal that
//! tells it to stop.

use std::fmt;
use std::sync::Arc;

use checkpoint_committer::Partition;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::event::Event;
use crate::shared::Shared;

/// Why an [`Assignment`] must stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Stop {
    /// Graceful: another worker takes the partition over (a rebalance, or this worker shuts
    /// down). Stop dispatching now, let the handlers finish the entries in flight, then drop
    /// the assignment: the worker then writes the partition's final checkpoint and releases
    /// the lease, and the next owner resumes exactly there, redoing nothing. Entries still
    /// running at `drain_deadline` are abandoned (the worker goes ahead) and redone.
    Handover {
        /// When the worker stops waiting for the drop.
        drain_deadline: Instant,
    },
    /// The lease is gone: it could not be renewed before the worker's local deadline, or the
    /// store said it was no longer held. Stop at once: another worker may own the partition
    /// already. What this worker completes from now on is not written by it (its committer
    /// handle refuses); a late write is harmless by the store's contract.
    Lost,
}

/// One partition this worker owns: where to resume, under which epoch, the committer handle to
/// report progress through, and the signal to stop.
///
/// Read the partition from [`resume_at`](Self::resume_at); for each entry, check
/// [`is_held`](Self::is_held), then [`dispatched`](Partition::dispatched) it on the
/// [`committer`](Self::committer) handle and hand it to a handler, which calls
/// [`completed`](Partition::completed). When [`stopped`](Self::stopped) resolves, stop
/// dispatching; on [`Stop::Handover`] wait for the handlers, then **drop the assignment** (or
/// call [`finish`](Self::finish)): that is the signal that the partition is drained.
pub struct Assignment {
    pub(crate) partition: u32,
    pub(crate) epoch: u64,
    pub(crate) resume_at: u64,
    pub(crate) committer: Partition,
    pub(crate) stop: watch::Receiver<Option<Stop>>,
    pub(crate) shared: Arc<Shared>,
}

impl fmt::Debug for Assignment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Assignment")
            .field("subscription", &self.shared.subscription)
            .field("partition", &self.partition)
            .field("epoch", &self.epoch)
            .field("resume_at", &self.resume_at)
            .field("stop", &*self.stop.borrow())
            .finish_non_exhaustive()
    }
}

impl Assignment {
    /// The partition.
    pub fn partition(&self) -> u32 {
        self.partition
    }

    /// The subscription.
    pub fn subscription(&self) -> &str {
        &self.shared.subscription
    }

    /// The lease's epoch: a fencing token for your own sinks (see
    /// [`HeldLease::epoch`](checkpoint_core::HeldLease::epoch)). Every new owner of the
    /// partition has a higher one.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The first position to read: the stored checkpoint, or the worker's
    /// [`start_position`](crate::WorkerBuilder::start_position) when the partition has none.
    pub fn resume_at(&self) -> u64 {
        self.resume_at
    }

    /// The committer's handle of the partition: [`dispatched`](Partition::dispatched) and
    /// [`skipped`](Partition::skipped) in log order, [`completed`](Partition::completed) from
    /// any task. Clone it for the handlers.
    pub fn committer(&self) -> &Partition {
        &self.committer
    }

    /// Whether the worker may still dispatch on this partition: no stop was signalled and its
    /// local deadline has not passed. Check it before each dispatch: a worker that was frozen past
    /// its deadline (a long pause) finds out here before it acts, even before its lease keeper
    /// has run again.
    pub fn is_held(&self) -> bool {
        if self.stop.borrow().is_some() {
            return false;
        }
        self.shared.deadline.holds_at(Instant::now())
    }

    /// Whether the lease is still this worker's by its local deadline and was not lost, a
    /// handover in progress included: the worker keeps renewing a partition while it drains,
    /// and releases it only after the final write. Handlers that finish entries during a drain
    /// check this before their effect (a worker frozen in the middle of a drain finds out here);
    /// the reader checks [`is_held`](Self::is_held) before each dispatch instead.
    pub fn lease_valid(&self) -> bool {
        if matches!(*self.stop.borrow(), Some(Stop::Lost)) {
            return false;
        }
        self.shared.deadline.holds_at(Instant::now())
    }

    /// The stop signalled so far, if any (no waiting).
    pub fn stop(&self) -> Option<Stop> {
        *self.stop.borrow()
    }

    /// Waits until the worker says stop, and says why. Resolves to [`Stop::Lost`] if the
    /// worker is gone.
    pub async fn stopped(&self) -> Stop {
        let mut stop = self.stop.clone();
        match stop.wait_for(Option::is_some).await {
            Ok(signal) => signal.unwrap_or(Stop::Lost),
            Err(_) => Stop::Lost,
        }
    }

    /// Says the partition is drained (the same as dropping the assignment).
    pub fn finish(self) {}
}

impl Drop for Assignment {
    fn drop(&mut self) {
        // The lease keeper hears it: during a handover, the partition is drained. (It is gone
        // only when the whole worker is, and then nobody waits for the drop.)
        let _ = self.shared.events.send(Event::Dropped {
            partition: self.partition,
            epoch: self.epoch,
        });
    }
}
