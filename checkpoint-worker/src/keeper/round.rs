//! One round of the keeper: read the table, balance (the renews are the renewer's).

use std::collections::BTreeMap;

use checkpoint_core::{Error, HeldLease, LeaseTable, Operation};
use tokio::time::Instant;

use super::{ColdStart, Keeper};
use crate::balance::{self, Me};
use crate::shared::Counters;

impl Keeper {
    /// Unless shutting down, reads the table and balances. Returns whether the next round
    /// should come soon (something is moving).
    pub(super) async fn round(&mut self) -> bool {
        Counters::add(&self.shared.counters.rounds, 1);
        if self.shutdown.is_some() || self.refused.is_some() {
            return false;
        }
        let Some(table) = self.read_table().await else {
            return true;
        };
        self.observe(&table);
        if self.cold_start(&table) {
            // A lone worker looks again a settle later (`pause_while_moving`); a fleet
            // starting, one renew interval later.
            return self.cold == ColdStart::Settling;
        }
        let plan = self.plan(&table);
        for partition in plan.give {
            self.hand_over(partition, "another worker asked for it");
        }
        let mut claimed = !plan.claim.is_empty() && self.claim(&plan.claim).await;
        if claimed
            && self.failures == 0
            && free_beyond(
                &table,
                &self.shared.worker_id,
                self.shared.partitions(),
                plan.claim.len(),
            )
        {
            // More was free than this worker's share: with its new leases it may now be owed
            // an extra slot (the others reached their floor meanwhile). Looking again at once
            // takes it in this round rather than the next, which is what keeps a failover
            // within the lease and one renew interval.
            claimed |= self.claim_again().await;
        }
        let asked = !plan.ask.is_empty() && self.ask(&plan.ask).await;
        // After asking, look again soon for a while, as long as this worker is still below its
        // share: the holder releases at its next renew after its drain, and the sooner this
        // worker sees it free, the shorter the handover.
        let below_share = self.keeping() < plan.target;
        let waiting = below_share
            && !self.asked.is_empty()
            && self
                .asked_at
                .is_some_and(|at| at.elapsed() < 2 * self.shared.settings.renew_interval);
        claimed || asked || waiting
    }

    /// Whether this round only looks: a round of a cold start, right after joining a
    /// subscription where no live worker holds a partition (a fleet starting, or a worker
    /// alone).
    ///
    /// Why look before claiming: workers that start together must see each other first, so
    /// that each claims its share directly, instead of the first one claiming everything and
    /// handing most of it over again (100 workers over 10,000 partitions took 4-66 s to settle
    /// that way, against 2.5 s). So when the first look shows other live workers, a fleet is
    /// starting: the round only looks, and the next, one renew interval later (time for the
    /// rest of the fleet to join), claims a share of everyone then live.
    ///
    /// But a worker that is alone (a short job, a test, a command, a single process) would
    /// wait that interval for nobody: 2 s at the defaults before its first entry. So when the
    /// first look shows no other live worker, the worker settles briefly (a tenth of the renew
    /// interval, at most 25 ms: `backoff::COLD_START_SETTLE`; never shorter than that look
    /// took) and looks again. Still alone, it claims everything at once. Others appeared
    /// meanwhile (workers started in one process join within milliseconds of each other): a
    /// fleet is starting, and it waits one renew interval like the rest, so that nothing moves
    /// twice. A worker whose join lands after that second look (a process started hundreds of
    /// ms later) finds the partitions held, or about to be, and gets its share by asking, as a
    /// join into a running fleet does: what moves is its share, nothing more. Where partitions
    /// are held (a join into a running fleet, a failover), nothing waits.
    fn cold_start(&mut self, table: &LeaseTable) -> bool {
        let stage = std::mem::replace(&mut self.cold, ColdStart::Over);
        let owners = balance::live_owners(table, &self.shared.worker_id);
        let nothing_held =
            self.held.is_empty() && balance::held_live(table, &owners).next().is_none();
        let alone = owners.len() == 1;
        match stage {
            ColdStart::Over => false,
            _ if !nothing_held => false,
            ColdStart::FirstLook if alone => {
                self.cold = ColdStart::Settling;
                true
            }
            ColdStart::FirstLook => true,
            ColdStart::Settling => !alone,
        }
    }

