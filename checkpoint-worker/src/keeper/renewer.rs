//! The renewer: the heartbeat of a worker's leases, on a cadence of its own.
//!
//! It runs beside the rest of the keeper, in a task of its own, so a final write, a release, a
//! claim or a table read that is slow or hangs, or a long stretch of balancing, never holds
//! back a renew: the renew of what the worker holds goes out every renew interval whatever
//! else is under way.
//! It moves the local deadline itself on every success (the assignments read it), and tells the
//! rest of the keeper what the store said, which reconciles its partitions with it.

use std::sync::Arc;

use checkpoint_core::{Error, HeldLease, Operation};
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

use crate::shared::{Counters, Shared};

/// Renews that may be in flight at once. A second one goes out when the first has not
/// answered within a renew interval (a request stuck on a dead connection must not cost the
/// leases); more than two would only add load to a store that is slow already.
const MAX_IN_FLIGHT: usize = 2;

/// What a renew (or a join) sent at `sent_at` came back with.
#[derive(Debug)]
pub(super) enum Renewal {
    /// It succeeded: the leases the store says the worker holds. `joined`: it was the empty
    /// acquire that starts the heartbeat.
    Held {
        sent_at: Instant,
        joined: bool,
        leases: Vec<HeldLease>,
    },
    /// It failed. The renewer has already handled what only it can: on `NotHeld` it clears
    /// the deadline and waits for the keeper's word to join again, on `Retired` it stops.
    Failed { error: Error },
}

/// See the module doc.
pub(super) struct Renewer {
    shared: Arc<Shared>,
    out: mpsc::UnboundedSender<Renewal>,
    /// Whether the heartbeat is live, as far as the renewer knows: renew when it is, join
    /// (an empty acquire) when not.
    joined: bool,
    /// After `NotHeld`: no join until the keeper has let go of every partition, so that a new
    /// heartbeat never extends the deadline of leases of the old one. The keeper counts the
    /// `NotHeld`s it has handled in `rejoin`; fenced at count `n`, the renewer waits for more
    /// than `n` (a count, not a wake-up: two `NotHeld`s handled at once must not leave a wake-up
    /// behind that would let a later fence through before the keeper handled it).
    fenced: Option<u64>,
    rejoin: watch::Receiver<u64>,
}

type Reply = (Instant, bool, Result<Vec<HeldLease>, Error>);

impl Renewer {
    pub(super) fn new(
        shared: Arc<Shared>,
        out: mpsc::UnboundedSender<Renewal>,
        rejoin: watch::Receiver<u64>,
    ) -> Self {
        Self {
            shared,
            out,
            joined: false,
            fenced: None,
            rejoin,
        }
    }

    /// Renews every renew interval (counted from the last send) until `stop` fires or the
    /// subscription is retired.
    pub(super) async fn run(mut self, mut stop: oneshot::Receiver<()>) {
        let interval = self.shared.settings.renew_interval;
        let mut in_flight = FuturesUnordered::new();
        let mut next = Instant::now();
        loop {
            tokio::select! {
                biased;
                _ = &mut stop => return,
                Some((sent_at, joining, result)) = in_flight.next() => {
                    let result: Result<Vec<HeldLease>, Error> = result;
                    let failed = result.is_err();
                    if !self.on_reply(sent_at, joining, result) {
                        return;
                    }
                    // A failed join or renew is tried again soon, not an interval later: the
                    // deadline is counted from the last success. (Only a failed one: a success
                    // keeps the cadence, two requests per interval at rest with the table read.)
                    if failed && in_flight.is_empty() {
                        next = next.min(Instant::now() + interval / 4);
                    }
                }
                handled = wait_past(self.rejoin.clone(), self.fenced), if self.fenced.is_some() => {
                    if !handled {
                        return; // the keeper is gone
                    }
                    self.fenced = None;
                    next = Instant::now();
                }
                () = tokio::time::sleep_until(next), if self.fenced.is_none() && in_flight.len() < MAX_IN_FLIGHT => {
                    in_flight.push(self.send());
                    next = Instant::now() + interval;
                }
            }
        }
    }

