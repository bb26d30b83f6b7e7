//! Changes of ownership: a grant becomes an assignment, a release gives leases back, a loss
//! stops at once (a handover's steps are in `handover`).

use std::collections::HashMap;
use std::sync::Arc;

use checkpoint_committer::CommitterError;
use checkpoint_core::{Error, HeldLease, Operation};
use futures_util::future::join_all;
use tokio::sync::watch;
use tokio::time::Instant;

use super::{Held, Keeper};
use crate::shared::Counters;
use crate::{Assignment, Stop};

/// Newly granted partitions up to which each is loaded on its own; beyond, one `list` of the
/// group serves them all.
const LOADS_AT_MOST: usize = 8;

impl Keeper {
    /// Loads where each newly granted partition resumes, takes it in the committer and hands
    /// it to the application. A partition that cannot be started (its load failed, or the
    /// committer still holds it from a loss a moment ago) is released again for a later round.
    /// `granted_at`: when the answer that granted them arrived.
    pub(super) async fn start_assignments(&mut self, granted: Vec<HeldLease>, granted_at: Instant) {
        if granted.is_empty() {
            return;
        }
        let loaded = self.resume_positions(&granted).await;
        let shared = Arc::clone(&self.shared);
        let mut unstarted = Vec::new();
        for (index, lease) in granted.into_iter().enumerate() {
            let resume_at = match loaded.get(index) {
                Some(Ok(stored)) => stored.unwrap_or(shared.settings.start_position),
                Some(Err(error)) => {
                    tracing::warn!(worker = %shared.worker_id, partition = lease.partition, %error, "loading the checkpoint failed; letting the partition go");
                    unstarted.push(lease.partition);
                    continue;
                }
                None => {
                    unstarted.push(lease.partition);
                    continue;
                }
            };
            if let Err(error) = self.start_one(&lease, resume_at, granted_at) {
                tracing::warn!(worker = %shared.worker_id, partition = lease.partition, %error, "the committer refused the partition; letting it go");
                unstarted.push(lease.partition);
            }
        }
        self.release_leases(&unstarted).await;
    }

    /// Where each of `granted` resumes (its stored checkpoint, if any), in its order: a
    /// `load` each for a few, one `list` of the group for more. A worker that claims its
    /// share of a large subscription at once (100 partitions at a fleet's start, or after a
    /// loss) would otherwise send as many loads at the same moment, which on a loaded store
    /// filled the connection pool and held the renews back behind them.
    async fn resume_positions(&self, granted: &[HeldLease]) -> Vec<Result<Option<u64>, Error>> {
        let shared = Arc::clone(&self.shared);
        if granted.len() <= LOADS_AT_MOST {
            let loads = join_all(granted.iter().map(|lease| {
                shared
                    .store
                    .load(&shared.group, &shared.subscription, lease.partition)
            }));
            Counters::add(&shared.counters.store_requests, granted.len() as u64 - 1);
            return self
                .call(Operation::Load, async { Ok(loads.await) })
                .await
                .unwrap_or_default();
        }
        let listed = self
            .call(Operation::List, shared.store.list(&shared.group))
            .await;
        match listed {
            Ok(checkpoints) => {
                let stored: HashMap<u32, u64> = checkpoints
                    .into_iter()
                    .filter(|checkpoint| checkpoint.subscription == shared.subscription)
                    .map(|checkpoint| (checkpoint.partition, checkpoint.position))
                    .collect();
                granted
                    .iter()
                    .map(|lease| Ok(stored.get(&lease.partition).copied()))
                    .collect()
            }
            Err(error) => {
                tracing::warn!(worker = %shared.worker_id, %error, "listing the checkpoints failed");
                Vec::new()
            }
        }
    }

    fn start_one(
        &mut self,
        lease: &HeldLease,
        resume_at: u64,
        granted_at: Instant,
    ) -> Result<(), CommitterError> {
        let shared = Arc::clone(&self.shared);
        let partition = lease.partition;
        let handle = shared
            .committer
            .partition(&shared.subscription, partition, resume_at)?;
        let (stop, receiver) = watch::channel(None);
        self.held.insert(
            partition,
            Held {
                epoch: lease.epoch,
                stop,
                granted_at,
                dropped: false,
                leaving: None,
                writing: false,
            },
        );
        Counters::add(&shared.counters.acquired, 1);
        let asked = self.asked.remove(&partition);
        if asked {
            Counters::add(&shared.counters.handovers_in, 1);
        }
        let span = tracing::info_span!("partition_acquired", worker = %shared.worker_id, group = %shared.group, subscription = %shared.subscription, partition, epoch = lease.epoch);
        span.in_scope(|| tracing::info!(resume_at, handed_over = asked, "partition acquired"));
        let assignment = Assignment {
            partition,
            epoch: lease.epoch,
            resume_at,
            committer: handle,
            stop: receiver,
            shared: Arc::clone(&shared),
        };
        // Nobody receives assignments any more: the assignment is dropped here, which counts
        // as drained.
        let _ = self.assignments.send(assignment);
        Ok(())
    }

