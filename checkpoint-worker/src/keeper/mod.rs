//! The lease keeper: one task per worker that renews, balances, hands partitions out to the
//! application and takes them back. Beside it runs the [renewer](renewer), a task of its own
//! (aborted with the keeper's) that sends the heartbeat's renew every renew interval whatever
//! else is under way; the keeper reads the table, claims, asks, and finishes handovers (their
//! final writes run in the background, so a slow store delays only the handover that waits for
//! them). Every lease
//! request but the renews is made by the rest of the keeper, in order, each bounded by the
//! local deadline, so its view of what it holds is never behind a request it made; a renew's
//! answer is judged only against what was held when it was sent.

mod backoff;
mod handover;
mod ownership;
mod renewer;
mod round;

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::Arc;

use checkpoint_core::{Error, Operation};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

use crate::event::Event;
use crate::shared::{Counters, Shared};
use crate::view::{HeldPartition, View};
use crate::{Assignment, Assignments, Stop, WorkerError};
use renewer::{Renewal, Renewer};

/// A partition the keeper holds.
#[derive(Debug)]
struct Held {
    epoch: u64,
    stop: watch::Sender<Option<Stop>>,
    /// When the reply that granted it arrived: a renew sent before that may not list it yet.
    granted_at: Instant,
    /// The application dropped its assignment.
    dropped: bool,
    /// Being handed over: the drain deadline.
    leaving: Option<Instant>,
    /// Drained; its final write is running, and the release follows it.
    writing: bool,
}

/// Where a worker is in its cold start: the rounds after a join that only look at the table
/// while no live worker holds a partition (see `round.rs`, `cold_start`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ColdStart {
    /// The next round is the first since joining.
    FirstLook,
    /// The first look found no other live worker: the next round, a settle later, looks again.
    Settling,
    /// Past the cold start: rounds balance.
    Over,
}

/// The keeper's state; see the module doc.
pub(crate) struct Keeper {
    shared: Arc<Shared>,
    events: mpsc::UnboundedReceiver<Event>,
    assignments: mpsc::UnboundedSender<Assignment>,
    /// The renewer's answers, and (until `run` hands it over) where it sends them.
    renewals: mpsc::UnboundedReceiver<Renewal>,
    renewals_out: Option<mpsc::UnboundedSender<Renewal>>,
    /// How many fencing `NotHeld`s the keeper has handled (everything granted before each let
    /// go), and whether anything granted since is still held: the renewer's fence lifts at
    /// the count of those it passed on.
    rejoin: tokio::sync::watch::Sender<renewer::Rejoin>,
    held: BTreeMap<u32, Held>,
    /// Final writes of handovers under way: each resolves to the partitions it wrote, with the
    /// epochs they were handed over under (aborted with the keeper).
    writing: tokio::task::JoinSet<Vec<(u32, u64)>>,
    /// Handovers other owners asked of this worker, by partition, from the last renew.
    requested: BTreeMap<u32, String>,
    /// Partitions this worker asked for and has not been granted yet.
    asked: BTreeSet<u32>,
    asked_at: Option<Instant>,
    /// Whether the heartbeat is live (a join succeeded and no renew said NotHeld since).
    joined: bool,
    /// Where the worker is in a cold start (see `round.rs`, `cold_start`).
    cold: ColdStart,
    /// When the last release request answered: a renew sent before may still list what it
    /// released, which is no stray.
    released_at: Option<Instant>,
    /// Lease requests of the keeper (not the renewer's) that failed in a row: the rounds
    /// that follow something moving back off by it.
    failures: u32,
    /// How long the last round took.
    last_round: std::time::Duration,
    /// Set once a shutdown began: who waits for it.
    shutdown: Option<Vec<oneshot::Sender<Result<(), WorkerError>>>>,
    /// The store refused the subscription for good (retired).
    refused: Option<Error>,
    unowned_since: BTreeMap<u32, Instant>,
    live_workers: usize,
    /// Where this worker starts in a list of free partitions, so that workers claiming at the
    /// same time mostly claim different ones.
    rotation: usize,
}