    /// A second look at the table in the same round, claiming what the plan then says.
    async fn claim_again(&mut self) -> bool {
        let Some(table) = self.read_table().await else {
            return false;
        };
        self.observe(&table);
        let plan = self.plan(&table);
        !plan.claim.is_empty() && self.claim(&plan.claim).await
    }

    /// Handles a failed lease request of the keeper: `Retired` stops the worker, anything else
    /// is counted, backed off from and retried in a later round. (A heartbeat that expired is
    /// the renewer's to find: only a renew says `NotHeld`.)
    pub(super) fn failed(&mut self, error: Error, what: &str) {
        Counters::add(&self.shared.counters.renew_failures, 1);
        self.failures = self.failures.saturating_add(1);
        match error {
            Error::Retired { .. } => {
                self.lose_all("the subscription is retired");
                self.refused = Some(error);
            }
            error => {
                tracing::warn!(worker = %self.shared.worker_id, %error, "lease {what} failed; trying again");
            }
        }
    }

    /// Brings what the keeper holds in line with what a renew sent at `sent_at` says it holds:
    /// partitions held before it was sent and missing from its answer are lost, partitions the
    /// store has that the keeper let go (a release that failed) are released again, and
    /// handover requests are noted.
    pub(super) async fn reconcile(&mut self, leases: Vec<HeldLease>, sent_at: Instant) {
        self.lose_missing(&leases, sent_at);
        // A release that answered after the renew was sent may be what the renew still lists.
        let strays: Vec<u32> = if self.released_at.is_some_and(|at| at >= sent_at) {
            Vec::new()
        } else {
            leases
                .iter()
                .map(|lease| lease.partition)
                .filter(|partition| !self.held.contains_key(partition))
                .collect()
        };
        self.release_leases(&strays).await;
        self.requested = leases
            .into_iter()
            .filter(|lease| self.held.contains_key(&lease.partition))
            .filter_map(|lease| {
                lease
                    .handover_requested_by
                    .filter(|requester| *requester != self.shared.worker_id)
                    .map(|requester| (lease.partition, requester))
            })
            .collect();
    }

    /// Loses the partitions granted before a request sent at `sent_at` (their grant's answer
    /// arrived before it was sent, so it was executed after the grant) that its answer, every
    /// lease the owner holds, does not list under the same epoch.
    fn lose_missing(&mut self, leases: &[HeldLease], sent_at: Instant) {
        let by_partition: BTreeMap<u32, &HeldLease> = leases
            .iter()
            .map(|lease| (lease.partition, lease))
            .collect();
        let gone: Vec<u32> = self
            .held
            .iter()
            .filter(|(partition, held)| {
                // Strictly before: a request sent in the same instant as the grant's answer
                // arrived (a paused clock, a coarse one) may have been executed before it.
                held.granted_at < sent_at
                    && by_partition
                        .get(partition)
                        .is_none_or(|lease| lease.epoch != held.epoch)
            })
            .map(|(partition, _)| *partition)
            .collect();
        self.lose(&gone, "the store no longer lists it as held");
    }

    async fn read_table(&mut self) -> Option<LeaseTable> {
        let shared = std::sync::Arc::clone(&self.shared);
        let read = shared.store.leases(&shared.group, &shared.subscription);
        match self.call(Operation::Leases, read).await {
            Ok(table) => {
                self.failures = 0;
                Some(table)
            }
            Err(error) => {
                self.failed(error, "table read");
                None
            }
        }
    }

