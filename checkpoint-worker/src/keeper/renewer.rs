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
    /// A renew sent at `sent_at` was answered `NotHeld`: the heartbeat it renewed is gone,
    /// and with it every lease granted before it was sent. `fenced`: no acquire of the
    /// keeper's answered since it was sent, so nothing held can have outlived that heartbeat:
    /// the renewer has cleared the deadline and waits for the keeper's word ([`Rejoin`]: this
    /// answer handled, or a grant since) before it joins or renews again. Otherwise such an
    /// acquire may have started the heartbeat that is live now, and its deadline and its
    /// grants stand: the renewer renews on.
    Expired { sent_at: Instant, fenced: bool },
    /// Any other failure. On `Retired` the renewer has stopped.
    Failed { error: Error },
}

/// The keeper's word to a fenced renewer: how many `Expired { fenced: true }` answers it has
/// handled, and whether it still held partitions then (granted by an acquire answered after
/// the renewer's check), whose heartbeat must be renewed rather than a new one joined; and
/// when the answer of its latest acquire arrived, if that acquire's deadline was still ahead
/// then.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Rejoin {
    pub(super) handled: u64,
    pub(super) renew: bool,
    pub(super) granted: Option<Instant>,
}

/// See the module doc.
pub(super) struct Renewer {
    shared: Arc<Shared>,
    out: mpsc::UnboundedSender<Renewal>,
    /// Whether the heartbeat is live, as far as the renewer knows: renew when it is, join
    /// (an empty acquire) when not.
    joined: bool,
    /// After a `NotHeld` that cleared the deadline, the latest such renew's send: no request
    /// and no extension of the deadline until the keeper has let go of every partition granted
    /// before it, so that a new heartbeat never extends the deadline of leases of the old one.
    /// The renewer counts in `fences` the fencing `NotHeld`s it passed on, the keeper in
    /// `rejoin` those it handled; the fence lifts when they are equal (a count, not a wake-up:
    /// two `NotHeld`s handled one after the other must not let the renewer through before the
    /// keeper handled the second). It lifts sooner when an acquire of the keeper's, answered
    /// since that send with its deadline still ahead, holds partitions again (see
    /// [`Keeper::granted`](super::Keeper::granted)): their heartbeat must be renewed at its
    /// cadence even while the keeper is still busy (loading where they resume, say), and that
    /// acquire's answer already let go of everything the `NotHeld` ended.
    fence: Option<Instant>,
    fences: u64,
    rejoin: watch::Receiver<Rejoin>,
}

type Reply = (Instant, bool, Result<Vec<HeldLease>, Error>);

impl Renewer {
    pub(super) fn new(
        shared: Arc<Shared>,
        out: mpsc::UnboundedSender<Renewal>,
        rejoin: watch::Receiver<Rejoin>,
    ) -> Self {
        Self {
            shared,
            out,
            joined: false,
            fence: None,
            fences: 0,
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
                renew = wait_lift(self.rejoin.clone(), self.fences, self.fence), if self.fence.is_some() => {
                    let Some(renew) = renew else {
                        return; // the keeper is gone
                    };
                    self.fence = None;
                    // The keeper holds partitions an acquire granted after the `NotHeld`'s
                    // send: their heartbeat is renewed, never replaced by a join's new one.
                    self.joined |= renew;
                    next = Instant::now();
                }
                () = tokio::time::sleep_until(next), if self.fence.is_none() && in_flight.len() < MAX_IN_FLIGHT => {
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
                // While fenced, the keeper may still hold partitions of the heartbeat that
                // ended, which this success (of a request sent before the `NotHeld` came) does
                // not renew: it must not make them look held again. The grants it lists keep
                // the deadline of the acquire that granted them.
                if self.fence.is_none() {
                    extend(&self.shared, sent_at);
                }
                Renewal::Held {
                    sent_at,
                    joined: joining,
                    leases,
                }
            }
            Err(error) => {
                Counters::add(&self.shared.counters.renew_failures, 1);
                match &error {
                    Error::NotHeld { .. } => return self.not_held(sent_at),
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

    /// A renew sent at `sent_at` was answered `NotHeld`: the heartbeat it renewed is gone.
    /// Unless an acquire of the keeper's answered since it was sent (see
    /// [`Deadline::expire`](crate::deadline::Deadline::expire)), nothing held outlived that
    /// heartbeat: the deadline is cleared, so the assignments stop at once whatever the keeper
    /// is busy with, and the renewer fences itself until the keeper has let go. Otherwise that
    /// acquire's heartbeat may be the live one: the renewer keeps renewing it (a renew never
    /// starts a heartbeat; if that one is gone too, the next renew, sent after the acquire
    /// answered, says so and clears). Returns `false` when nobody listens any more.
    fn not_held(&mut self, sent_at: Instant) -> bool {
        let fenced = self.shared.deadline.expire(sent_at);
        if fenced {
            self.joined = false;
            // Fenced since the latest such send: a grant answered between two of them ends
            // with the later one.
            self.fence = Some(self.fence.map_or(sent_at, |since| since.max(sent_at)));
            self.fences += 1;
        }
        self.out.send(Renewal::Expired { sent_at, fenced }).is_ok()
    }
}

/// Waits until the fence set at `since` lifts: the keeper has handled the `fences` fencing
/// `NotHeld`s passed on, or an acquire answered at or after `since` holds partitions again.
/// Whether the renewer must then renew (partitions are held) rather than join; `None` when
/// the keeper is gone.
async fn wait_lift(
    mut rejoin: watch::Receiver<Rejoin>,
    fences: u64,
    since: Option<Instant>,
) -> Option<bool> {
    let granted_since = |word: &Rejoin| {
        since.is_some_and(|since| word.granted.is_some_and(|granted| granted >= since))
    };
    let word = rejoin
        .wait_for(|word| word.handled >= fences || granted_since(word))
        .await
        .ok()
        .map(|word| *word)?;
    Some(granted_since(&word) || (word.handled >= fences && word.renew))
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