    /// One renew, or a join while the heartbeat is not live, bounded by the local deadline.
    fn send(&self) -> impl std::future::Future<Output = Reply> + Send + 'static {
        let shared = Arc::clone(&self.shared);
        let joining = !self.joined;
        async move {
            let (group, subscription, me) =
                (&shared.group, &shared.subscription, &shared.worker_id);
            let duration = shared.settings.lease_duration;
            Counters::add(&shared.counters.store_requests, 1);
            let sent_at = Instant::now();
            let bound = request_bound(&shared);
            let (operation, result) = if joining {
                let join = shared.store.acquire(group, subscription, me, &[], duration);
                let result = tokio::time::timeout_at(bound, join).await;
                (Operation::Acquire, result.map(|r| r.map(|a| a.granted)))
            } else {
                let renew = shared.store.renew(group, subscription, me, duration);
                (
                    Operation::Renew,
                    tokio::time::timeout_at(bound, renew).await,
                )
            };
            let result = result.unwrap_or_else(|_| {
                Err(Error::Timeout {
                    backend: "worker",
                    operation,
                    after: sent_at.elapsed(),
                })
            });
            (sent_at, joining, result)
        }
    }

    /// Moves the deadline on a success and passes the answer on. Returns `false` when the
    /// renewer must stop (the subscription is retired, or nobody listens any more).
    fn on_reply(
        &mut self,
        sent_at: Instant,
        joining: bool,
        result: Result<Vec<HeldLease>, Error>,
    ) -> bool {
        let renewal = match result {
            Ok(leases) => {
                if joining {
                    tracing::info!(worker = %self.shared.worker_id, group = %self.shared.group, subscription = %self.shared.subscription, "worker joined");
                }
                self.joined = true;
                extend(&self.shared, sent_at);
                Renewal::Held {
                    sent_at,
                    joined: joining,
                    leases,
                }
            }
            Err(error) => {
                Counters::add(&self.shared.counters.renew_failures, 1);
                match &error {
                    Error::NotHeld { .. } => {
                        // Nothing is held any more: the assignments stop at once, whatever the
                        // keeper is busy with.
                        self.shared.deadline.clear();
                        self.joined = false;
                        // Fenced at what the keeper has handled so far: this `NotHeld` is not
                        // among it (the keeper hears of it below).
                        if self.fenced.is_none() {
                            self.fenced = Some(*self.rejoin.borrow());
                        }
                    }
                    Error::Retired { .. } => {}
                    other => {
                        tracing::warn!(worker = %self.shared.worker_id, error = %other, "lease renew failed; trying again");
                    }
                }
                Renewal::Failed { error }
            }
        };
        let retired = matches!(
            renewal,
            Renewal::Failed {
                error: Error::Retired { .. },
                ..
            }
        );
        self.out.send(renewal).is_ok() && !retired
    }
}

/// Waits until the keeper has handled more `NotHeld`s than `fenced_at`; `false` when the
/// keeper is gone.
async fn wait_past(mut rejoin: watch::Receiver<u64>, fenced_at: Option<u64>) -> bool {
    let fenced_at = fenced_at.unwrap_or(0);
    rejoin
        .wait_for(|handled| *handled > fenced_at)
        .await
        .is_ok()
}

/// How long a lease request may take: until the local deadline while it is ahead (past it
/// nothing the answer says about the leases held can be trusted), the lease duration when there
/// is none or it has passed (then nothing is held that an answer could keep alive: the keeper
/// loses everything at the deadline, and an acquire's answer is checked against what was held).
pub(super) fn request_bound(shared: &Shared) -> Instant {
    let now = Instant::now();
    let deadline = shared.deadline.get().filter(|deadline| *deadline > now);
    deadline.unwrap_or(now + shared.settings.lease_duration)
}

/// Moves the local deadline after a successful acquire or renew sent at `sent_at` (never back:
/// a renew that answers late does not undo a later one).
pub(super) fn extend(shared: &Shared, sent_at: Instant) {
    let duration = shared.settings.lease_duration;
    shared
        .deadline
        .extend(sent_at + checkpoint_core::lease::safe_duration(duration));
}
