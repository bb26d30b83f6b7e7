//! Changes of ownership: a grant becomes an assignment, a handover drains, writes and releases,
//! a loss stops at once.

use std::sync::Arc;

use checkpoint_committer::CommitterError;
use checkpoint_core::{HeldLease, Operation};
use futures_util::future::join_all;
use tokio::sync::watch;
use tokio::time::Instant;

use super::{Held, Keeper};
use crate::settings::Mutation;
use crate::shared::Counters;
use crate::{Assignment, Stop};

impl Keeper {
    /// Loads where each newly granted partition resumes, takes it in the committer and hands
    /// it to the application. A partition that cannot be started (its load failed, or the
    /// committer still holds it from a loss a moment ago) is released again for a later round.
    pub(super) async fn start_assignments(&mut self, granted: Vec<HeldLease>) {
        if granted.is_empty() {
            return;
        }
        let shared = Arc::clone(&self.shared);
        let loads = join_all(granted.iter().map(|lease| {
            shared
                .store
                .load(&shared.group, &shared.subscription, lease.partition)
        }));
        Counters::add(&shared.counters.store_requests, granted.len() as u64 - 1);
        let loaded = self
            .call(Operation::Load, async { Ok(loads.await) })
            .await
            .unwrap_or_default();
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
            if let Err(error) = self.start_one(&lease, resume_at) {
                tracing::warn!(worker = %shared.worker_id, partition = lease.partition, %error, "the committer refused the partition; letting it go");
                unstarted.push(lease.partition);
            }
        }
        self.release_leases(&unstarted).await;
    }

    fn start_one(&mut self, lease: &HeldLease, resume_at: u64) -> Result<(), CommitterError> {
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
                dropped: false,
                leaving: None,
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

    /// Signals a graceful handover of `partition`: the application stops dispatching and drops
    /// the assignment when its handlers are done (or the drain deadline passes).
    pub(super) fn hand_over(&mut self, partition: u32, why: &str) {
        let drain = self.shared.settings.drain_timeout;
        let Some(held) = self.held.get_mut(&partition) else {
            return;
        };
        if held.leaving.is_some() {
            return;
        }
        let drain_deadline = Instant::now() + drain;
        held.leaving = Some(drain_deadline);
        held.stop
            .send_replace(Some(Stop::Handover { drain_deadline }));
        let span = tracing::info_span!("partition_handover", worker = %self.shared.worker_id, subscription = %self.shared.subscription, partition, epoch = held.epoch);
        span.in_scope(|| tracing::info!(reason = why, "handing the partition over"));
    }

    /// Finishes the handovers whose assignment was dropped or whose drain deadline passed: the
    /// committer's final write of each, then the release of their leases, in that order, so
    /// the next owner resumes exactly where this one stopped.
    pub(super) async fn finish_handovers(&mut self) {
        let now = Instant::now();
        let ready: Vec<u32> = self
            .held
            .iter()
            .filter(|(_, held)| {
                held.leaving
                    .is_some_and(|deadline| held.dropped || now >= deadline)
            })
            .map(|(partition, _)| *partition)
            .collect();
        if ready.is_empty() {
            return;
        }
        for partition in &ready {
            if let Some(held) = self.held.remove(partition)
                && !held.dropped
            {
                Counters::add(&self.shared.counters.drain_timeouts, 1);
                tracing::warn!(worker = %self.shared.worker_id, partition, "drain deadline passed; handing over with entries in flight (they are redone)");
            }
        }
        if self.mutated(Mutation::ReleasesBeforeTheFinalWrite) {
            let released = self.release_leases(&ready).await;
            self.final_writes(&ready).await;
            Counters::add(&self.shared.counters.handovers_out, released);
        } else {
            self.final_writes(&ready).await;
            let released = self.release_leases(&ready).await;
            Counters::add(&self.shared.counters.handovers_out, released);
        }
    }

    /// The committer's last write of each partition, which it then forgets. A write that
    /// fails is tried once more straight through the store; if that fails too, the next owner
    /// redoes from the stored position (counted in `final_write_failures`).
    async fn final_writes(&mut self, partitions: &[u32]) {
        let shared = Arc::clone(&self.shared);
        if partitions.len() > 1 {
            // One `save_all` for all of them (and whatever else moved) instead of one write per
            // partition; each release below then writes only what moved since. A failure here
            // loses nothing: the releases write what is still unwritten.
            let _ = tokio::time::timeout_at(self.bound(), shared.committer.flush()).await;
        }
        for &partition in partitions {
            // Bounded like every request of the keeper: a store that hangs must not keep it
            // from renewing, or from stopping everything at the deadline. (The committer lets
            // go of the partition before its first await, so a cut-off write loses only the
            // write: the next owner redoes from the stored position.)
            let release = shared.committer.release(&shared.subscription, partition);
            let Ok(released) = tokio::time::timeout_at(self.bound(), release).await else {
                Counters::add(&shared.counters.final_write_failures, 1);
                tracing::warn!(worker = %shared.worker_id, partition, "the final checkpoint write did not finish before the local deadline");
                continue;
            };
            match released {
                Ok(()) | Err(CommitterError::NotHeld { .. }) => {}
                Err(CommitterError::Flush { unwritten, .. }) => {
                    let retry = shared.store.save_all(&shared.group, &unwritten);
                    if let Err(error) = self.call(Operation::SaveAll, retry).await {
                        Counters::add(&shared.counters.final_write_failures, 1);
                        tracing::warn!(worker = %shared.worker_id, partition, %error, "the final checkpoint write failed; the next owner redoes from the stored one");
                    }
                }
                Err(error) => {
                    Counters::add(&shared.counters.final_write_failures, 1);
                    tracing::warn!(worker = %shared.worker_id, partition, %error, "the final checkpoint write failed");
                }
            }
        }
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
        match self.call(Operation::Release, release).await {
            Ok(released) => {
                tracing::info!(worker = %shared.worker_id, partitions = ?released.released, "released");
                released.released.len() as u64
            }
            Err(error) => {
                self.failed(error, "release");
                0
            }
        }
    }

    /// Stops `partition` at once: its lease is gone. The committer lets go of it now (its
    /// handles refuse every call) and writes what it had in the background: harmless after a
    /// takeover, since a store only moves a checkpoint forward.
    pub(super) fn lose(&mut self, partition: u32, why: &str) {
        let Some(held) = self.held.remove(&partition) else {
            return;
        };
        held.stop.send_replace(Some(Stop::Lost));
        Counters::add(&self.shared.counters.losses, 1);
        let span = tracing::warn_span!("partition_lost", worker = %self.shared.worker_id, subscription = %self.shared.subscription, partition, epoch = held.epoch);
        span.in_scope(|| tracing::warn!(reason = why, "partition lost"));
        let committer = self.shared.committer.clone();
        let subscription = self.shared.subscription.clone();
        let mut release = Box::pin(async move {
            let _ = committer.release(&subscription, partition).await;
        });
        // One poll takes the partition out of the committer before anything else runs (the
        // committer does that before its first await), so a new grant of the same partition
        // finds it free; the write itself goes on in the background.
        let waker = futures_util::task::noop_waker();
        let mut context = std::task::Context::from_waker(&waker);
        if release.as_mut().poll(&mut context).is_pending() {
            tokio::spawn(release);
        }
    }

    /// Stops every partition at once (see [`lose`](Self::lose)).
    pub(super) fn lose_all(&mut self, why: &str) {
        let partitions: Vec<u32> = self.held.keys().copied().collect();
        for partition in partitions {
            self.lose(partition, why);
        }
        self.requested.clear();
        self.shared.deadline.clear();
    }
}
