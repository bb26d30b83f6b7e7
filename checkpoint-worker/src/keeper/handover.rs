//! A graceful handover, in order: the stop signal, the drain (the application drops its
//! assignment, or the drain deadline passes), the committer's final write, the release.
//!
//! The final write runs in the background: a store that writes slowly delays the handover
//! waiting for it, never the renew of the other partitions (the renewer goes on beside it) nor
//! the keeper's other turns. The lease stays held and renewed until the write is done, so the
//! next owner resumes exactly where this one stopped; a write that outlasts its budget (the
//! larger of the drain timeout and the lease duration) hands over without it.

use std::sync::Arc;

use checkpoint_committer::CommitterError;
use tokio::time::Instant;

use super::Keeper;
use crate::Stop;
use crate::shared::{Counters, Shared};

impl Keeper {
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

    /// Starts the final writes of the handovers whose assignment was dropped or whose drain
    /// deadline passed, all of them in one background write; [`written`](Self::written)
    /// releases them when it is done.
    pub(super) async fn finish_handovers(&mut self) {
        let now = Instant::now();
        let mut ready = Vec::new();
        for (&partition, held) in &mut self.held {
            let drained = held.dropped || held.leaving.is_some_and(|deadline| now >= deadline);
            if held.writing || held.leaving.is_none() || !drained {
                continue;
            }
            held.writing = true;
            if !held.dropped {
                Counters::add(&self.shared.counters.drain_timeouts, 1);
                tracing::warn!(worker = %self.shared.worker_id, partition, "drain deadline passed; handing over with entries in flight (they are redone)");
            }
            ready.push((partition, held.epoch));
        }
        if ready.is_empty() {
            return;
        }
        self.writing
            .spawn(final_writes(Arc::clone(&self.shared), ready));
    }

    /// The final writes of `partitions` (with the epochs they were handed over under) are
    /// done: releases those still held under that epoch and writing (a partition lost
    /// meanwhile, at the local deadline, is not this worker's to release, nor is a new grant of
    /// it that came after).
    pub(super) async fn written(&mut self, partitions: &[(u32, u64)]) {
        let mut still_held = Vec::new();
        for &(partition, epoch) in partitions {
            if self
                .held
                .get(&partition)
                .is_some_and(|held| held.writing && held.epoch == epoch)
            {
                self.held.remove(&partition);
                still_held.push(partition);
            }
        }
        let released = self.release_leases(&still_held).await;
        Counters::add(&self.shared.counters.handovers_out, released);
    }
}

/// The committer's last write of the partitions `handed_over` (one write for all of them),
/// which it then forgets; returns them, with their epochs. A write that fails is tried once more straight through the store; if
/// that fails too, the next owner redoes from the stored position (counted in
/// `final_write_failures`).
///
/// Bounded by the larger of the drain timeout and the lease duration (a handover slower than a
/// lease is slower than letting the lease expire; a shorter bound would give up on a store that
/// is slow but writes): a store that hangs does not hold the partition for ever. The handover
/// then goes ahead, the write carries on in the background (a store only moves a checkpoint
/// forward, so landing late is harmless) and the next owner may resume before it lands,
/// redoing what it carries (counted in `final_write_failures`).
async fn final_writes(shared: Arc<Shared>, handed_over: Vec<(u32, u64)>) -> Vec<(u32, u64)> {
    let partitions: Vec<u32> = handed_over
        .iter()
        .map(|&(partition, _)| partition)
        .collect();
    let budget = final_write_budget(&shared);
    let writing = tokio::spawn(write_each(Arc::clone(&shared), partitions.clone()));
    if tokio::time::timeout(budget, writing).await.is_err() {
        Counters::add(
            &shared.counters.final_write_failures,
            partitions.len() as u64,
        );
        tracing::warn!(worker = %shared.worker_id, ?partitions, ?budget, "the final checkpoint write did not finish in time; handing over anyway (the next owner may redo entries)");
    }
    handed_over
}

/// How long a handover's final write may take (see [`final_writes`]).
pub(crate) fn final_write_budget(shared: &Shared) -> std::time::Duration {
    let settings = &shared.settings;
    settings.drain_timeout.max(settings.lease_duration)
}

/// The final writes themselves (see [`final_writes`]): the committer lets go of them all and
/// writes them in one `save_all`; what it could not write is tried once more straight through
/// the store, and counted when that fails too.
async fn write_each(shared: Arc<Shared>, partitions: Vec<u32>) {
    match shared
        .committer
        .release_many(&shared.subscription, &partitions)
        .await
    {
        Ok(()) => {}
        Err(CommitterError::Flush { unwritten, .. }) => {
            Counters::add(&shared.counters.store_requests, 1);
            if let Err(error) = shared.store.save_all(&shared.group, &unwritten).await {
                Counters::add(
                    &shared.counters.final_write_failures,
                    unwritten.len() as u64,
                );
                tracing::warn!(worker = %shared.worker_id, ?partitions, %error, "the final checkpoint write failed; the next owner redoes from the stored one");
            }
        }
        Err(error) => {
            Counters::add(
                &shared.counters.final_write_failures,
                partitions.len() as u64,
            );
            tracing::warn!(worker = %shared.worker_id, ?partitions, %error, "the final checkpoint write failed");
        }
    }
}