    /// Notes the partitions nobody holds, and since when, and the live workers.
    fn observe(&mut self, table: &LeaseTable) {
        let now = Instant::now();
        let owners = balance::live_owners(table, &self.shared.worker_id);
        let owned: std::collections::BTreeSet<u32> = balance::held_live(table, &owners)
            .map(|lease| lease.partition)
            .collect();
        self.unowned_since
            .retain(|partition, _| !owned.contains(partition));
        for partition in 0..self.shared.partitions() {
            if !owned.contains(&partition) && !self.held.contains_key(&partition) {
                self.unowned_since.entry(partition).or_insert(now);
            }
        }
        // A request of this worker stays pending while its mark is on a live lease, or the
        // partition is free (released for it, to claim).
        let me = self.shared.worker_id.as_str();
        let leases: BTreeMap<u32, &checkpoint_core::Lease> = table
            .leases
            .iter()
            .map(|lease| (lease.partition, lease))
            .collect();
        self.asked.retain(|partition| {
            leases
                .get(partition)
                .is_none_or(|lease| lease.handover_requested_by.as_deref() == Some(me))
        });
        self.live_workers = owners.len();
    }

    /// Partitions held and not being handed over.
    fn keeping(&self) -> usize {
        self.held
            .values()
            .filter(|held| held.leaving.is_none())
            .count()
    }

    fn plan(&self, table: &LeaseTable) -> balance::Plan {
        let keeping = self
            .held
            .iter()
            .filter(|(_, held)| held.leaving.is_none())
            .map(|(partition, _)| *partition)
            .collect();
        let leaving = self
            .held
            .iter()
            .filter(|(_, held)| held.leaving.is_some())
            .map(|(partition, _)| *partition)
            .collect();
        let me = Me {
            id: &self.shared.worker_id,
            partitions: self.shared.partitions(),
            keeping: &keeping,
            leaving: &leaving,
            requested: &self.requested,
        };
        balance::plan(me, table, self.rotation)
    }

    /// Acquires free partitions (which renews everything too) and starts their assignments.
    /// Returns whether anything moved or was refused.
    async fn claim(&mut self, partitions: &[u32]) -> bool {
        let shared = std::sync::Arc::clone(&self.shared);
        let sent_at = Instant::now();
        let acquire = shared.store.acquire(
            &shared.group,
            &shared.subscription,
            &shared.worker_id,
            partitions,
            shared.settings.lease_duration,
        );
        match self.call(Operation::Acquire, acquire).await {
            Ok(acquired) => {
                let answered_at = Instant::now();
                // What the answer no longer lists is lost before the deadline moves: an acquire
                // after the heartbeat expired starts a new one, without the old leases.
                self.lose_missing(&acquired.granted, sent_at);
                // Noted with the deadline, so that a renew sent before this answer arrived and
                // answered `NotHeld` neither clears that deadline nor ends these grants (see
                // `granted`, `expired`): the same instant as their `granted_at`.
                self.granted(sent_at, answered_at);
                let fresh: Vec<HeldLease> = acquired
                    .granted
                    .into_iter()
                    .filter(|lease| !self.held.contains_key(&lease.partition))
                    .collect();
                let moved = !fresh.is_empty() || !acquired.refused.is_empty();
                self.failures = 0;
                self.start_assignments(fresh, answered_at).await;
                moved
            }
            Err(error) => {
                self.failed(error, "acquire");
                true
            }
        }
    }

    /// Asks the holders of `partitions` to hand them over.
    async fn ask(&mut self, partitions: &[u32]) -> bool {
        let fresh = partitions.iter().any(|p| !self.asked.contains(p));
        let shared = std::sync::Arc::clone(&self.shared);
        let request = shared.store.request_handover(
            &shared.group,
            &shared.subscription,
            &shared.worker_id,
            partitions,
        );
        match self.call(Operation::RequestHandover, request).await {
            Ok(()) => {
                self.failures = 0;
                tracing::debug!(worker = %shared.worker_id, ?partitions, "asked for a handover");
                self.asked.extend(partitions);
                if fresh {
                    self.asked_at = Some(Instant::now());
                }
                fresh
            }
            Err(error) => {
                self.failed(error, "handover request");
                true
            }
        }
    }
}

/// Whether `table` shows more partitions without a live lease than the `claimed` ones.
fn free_beyond(table: &LeaseTable, me: &str, partitions: u32, claimed: usize) -> bool {
    let owners = balance::live_owners(table, me);
    let held = balance::held_live(table, &owners).count();
    (partitions as usize).saturating_sub(held) > claimed
}
