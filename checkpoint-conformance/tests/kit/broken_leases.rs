//! Lease stores with one deliberate flaw each, which the kit's lease cases must catch.
//!
//! [`BrokenLeaseStore::pair`] makes two clients sharing one state, as the kit's lease cases
//! take them; without its flaw the store keeps the lease contract (the teeth tests check that
//! too, so a case that fails on everything proves nothing).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use checkpoint_core::validation::{
    validate_acquire, validate_key, validate_lease_owner, validate_release, validate_renew,
    validate_request_handover,
};
use checkpoint_core::{
    Acquired, Error, HeldLease, Lease, LeaseOwner, LeaseStore, LeaseTable, Released,
};

/// What is wrong with a [`BrokenLeaseStore`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseFlaw {
    /// Nothing: the store keeps the contract.
    None,
    /// Acquire checks which partitions are free, then grants them later, outside the atomic
    /// step: two acquirers can both win.
    RacyAcquire,
    /// Renew does not check that the owner's leases are still live: it is accepted after
    /// another owner acquired one of them, and revives the rest.
    RenewAfterTakeover,
    /// Release forgets the lease, epoch and all: the next grant reuses epoch 1.
    EpochReused,
    /// Release frees a lease whoever asks.
    ReleaseByAnyone,
    /// Expiry is judged by each client's own clock, and client `b`'s runs an hour ahead.
    ClientClock,
    /// Renew extends only the owner's lowest partition (and reports all of them held).
    PartialRenew,
    /// `leases` leaves out the last lease.
    ListMissesHolder,
    /// `request_handover` reads the lease, and a few milliseconds later writes the whole entry
    /// back with its mark: a release in between is undone, the holder holds it again.
    LostUpdate,
    /// An owner's `acquire` keeps it busy for a few milliseconds (as a statement holds a row
    /// lock), and another owner's `acquire` refuses an expired lease whose former holder is
    /// busy, instead of granting it.
    BusyHolderKeepsExpired,
}

/// How long a [`LeaseFlaw::LostUpdate`] request waits between reading and writing, and a
/// [`LeaseFlaw::BusyHolderKeepsExpired`] owner stays busy after its acquire.
const FLAW_WINDOW: Duration = Duration::from_millis(4);

#[derive(Debug, Clone)]
struct Entry {
    owner: Option<String>,
    epoch: u64,
    expires: Instant,
    wanted_by: Option<String>,
}

#[derive(Debug, Default)]
struct Subscription {
    owners: HashMap<String, Instant>,
    leases: BTreeMap<u32, Entry>,
    /// Until when each owner is busy with its acquire ([`LeaseFlaw::BusyHolderKeepsExpired`]).
    busy: HashMap<String, Instant>,
}

type State = HashMap<(String, String), Subscription>;

/// A lease store with one [`LeaseFlaw`].
#[derive(Debug, Clone)]
pub struct BrokenLeaseStore {
    state: Arc<Mutex<State>>,
    flaw: LeaseFlaw,
    /// Added to this client's clock; only [`LeaseFlaw::ClientClock`] reads a client clock.
    skew: Duration,
}

impl BrokenLeaseStore {
    /// Two clients of one store with `flaw`.
    pub fn pair(flaw: LeaseFlaw) -> (Self, Self) {
        let state = Arc::new(Mutex::new(State::new()));
        let skew = if flaw == LeaseFlaw::ClientClock {
            Duration::from_secs(3600)
        } else {
            Duration::ZERO
        };
        let a = Self {
            state: state.clone(),
            flaw,
            skew: Duration::ZERO,
        };
        let b = Self { state, flaw, skew };
        (a, b)
    }

    fn now(&self) -> Instant {
        Instant::now() + self.skew
    }

    fn with<T>(
        &self,
        group: &str,
        subscription: &str,
        f: impl FnOnce(&mut Subscription) -> T,
    ) -> T {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        f(state
            .entry((group.to_owned(), subscription.to_owned()))
            .or_default())
    }
}

fn live(entry: &Entry, now: Instant) -> Option<&str> {
    entry.owner.as_deref().filter(|_| entry.expires > now)
}

impl Subscription {
    fn held(&self, owner: &str, now: Instant) -> Vec<HeldLease> {
        self.leases
            .iter()
            .filter(|(_, entry)| live(entry, now) == Some(owner))
            .map(|(&partition, entry)| HeldLease {
                partition,
                epoch: entry.epoch,
                handover_requested_by: entry.wanted_by.clone(),
            })
            .collect()
    }

