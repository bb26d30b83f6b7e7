//! What the store instance knows that DynamoDB cannot, on its own monotonic clock
//! (`std::time::Instant`): the local deadline of every owner it acquired for, and since when
//! it has seen every other owner's heartbeat unchanged. DynamoDB has no clock a condition can
//! read; these two take its place (the crate documentation, "Leases", says why it is safe).
//!
//! Shared by the store's clones; no lock is held across a request.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use checkpoint_core::lease::holder_deadline;

use crate::layout::Heartbeat;

/// (group, subscription, owner).
type OwnerKey = (String, String, String);

fn owner_key(group: &str, subscription: &str, owner: &str) -> OwnerKey {
    (group.to_owned(), subscription.to_owned(), owner.to_owned())
}

/// An owner this instance acquired for: its heartbeat generation, and when to stop.
#[derive(Debug, Clone, Copy)]
struct Held {
    generation: u64,
    deadline: Instant,
}

/// Another owner's heartbeat as this instance first saw it unchanged.
#[derive(Debug, Clone, Copy)]
struct Observed {
    counter: u64,
    generation: u64,
    incarnation: u64,
    since: Instant,
}

/// The heartbeats of a subscription as one read found them, each judged live or dead by this
/// instance's observations.
#[derive(Debug, Default)]
pub(crate) struct Owners {
    /// Every heartbeat read, by owner, with whether this instance has seen it unchanged for
    /// its whole duration (so that its owner has stopped, by its own local deadline).
    pub(crate) heartbeats: BTreeMap<String, (Heartbeat, bool)>,
}

impl Owners {
    /// Whether `owner`'s heartbeat is live: read, not ended, not seen unchanged for its
    /// duration.
    pub(crate) fn is_live(&self, owner: &str) -> bool {
        self.heartbeats
            .get(owner)
            .is_some_and(|(heartbeat, dead)| !heartbeat.ended && !dead)
    }
}

/// The instance's local deadlines and observations.
#[derive(Debug, Default)]
pub(crate) struct LeaseClock {
    held: Mutex<HashMap<OwnerKey, Held>>,
    observed: Mutex<HashMap<OwnerKey, Observed>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every update is a single insert or remove: a panic elsewhere leaves nothing half done.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl LeaseClock {
    /// The generation `owner` holds, if its local deadline has not passed.
    pub(crate) fn live_generation(
        &self,
        group: &str,
        subscription: &str,
        owner: &str,
    ) -> Option<u64> {
        let held = lock(&self.held);
        held.get(&owner_key(group, subscription, owner))
            .filter(|held| held.deadline > Instant::now())
            .map(|held| held.generation)
    }

    /// `owner` holds `generation` until `holder_deadline(sent_at, duration)`.
    pub(crate) fn hold(
        &self,
        (group, subscription, owner): (&str, &str, &str),
        generation: u64,
        sent_at: Instant,
        duration: Duration,
    ) {
        let deadline = holder_deadline(sent_at, duration);
        lock(&self.held).insert(
            owner_key(group, subscription, owner),
            Held {
                generation,
                deadline,
            },
        );
    }

    /// `owner` holds nothing any more.
    pub(crate) fn forget(&self, group: &str, subscription: &str, owner: &str) {
        lock(&self.held).remove(&owner_key(group, subscription, owner));
    }

    /// Records the heartbeats a read found (`read_at`: when its reply arrived) and judges each:
    /// dead when this instance has seen it with the same counter, generation and incarnation
    /// for at least its duration.
    pub(crate) fn observe(
        &self,
        group: &str,
        subscription: &str,
        heartbeats: Vec<Heartbeat>,
        read_at: Instant,
    ) -> Owners {
        let now = Instant::now();
        let mut observed = lock(&self.observed);
        let mut owners = Owners::default();
        for heartbeat in heartbeats {
            let key = owner_key(group, subscription, &heartbeat.owner);
            let seen = observed.entry(key).or_insert(Observed {
                counter: heartbeat.counter,
                generation: heartbeat.generation,
                incarnation: heartbeat.incarnation,
                since: read_at,
            });
            if (seen.counter, seen.generation, seen.incarnation)
                != (
                    heartbeat.counter,
                    heartbeat.generation,
                    heartbeat.incarnation,
                )
            {
                *seen = Observed {
                    counter: heartbeat.counter,
                    generation: heartbeat.generation,
                    incarnation: heartbeat.incarnation,
                    since: read_at,
                };
            }
            let duration = Duration::from_millis(heartbeat.duration_ms);
            let dead = now.saturating_duration_since(seen.since) >= duration;
            owners
                .heartbeats
                .insert(heartbeat.owner.clone(), (heartbeat, dead));
        }
        owners
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn heartbeat(counter: u64, generation: u64, duration_ms: u64) -> Heartbeat {
        Heartbeat {
            owner: "y".to_owned(),
            counter,
            generation,
            duration_ms,
            incarnation: 7,
            ended: false,
        }
    }

    #[test]
    fn an_owner_is_dead_once_seen_unchanged_for_its_duration() {
        let clock = LeaseClock::default();
        let first = Instant::now();
        let owners = clock.observe("g", "s", vec![heartbeat(1, 1, 50)], first);
        assert!(owners.is_live("y"), "first seen just now");
        std::thread::sleep(Duration::from_millis(60));
        let owners = clock.observe("g", "s", vec![heartbeat(1, 1, 50)], Instant::now());
        assert!(
            !owners.is_live("y"),
            "unchanged for longer than its duration"
        );
        // A beat (or a new generation) starts the wait again, from the read that saw it.
        let owners = clock.observe("g", "s", vec![heartbeat(2, 1, 50)], Instant::now());
        assert!(owners.is_live("y"));
        let mut ended = heartbeat(2, 2, 50);
        ended.ended = true;
        assert!(
            !clock
                .observe("g", "s", vec![ended], Instant::now())
                .is_live("y")
        );
        assert!(!owners.is_live("never-seen"));
    }

    #[test]
    fn a_local_deadline_passes() {
        let clock = LeaseClock::default();
        let key = ("g", "s", "x");
        clock.hold(key, 3, Instant::now(), Duration::from_secs(60));
        assert_eq!(clock.live_generation("g", "s", "x"), Some(3));
        clock.hold(key, 4, Instant::now(), Duration::from_millis(10));
        std::thread::sleep(Duration::from_millis(10));
        assert_eq!(clock.live_generation("g", "s", "x"), None);
        clock.forget("g", "s", "x");
        assert_eq!(clock.live_generation("g", "s", "x"), None);
    }
}
