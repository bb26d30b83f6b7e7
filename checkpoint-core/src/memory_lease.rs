//! The in-memory reference store's leases: the model every backend's leases are checked
//! against.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use crate::door::{Checked, LeaseDoor};
use crate::lease::{Acquired, HeldLease, Lease, LeaseOwner, LeaseTable, Released};
use crate::{Error, InMemoryCheckpointStore};

/// One lease. It stays when released or expired (with no owner, or an expiry in the past), so
/// that its epoch is never handed out again.
#[derive(Debug, Clone)]
struct LeaseEntry {
    owner: Option<String>,
    epoch: u64,
    expires: Instant,
    handover_requested_by: Option<String>,
}

impl LeaseEntry {
    fn live_owner(&self, now: Instant) -> Option<&str> {
        self.owner.as_deref().filter(|_| self.expires > now)
    }

    fn held(&self, partition: u32) -> HeldLease {
        HeldLease {
            partition,
            epoch: self.epoch,
            handover_requested_by: self.handover_requested_by.clone(),
        }
    }
}

/// The leases and heartbeats of one subscription.
#[derive(Debug, Default)]
pub(crate) struct SubscriptionLeases {
    /// The heartbeat of each owner: when it expires.
    owners: HashMap<String, Instant>,
    leases: BTreeMap<u32, LeaseEntry>,
}

impl SubscriptionLeases {
    /// Extends the heartbeat and every live lease of `owner` to `expires`; returns them.
    fn renew(&mut self, owner: &str, now: Instant, expires: Instant) -> Vec<HeldLease> {
        self.owners.insert(owner.to_owned(), expires);
        let mut held = Vec::new();
        for (&partition, entry) in &mut self.leases {
            if entry.live_owner(now) == Some(owner) {
                entry.expires = expires;
                held.push(entry.held(partition));
            }
        }
        held
    }

    fn heartbeat_is_live(&self, owner: &str, now: Instant) -> bool {
        self.owners.get(owner).is_some_and(|&expires| expires > now)
    }

    /// Grants `partition` to `owner` if it is free, expired or the owner's own.
    fn grant(&mut self, partition: u32, owner: &str, now: Instant, expires: Instant) -> bool {
        let entry = self.leases.entry(partition).or_insert(LeaseEntry {
            owner: None,
            epoch: 0,
            expires: now,
            handover_requested_by: None,
        });
        match entry.live_owner(now) {
            Some(holder) if holder == owner => true,
            Some(_) => false,
            None => {
                entry.owner = Some(owner.to_owned());
                entry.epoch += 1;
                entry.expires = expires;
                entry.handover_requested_by = None;
                true
            }
        }
    }

    /// Frees `partition` if `owner` holds it live.
    fn free(&mut self, partition: u32, owner: &str, now: Instant) -> bool {
        match self.leases.get_mut(&partition) {
            Some(entry) if entry.live_owner(now) == Some(owner) => {
                entry.owner = None;
                entry.expires = now;
                entry.handover_requested_by = None;
                true
            }
            _ => false,
        }
    }
}

impl InMemoryCheckpointStore {
    /// Runs `f` over the leases of the subscription, under the store's one lock.
    fn with_leases<T>(
        &self,
        group: &str,
        subscription: &str,
        f: impl FnOnce(&mut SubscriptionLeases, Instant) -> T,
    ) -> T {
        let now = self.now();
        let mut state = self.state();
        let leases = state
            .leases
            .entry((group.to_owned(), subscription.to_owned()))
            .or_default();
        f(leases, now)
    }

    fn refuse_retired(&self, group: &str, subscription: &str) -> Result<(), Error> {
        if self.state().is_retired(group, subscription) {
            return Err(Error::retired(group, subscription));
        }
        Ok(())
    }
}

fn time_left(expires: Instant, now: Instant) -> Option<Duration> {
    Some(expires.saturating_duration_since(now))
}

impl LeaseDoor for InMemoryCheckpointStore {
    async fn send_acquire(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        owner: &str,
        partitions: &[u32],
        duration: Duration,
    ) -> Result<Acquired, Error> {
        self.refuse_retired(group, subscription)?;
        Ok(self.with_leases(group, subscription, |leases, now| {
            let expires = now + duration;
            leases.renew(owner, now, expires);
            let mut refused: Vec<u32> = partitions
                .iter()
                .copied()
                .filter(|&partition| !leases.grant(partition, owner, now, expires))
                .collect();
            refused.sort_unstable();
            let granted = leases.renew(owner, now, expires);
            Acquired { granted, refused }
        }))
    }

    async fn send_renew(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        owner: &str,
        duration: Duration,
    ) -> Result<Vec<HeldLease>, Error> {
        self.refuse_retired(group, subscription)?;
        self.with_leases(group, subscription, |leases, now| {
            if !leases.heartbeat_is_live(owner, now) {
                return Err(Error::not_held(group, subscription, owner));
            }
            Ok(leases.renew(owner, now, now + duration))
        })
    }

    async fn send_release(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        owner: &str,
        partitions: &[u32],
    ) -> Result<Released, Error> {
        Ok(self.with_leases(group, subscription, |leases, now| {
            let (mut released, mut not_held): (Vec<u32>, Vec<u32>) = partitions
                .iter()
                .partition(|&&partition| leases.free(partition, owner, now));
            released.sort_unstable();
            not_held.sort_unstable();
            Released { released, not_held }
        }))
    }

    async fn send_leave(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        owner: &str,
    ) -> Result<Vec<u32>, Error> {
        Ok(self.with_leases(group, subscription, |leases, now| {
            leases.owners.remove(owner);
            let held: Vec<u32> = leases
                .leases
                .iter()
                .filter(|(_, entry)| entry.live_owner(now) == Some(owner))
                .map(|(&partition, _)| partition)
                .collect();
            for &partition in &held {
                leases.free(partition, owner, now);
            }
            held
        }))
    }

    async fn send_leases(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
    ) -> Result<LeaseTable, Error> {
        Ok(self.with_leases(group, subscription, |leases, now| {
            let mut owners: Vec<LeaseOwner> = leases
                .owners
                .iter()
                .filter(|&(_, &expires)| expires > now)
                .map(|(owner, &expires)| LeaseOwner {
                    owner: owner.clone(),
                    time_left: time_left(expires, now),
                })
                .collect();
            owners.sort_by(|a, b| a.owner.cmp(&b.owner));
            let leases = leases
                .leases
                .iter()
                .filter_map(|(&partition, entry)| {
                    entry.live_owner(now).map(|owner| Lease {
                        partition,
                        owner: owner.to_owned(),
                        epoch: entry.epoch,
                        time_left: time_left(entry.expires, now),
                        handover_requested_by: entry.handover_requested_by.clone(),
                    })
                })
                .collect();
            LeaseTable { leases, owners }
        }))
    }

    async fn send_request_handover(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        requester: &str,
        partitions: &[u32],
    ) -> Result<(), Error> {
        self.with_leases(group, subscription, |leases, now| {
            for partition in partitions {
                if let Some(entry) = leases.leases.get_mut(partition)
                    && entry
                        .live_owner(now)
                        .is_some_and(|holder| holder != requester)
                {
                    entry.handover_requested_by = Some(requester.to_owned());
                }
            }
        });
        Ok(())
    }
}