    fn extend(&mut self, owner: &str, now: Instant, expires: Instant, only_first: bool) {
        self.owners.insert(owner.to_owned(), expires);
        for entry in self.leases.values_mut() {
            if live(entry, now) == Some(owner) {
                entry.expires = expires;
                if only_first {
                    break;
                }
            }
        }
    }

    /// Whether `partition` has an expired lease of another owner who is busy now.
    fn held_by_busy(&self, partition: u32, owner: &str, now: Instant) -> bool {
        self.leases.get(&partition).is_some_and(|entry| {
            live(entry, now).is_none()
                && entry.owner.as_deref().is_some_and(|holder| {
                    holder != owner && self.busy.get(holder).is_some_and(|&until| until > now)
                })
        })
    }

    fn grant(
        &mut self,
        partition: u32,
        owner: &str,
        now: Instant,
        expires: Instant,
        force: bool,
    ) -> bool {
        let entry = self.leases.entry(partition).or_insert(Entry {
            owner: None,
            epoch: 0,
            expires: now,
            wanted_by: None,
        });
        match live(entry, now) {
            Some(holder) if holder == owner => true,
            Some(_) if !force => false,
            _ => {
                entry.owner = Some(owner.to_owned());
                entry.epoch += 1;
                entry.expires = expires;
                entry.wanted_by = None;
                true
            }
        }
    }
}

