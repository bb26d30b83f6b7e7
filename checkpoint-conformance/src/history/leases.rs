//! Lease histories: several owners acquiring, renewing and releasing the same few partitions
//! with real short leases, every call recorded with when it was sent and when its reply came;
//! then checked that no two owners believed they held a partition at the same time.
//!
//! An owner believes it holds a lease from the reply that granted it until its local deadline
//! ([`holder_deadline`] of the last acquire or renew that reported it), or until it sends its
//! release, whichever comes first. [`check_lease_history`] fails when two such windows of one
//! partition overlap, when one epoch was granted to two owners, or when a later grant carries
//! a lower epoch than an earlier one.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use checkpoint_core::lease::holder_deadline;
use checkpoint_core::{Error, HeldLease, LeaseStore};
use futures_util::future::join_all;
use proptest::prelude::*;
use proptest::strategy::SBoxedStrategy;

use crate::Failure;

/// The partitions of a lease history.
pub const LEASE_PARTITIONS: u32 = 3;

/// The lease duration of every call of a history: short, so that leases expire and change
/// hands during it.
pub const HISTORY_LEASE: Duration = Duration::from_millis(300);

/// One step of an owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseStep {
    /// Acquire the partitions whose bits are set.
    Acquire(u8),
    /// Renew every lease held.
    Renew,
    /// Release the partitions whose bits are set.
    Release(u8),
    /// Do nothing for this many milliseconds (a pause that may outlast the lease).
    Pause(u16),
}

/// The steps of each owner of one history.
#[derive(Debug, Clone)]
pub struct LeasePlan {
    /// One list of steps per owner; owner `i` is `w{i}`, on client `a` when `i` is even.
    pub owners: Vec<Vec<LeaseStep>>,
}

fn step() -> impl Strategy<Value = LeaseStep> {
    prop_oneof![
        3 => (1..8u8).prop_map(LeaseStep::Acquire),
        3 => Just(LeaseStep::Renew),
        1 => (1..8u8).prop_map(LeaseStep::Release),
        3 => (0..400u16).prop_map(LeaseStep::Pause),
    ]
}

/// Plans of 2 to 4 owners of 4 to 14 steps each.
pub fn lease_plans() -> SBoxedStrategy<LeasePlan> {
    prop::collection::vec(prop::collection::vec(step(), 4..14), 2..=4)
        .prop_map(|owners| LeasePlan { owners })
        .sboxed()
}

fn mask(bits: u8) -> Vec<u32> {
    (0..LEASE_PARTITIONS)
        .filter(|p| bits & (1 << p) != 0)
        .collect()
}

/// What one call did: when it was sent and answered, and its outcome.
#[derive(Debug, Clone)]
pub struct LeaseEvent {
    /// The owner.
    pub owner: String,
    /// Sent.
    pub sent: Instant,
    /// Answered.
    pub received: Instant,
    /// The outcome.
    pub outcome: LeaseOutcome,
}

/// The outcome of a call, as far as the checker needs it.
#[derive(Debug, Clone)]
pub enum LeaseOutcome {
    /// An acquire or renew that reported these leases held.
    Held(Vec<HeldLease>),
    /// A release sent for these partitions (whatever its reply).
    Released(Vec<u32>),
    /// A renew refused with `NotHeld`, or an error: nothing is believed from it.
    Nothing,
}

/// Runs one owner's steps against `store` and records every call.
async fn run_owner<S: LeaseStore + ?Sized>(
    store: &S,
    group: &str,
    owner: String,
    steps: Vec<LeaseStep>,
) -> Result<Vec<LeaseEvent>, Failure> {
    let mut events = Vec::new();
    for step in steps {
        let sent = Instant::now();
        let outcome = match step {
            LeaseStep::Pause(ms) => {
                tokio::time::sleep(Duration::from_millis(u64::from(ms))).await;
                continue;
            }
            LeaseStep::Acquire(bits) => store
                .acquire(group, "orders", &owner, &mask(bits), HISTORY_LEASE)
                .await
                .map(|acquired| LeaseOutcome::Held(acquired.granted)),
            LeaseStep::Renew => match store.renew(group, "orders", &owner, HISTORY_LEASE).await {
                Err(Error::NotHeld { .. }) => Ok(LeaseOutcome::Nothing),
                other => other.map(LeaseOutcome::Held),
            },
            LeaseStep::Release(bits) => store
                .release(group, "orders", &owner, &mask(bits))
                .await
                .map(|_| LeaseOutcome::Released(mask(bits))),
        };
        let outcome = outcome.map_err(|error| {
            Failure::new(format!(
                "{owner}'s {step:?} failed: {}",
                crate::error_chain(&error)
            ))
        })?;
        let received = Instant::now();
        events.push(LeaseEvent {
            owner: owner.clone(),
            sent,
            received,
            outcome,
        });
    }
    Ok(events)
}