impl Keeper {
    pub(crate) fn new(
        shared: Arc<Shared>,
        events: mpsc::UnboundedReceiver<Event>,
    ) -> (Self, Assignments) {
        let (sender, receiver) = mpsc::unbounded_channel();
        let (renewals_out, renewals) = mpsc::unbounded_channel();
        let rotation = shared.worker_id.bytes().fold(0usize, |hash, byte| {
            hash.wrapping_mul(31).wrapping_add(byte.into())
        });
        let keeper = Self {
            shared,
            events,
            assignments: sender,
            renewals,
            renewals_out: Some(renewals_out),
            rejoin: tokio::sync::watch::Sender::new(renewer::Rejoin::default()),
            held: BTreeMap::new(),
            writing: tokio::task::JoinSet::new(),
            requested: BTreeMap::new(),
            asked: BTreeSet::new(),
            asked_at: None,
            joined: false,
            cold: ColdStart::Over,
            released_at: None,
            failures: 0,
            last_round: std::time::Duration::ZERO,
            shutdown: None,
            refused: None,
            unowned_since: BTreeMap::new(),
            live_workers: 0,
            rotation,
        };
        (keeper, Assignments { receiver })
    }

    /// Runs until the worker has shut down (or the store refused the subscription): the
    /// renewer in a task of its own beside the keeper's turns, then the leave once both
    /// stopped.
    pub(crate) async fn run(mut self) {
        let (stop, stopped) = oneshot::channel::<()>();
        let renewer = self.renewals_out.take().map(|out| {
            let renewer = Renewer::new(Arc::clone(&self.shared), out, self.rejoin.subscribe());
            // A task of its own, so that a long stretch of the keeper's own work (balancing
            // thousands of partitions on a loaded host) never holds a renew back; aborted with
            // the keeper (a crash drops this future, and the guard with it).
            AbortOnDrop(tokio::spawn(renewer.run(stopped)))
        });
        self.turns().await;
        // The renewer must not outlive the turns: a renew racing the leave would be refused
        // (and counted) for nothing.
        drop(stop);
        if let Some(mut renewer) = renewer {
            let _ = (&mut renewer.0).await;
        }
        self.leave().await;
    }

    /// Handles what comes (renewals, the application's events, finished final writes, the
    /// deadline) and runs a round every renew interval, until the worker is done.
    async fn turns(&mut self) {
        let mut next_round = Instant::now();
        loop {
            let deadline = self.watched_deadline();
            let drain = self
                .held
                .values()
                .filter(|held| !held.writing)
                .filter_map(|held| held.leaving)
                .min();
            tokio::select! {
                biased;
                () = sleep_until_some(deadline) => {
                    // The renewer may have moved the deadline while this slept.
                    if self.watched_deadline().is_some_and(|deadline| Instant::now() >= deadline) {
                        self.lose_all("its local deadline passed before a renew succeeded");
                    }
                }
                Some(renewal) = self.renewals.recv() => {
                    let mut round_now = self.on_renewal(renewal).await;
                    while let Ok(renewal) = self.renewals.try_recv() {
                        round_now |= self.on_renewal(renewal).await;
                    }
                    if round_now {
                        next_round = Instant::now();
                    }
                }
                Some(event) = self.events.recv() => {
                    // Every event already waiting in the same turn, so that the handovers they
                    // finish share one final write pass and one release request, and thousands
                    // of assignments dropped at once cost one turn, not one each.
                    let mut round_now = self.on_event(event);
                    while let Ok(event) = self.events.try_recv() {
                        round_now |= self.on_event(event);
                    }
                    if round_now {
                        next_round = Instant::now();
                    }
                }
                Some(Ok(written)) = self.writing.join_next() => self.written(&written).await,
                () = sleep_until_some(drain) => {}
                () = tokio::time::sleep_until(next_round), if self.joined => {
                    let started = Instant::now();
                    let soon = self.round().await;
                    self.last_round = started.elapsed();
                    // The cadence counts from the start of a round, so a slow round does not
                    // push every later one back.
                    next_round = if soon {
                        Instant::now() + self.pause_while_moving()
                    } else {
                        (started + self.rest_pause()).max(Instant::now())
                    };
                }
            }
            self.finish_handovers().await;
            self.publish();
            if self.refused.is_some() || self.done_shutting_down() {
                break;
            }
        }
    }

    /// The local deadline, when it protects anything.
    fn watched_deadline(&self) -> Option<Instant> {
        if self.held.is_empty() {
            return None;
        }
        self.shared.deadline.get()
    }

    /// Takes in what a renew (or join) came back with. Returns whether a round should run
    /// now (the worker just joined).
    async fn on_renewal(&mut self, renewal: Renewal) -> bool {
        match renewal {
            Renewal::Held {
                sent_at,
                joined,
                leases,
            } => {
                let round_now = joined && !self.joined;
                if round_now {
                    self.cold = ColdStart::FirstLook;
                }
                self.joined = true;
                self.reconcile(leases, sent_at).await;
                round_now
            }
            Renewal::Expired { sent_at, fenced } => {
                self.expired(sent_at, fenced);
                false
            }
            Renewal::Failed { error, .. } => {
                // Anything but `Retired` is counted and logged by the renewer, which tries
                // again.
                if let Error::Retired { .. } = error {
                    self.lose_all("the subscription is retired");
                    self.refused = Some(error);
                }
                false
            }
        }
    }