impl BrokenLeaseStore {
    /// The free partitions now, granted after a pause: two acquirers both see them free.
    async fn racy_acquire(
        &self,
        group: &str,
        subscription: &str,
        owner: &str,
        partitions: &[u32],
        duration: Duration,
    ) -> Acquired {
        let now = self.now();
        let free: Vec<u32> = self.with(group, subscription, |s| {
            partitions
                .iter()
                .copied()
                .filter(|p| {
                    s.leases
                        .get(p)
                        .is_none_or(|e| live(e, now).is_none_or(|h| h == owner))
                })
                .collect()
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        let now = self.now();
        self.with(group, subscription, |s| {
            s.extend(owner, now, now + duration, false);
            for &partition in &free {
                s.grant(partition, owner, now, now + duration, true);
            }
            let refused = partitions
                .iter()
                .copied()
                .filter(|p| !free.contains(p))
                .collect();
            Acquired {
                granted: s.held(owner, now),
                refused,
            }
        })
    }

    /// The live leases of others among `partitions` read now, and written back whole with the
    /// mark after a pause: whatever happened to them in between is undone.
    async fn lost_update_request(
        &self,
        group: &str,
        subscription: &str,
        requester: &str,
        partitions: &[u32],
    ) {
        let now = self.now();
        let read: Vec<(u32, Entry)> = self.with(group, subscription, |s| {
            partitions
                .iter()
                .filter_map(|&p| Some((p, s.leases.get(&p)?.clone())))
                .filter(|(_, e)| live(e, now).is_some_and(|holder| holder != requester))
                .collect()
        });
        tokio::time::sleep(FLAW_WINDOW).await;
        self.with(group, subscription, |s| {
            for (partition, mut entry) in read {
                entry.wanted_by = Some(requester.to_owned());
                s.leases.insert(partition, entry);
            }
        });
    }
}

#[async_trait]
impl LeaseStore for BrokenLeaseStore {
    async fn acquire(
        &self,
        group: &str,
        subscription: &str,
        owner: &str,
        partitions: &[u32],
        duration: Duration,
    ) -> Result<Acquired, Error> {
        validate_acquire(group, subscription, owner, partitions, duration)?;
        if self.flaw == LeaseFlaw::RacyAcquire {
            return Ok(self
                .racy_acquire(group, subscription, owner, partitions, duration)
                .await);
        }
        let now = self.now();
        let busy = self.flaw == LeaseFlaw::BusyHolderKeepsExpired;
        Ok(self.with(group, subscription, |s| {
            if busy {
                s.busy
                    .insert(owner.to_owned(), Instant::now() + FLAW_WINDOW);
            }
            s.extend(owner, now, now + duration, false);
            let mut refused: Vec<u32> = partitions
                .iter()
                .copied()
                .filter(|&p| {
                    (busy && s.held_by_busy(p, owner, now))
                        || !s.grant(p, owner, now, now + duration, false)
                })
                .collect();
            refused.sort_unstable();
            Acquired {
                granted: s.held(owner, now),
                refused,
            }
        }))
    }

    async fn renew(
        &self,
        group: &str,
        subscription: &str,
        owner: &str,
        duration: Duration,
    ) -> Result<Vec<HeldLease>, Error> {
        validate_renew(group, subscription, owner, duration)?;
        let now = self.now();
        let flaw = self.flaw;
        self.with(group, subscription, |s| {
            if flaw == LeaseFlaw::RenewAfterTakeover {
                s.owners.insert(owner.to_owned(), now + duration);
                for entry in s
                    .leases
                    .values_mut()
                    .filter(|e| e.owner.as_deref() == Some(owner))
                {
                    entry.expires = now + duration;
                }
                return Ok(s.held(owner, now));
            }
            if s.owners.get(owner).is_none_or(|&expires| expires <= now) {
                return Err(Error::not_held(group, subscription, owner));
            }
            let held = s.held(owner, now);
            s.extend(owner, now, now + duration, flaw == LeaseFlaw::PartialRenew);
            Ok(held)
        })
    }

    async fn release(
        &self,
        group: &str,
        subscription: &str,
        owner: &str,
        partitions: &[u32],
    ) -> Result<Released, Error> {
        validate_release(group, subscription, owner, partitions)?;
        let now = self.now();
        let flaw = self.flaw;
        Ok(self.with(group, subscription, |s| {
            let mut answer = Released::default();
            for &partition in partitions {
                let holds = s.leases.get(&partition).is_some_and(|e| {
                    live(e, now) == Some(owner)
                        || (flaw == LeaseFlaw::ReleaseByAnyone && live(e, now).is_some())
                });
                if !holds {
                    answer.not_held.push(partition);
                } else if flaw == LeaseFlaw::EpochReused {
                    s.leases.remove(&partition);
                    answer.released.push(partition);
                } else if let Some(entry) = s.leases.get_mut(&partition) {
                    entry.owner = None;
                    entry.wanted_by = None;
                    answer.released.push(partition);
                }
            }
            answer.released.sort_unstable();
            answer.not_held.sort_unstable();
            answer
        }))
    }

    async fn leave(&self, group: &str, subscription: &str, owner: &str) -> Result<Vec<u32>, Error> {
        validate_lease_owner(group, subscription, owner)?;
        let now = self.now();
        Ok(self.with(group, subscription, |s| {
            s.owners.remove(owner);
            let held = s.held(owner, now);
            for lease in &held {
                if let Some(entry) = s.leases.get_mut(&lease.partition) {
                    entry.owner = None;
                }
            }
            held.iter().map(|lease| lease.partition).collect()
        }))
    }

    async fn leases(&self, group: &str, subscription: &str) -> Result<LeaseTable, Error> {
        validate_key(group, subscription)?;
        let now = self.now();
        let flaw = self.flaw;
        Ok(self.with(group, subscription, |s| {
            let mut leases: Vec<Lease> = s
                .leases
                .iter()
                .filter_map(|(&partition, entry)| {
                    live(entry, now).map(|owner| Lease {
                        partition,
                        owner: owner.to_owned(),
                        epoch: entry.epoch,
                        time_left: Some(entry.expires.saturating_duration_since(now)),
                        handover_requested_by: entry.wanted_by.clone(),
                    })
                })
                .collect();
            if flaw == LeaseFlaw::ListMissesHolder {
                leases.pop();
            }
            let mut owners: Vec<LeaseOwner> = s
                .owners
                .iter()
                .filter(|&(_, &e)| e > now)
                .map(|(owner, &e)| LeaseOwner {
                    owner: owner.clone(),
                    time_left: Some(e.saturating_duration_since(now)),
                })
                .collect();
            owners.sort_by(|x, y| x.owner.cmp(&y.owner));
            LeaseTable { leases, owners }
        }))
    }

    async fn request_handover(
        &self,
        group: &str,
        subscription: &str,
        requester: &str,
        partitions: &[u32],
    ) -> Result<(), Error> {
        validate_request_handover(group, subscription, requester, partitions)?;
        if self.flaw == LeaseFlaw::LostUpdate {
            self.lost_update_request(group, subscription, requester, partitions)
                .await;
            return Ok(());
        }
        let now = self.now();
        self.with(group, subscription, |s| {
            for partition in partitions {
                if let Some(entry) = s.leases.get_mut(partition)
                    && live(entry, now).is_some_and(|holder| holder != requester)
                {
                    entry.wanted_by = Some(requester.to_owned());
                }
            }
        });
        Ok(())
    }
}