    /// Releases leases in one request; returns how many the store released. A failed release
    /// is retried by the next renew, which finds them still held.
    pub(super) async fn release_leases(&mut self, partitions: &[u32]) -> u64 {
        if partitions.is_empty() {
            return 0;
        }
        let shared = Arc::clone(&self.shared);
        let release = shared.store.release(
            &shared.group,
            &shared.subscription,
            &shared.worker_id,
            partitions,
        );
        let answer = self.call(Operation::Release, release).await;
        self.released_at = Some(Instant::now());
        match answer {
            Ok(released) => {
                self.failures = 0;
                tracing::info!(worker = %shared.worker_id, partitions = ?released.released, "released");
                released.released.len() as u64
            }
            Err(error) => {
                self.failed(error, "release");
                0
            }
        }
    }

    /// Stops `partitions` at once: their leases are gone. The committer lets go of them now
    /// (their handles refuse every call) and writes what it had in the background, in one
    /// write: harmless after a takeover, since a store only moves a checkpoint forward.
    pub(super) fn lose(&mut self, partitions: &[u32], why: &str) {
        let mut lost = Vec::with_capacity(partitions.len());
        for &partition in partitions {
            let Some(held) = self.held.remove(&partition) else {
                continue;
            };
            held.stop.send_replace(Some(Stop::Lost));
            Counters::add(&self.shared.counters.losses, 1);
            let span = tracing::warn_span!("partition_lost", worker = %self.shared.worker_id, subscription = %self.shared.subscription, partition, epoch = held.epoch);
            span.in_scope(|| tracing::warn!(reason = why, "partition lost"));
            lost.push(partition);
        }
        if lost.is_empty() {
            return;
        }
        let committer = self.shared.committer.clone();
        let subscription = self.shared.subscription.clone();
        let mut release = Box::pin(async move {
            let _ = committer.release_many(&subscription, &lost).await;
        });
        // One poll takes the partitions out of the committer before anything else runs (the
        // committer does that before its first await), so a new grant of the same partition
        // finds it free; the write itself goes on in the background.
        let waker = futures_util::task::noop_waker();
        let mut context = std::task::Context::from_waker(&waker);
        if release.as_mut().poll(&mut context).is_pending() {
            tokio::spawn(release);
        }
    }

    /// A renew sent at `sent_at` was answered `NotHeld` (`fenced`: the renewer cleared the
    /// deadline and waits for this handling to lift its fence; see `Renewal::Expired`).
    ///
    /// Lost: exactly the partitions whose grant's answer arrived before the renew was sent,
    /// the rule of `lose_missing` (the store executed their grant before the renew, and found
    /// their heartbeat gone after). A grant answered later may have come from an acquire the
    /// store executed after the renew, under a heartbeat of its own started since: the
    /// `NotHeld` says nothing of it, and it stays held under the deadline that acquire set
    /// (`Deadline::expire` keeps that deadline, or the acquire set it after the renewer
    /// cleared it). A partition kept here is never held past what its own acquire's deadline,
    /// or a renew that listed it since, allows: exactly as if the renew had timed out.
    pub(super) fn expired(&mut self, sent_at: Instant, fenced: bool) {
        let gone: Vec<u32> = self
            .held
            .iter()
            .filter(|(_, held)| held.granted_at < sent_at)
            .map(|(partition, _)| *partition)
            .collect();
        self.lose(&gone, "the store says its heartbeat expired");
        let held = &self.held;
        self.requested
            .retain(|partition, _| held.contains_key(partition));
        if !fenced {
            return;
        }
        if self.held.is_empty() {
            // Nothing left: the heartbeat is gone, the renewer joins a new one.
            self.joined = false;
            self.shared.deadline.clear();
        }
        // Whatever is still held was granted by an acquire answered after the renewer
        // cleared the deadline (that acquire set it again): the renewer must renew that
        // acquire's heartbeat, not join one that would not hold these partitions.
        let renew = !self.held.is_empty();
        self.rejoin.send_modify(|word| {
            word.handled += 1;
            word.renew = renew;
        });
    }

    /// An acquire of the keeper's, sent at `sent_at`, succeeded; its answer arrived at
    /// `answered_at` (the `granted_at` of what it granted) and `lose_missing` has judged what
    /// it no longer lists. Moves the deadline and notes the grant with it (see
    /// `Deadline::expire`), and lifts a fenced renewer's fence when the acquire's deadline is
    /// still ahead (see `Renewer::fence`).
    ///
    /// Why that lift is safe: the renewer is fenced by a `NotHeld` that arrived before this
    /// answer (else it would have found this grant and not cleared the deadline). If the store
    /// executed this acquire after the heartbeat ended, it started one of its own, which can
    /// list no lease of the old one: `lose_missing` let all of those go, and everything held
    /// now is this acquire's, which renews may extend. If it executed it before, the heartbeat
    /// it renewed ended after it, and its deadline passed before the `NotHeld` arrived (the
    /// `holder_deadline` rule): no lift, the fence waits for the keeper's word.
    pub(super) fn granted(&mut self, sent_at: Instant, answered_at: Instant) {
        let duration = self.shared.settings.lease_duration;
        let until = sent_at + checkpoint_core::lease::safe_duration(duration);
        self.shared.deadline.grant(until, answered_at);
        if until > answered_at {
            self.rejoin
                .send_modify(|word| word.granted = Some(answered_at));
        }
    }

    /// Stops every partition at once (see [`lose`](Self::lose)).
    pub(super) fn lose_all(&mut self, why: &str) {
        let partitions: Vec<u32> = self.held.keys().copied().collect();
        self.lose(&partitions, why);
        self.requested.clear();
        self.shared.deadline.clear();
    }
}