    /// Takes in an event of the handle or an assignment. Returns whether a round should run
    /// now (the partition count grew: the new partitions wait for no renew interval).
    fn on_event(&mut self, event: Event) -> bool {
        match event {
            Event::Dropped { partition, epoch } => {
                if let Some(held) = self.held.get_mut(&partition)
                    && held.epoch == epoch
                {
                    held.dropped = true;
                }
                false
            }
            Event::Grown => true,
            Event::Shutdown(reply) => {
                let waiting = self.shutdown.get_or_insert_with(Vec::new);
                waiting.extend(reply);
                let partitions: Vec<u32> = self.held.keys().copied().collect();
                for partition in partitions {
                    self.hand_over(partition, "the worker shuts down");
                }
                false
            }
        }
    }

    fn done_shutting_down(&self) -> bool {
        self.shutdown.is_some() && self.held.is_empty()
    }

    /// Makes one store request, counted, bounded by the local deadline while leases are held
    /// (past it nothing the answer says can be trusted), by the lease duration otherwise.
    async fn call<T>(
        &self,
        operation: Operation,
        request: impl Future<Output = Result<T, Error>>,
    ) -> Result<T, Error> {
        Counters::add(&self.shared.counters.store_requests, 1);
        let started = Instant::now();
        tokio::time::timeout_at(self.bound(), request)
            .await
            .unwrap_or_else(|_| {
                Err(Error::Timeout {
                    backend: "worker",
                    operation,
                    after: started.elapsed(),
                })
            })
    }

    /// How long a request may take: until the local deadline while leases are held, the lease
    /// duration otherwise (a leave, a claim with nothing held: no lease to protect).
    fn bound(&self) -> Instant {
        if self.held.is_empty() {
            return Instant::now() + self.shared.settings.lease_duration;
        }
        renewer::request_bound(&self.shared)
    }

    /// Ends the heartbeat, shuts the worker's own committer down, and answers whoever waits.
    async fn leave(&mut self) {
        let shared = Arc::clone(&self.shared);
        let mut result = Ok(());
        if self.joined {
            let left = self.call(
                Operation::Leave,
                shared
                    .store
                    .leave(&shared.group, &shared.subscription, &shared.worker_id),
            );
            if let Err(error) = left.await {
                tracing::warn!(worker = %shared.worker_id, %error, "leaving the subscription failed");
                result = Err(WorkerError::Leave(error));
            }
        }
        if shared.own_committer
            && let Err(error) = shared.committer.shutdown().await
        {
            tracing::warn!(worker = %shared.worker_id, %error, "the committer's final write failed");
            Counters::add(&shared.counters.final_write_failures, 1);
        }
        if let Some(refused) = self.refused.take() {
            result = Err(WorkerError::Refused(refused));
            shared
                .refused
                .store(true, std::sync::atomic::Ordering::Release);
        }
        shared
            .finished
            .store(true, std::sync::atomic::Ordering::Release);
        tracing::info!(worker = %shared.worker_id, group = %shared.group, subscription = %shared.subscription, "worker left");
        if let Err(error) = &result {
            tracing::warn!(worker = %shared.worker_id, %error, "the worker stopped with an error");
        }
        // The first to ask gets the error itself; the others (the error is not `Clone`) that
        // the worker stopped.
        let failed = result.is_err();
        let mut result = Some(result);
        for waiting in self.shutdown.take().unwrap_or_default() {
            let answer = match result.take() {
                Some(result) => result,
                None if failed => Err(WorkerError::Stopped),
                None => Ok(()),
            };
            let _ = waiting.send(answer);
        }
    }

    /// Publishes the view for `stats()` (and the metrics facade).
    fn publish(&self) {
        let held = self
            .held
            .iter()
            .map(|(&partition, held)| HeldPartition {
                partition,
                epoch: held.epoch,
                handing_over: held.leaving.is_some(),
            })
            .collect();
        *self.shared.view() = View {
            held,
            live_workers: self.live_workers,
            unowned_since: self.unowned_since.iter().map(|(p, s)| (*p, *s)).collect(),
        };
        #[cfg(feature = "metrics")]
        crate::metrics::publish(&self.shared);
    }
}

/// A task aborted when this is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Sleeps until `deadline`, or forever when there is none.
async fn sleep_until_some(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}