/// Runs `plan` in `group` with its owners on clients `a` and `b` at once.
pub async fn run_lease_plan<S: LeaseStore + ?Sized>(
    a: &S,
    b: &S,
    group: &str,
    plan: &LeasePlan,
) -> Result<Vec<LeaseEvent>, Failure> {
    let runs = plan.owners.iter().enumerate().map(|(index, steps)| {
        let store = if index % 2 == 0 { a } else { b };
        run_owner(store, group, format!("w{index}"), steps.clone())
    });
    let mut events = Vec::new();
    for owner_events in join_all(runs).await {
        events.extend(owner_events?);
    }
    Ok(events)
}

/// One owner's belief in one lease: from the grant's reply to its last local deadline (or its
/// release).
#[derive(Debug, Clone, Copy)]
struct Window {
    granted_sent: Instant,
    start: Instant,
    end: Instant,
}

type Windows = BTreeMap<(u32, String, u64), Window>;

fn windows(events: &[LeaseEvent]) -> Windows {
    let mut ordered: Vec<&LeaseEvent> = events.iter().collect();
    ordered.sort_by_key(|event| event.sent);
    let mut windows = Windows::new();
    for event in ordered {
        match &event.outcome {
            LeaseOutcome::Held(held) => {
                let deadline = holder_deadline(event.sent, HISTORY_LEASE);
                for lease in held {
                    let key = (lease.partition, event.owner.clone(), lease.epoch);
                    let window = windows.entry(key).or_insert(Window {
                        granted_sent: event.sent,
                        start: event.received,
                        end: deadline,
                    });
                    window.end = window.end.max(deadline);
                }
            }
            LeaseOutcome::Released(partitions) => {
                for ((partition, owner, _), window) in windows.iter_mut() {
                    if owner == &event.owner
                        && partitions.contains(partition)
                        && window.start <= event.sent
                    {
                        window.end = window.end.min(event.sent);
                    }
                }
            }
            LeaseOutcome::Nothing => {}
        }
    }
    windows
}

/// Checks a recorded lease history: per partition, no two (owner, epoch) windows overlap, an
/// epoch belongs to one owner, and a grant that began after another ended has a higher epoch.
pub fn check_lease_history(events: &[LeaseEvent]) -> Result<(), Failure> {
    let windows: Vec<((u32, String, u64), Window)> = windows(events).into_iter().collect();
    for (i, ((partition, owner, epoch), first)) in windows.iter().enumerate() {
        for ((other_partition, other_owner, other_epoch), second) in &windows[i + 1..] {
            if partition != other_partition {
                continue;
            }
            let at = |instant: Instant| {
                format!(
                    "{:?}",
                    instant.saturating_duration_since(first.granted_sent.min(second.granted_sent))
                )
            };
            if epoch == other_epoch && owner != other_owner {
                return Err(Failure::new(format!(
                    "partition {partition}: epoch {epoch} was granted to {owner} and to {other_owner}: an epoch is never handed out twice"
                )));
            }
            let overlap = first.start < second.end
                && second.start < first.end
                && first.start < first.end
                && second.start < second.end;
            if overlap {
                return Err(Failure::new(format!(
                    "partition {partition}: {owner} (epoch {epoch}) believed it held the lease from {} to {}, and {other_owner} (epoch {other_epoch}) from {} to {}: two holders at once",
                    at(first.start),
                    at(first.end),
                    at(second.start),
                    at(second.end)
                )));
            }
            let (earlier, later) = if first.start <= second.start {
                ((owner, epoch, first), (other_owner, other_epoch, second))
            } else {
                ((other_owner, other_epoch, second), (owner, epoch, first))
            };
            if earlier.2.start < later.2.granted_sent && later.1 < earlier.1 {
                return Err(Failure::new(format!(
                    "partition {partition}: {} was granted epoch {} after {} had been granted epoch {}: epochs must increase",
                    later.0, later.1, earlier.0, earlier.1
                )));
            }
        }
    }
    Ok(())
}
