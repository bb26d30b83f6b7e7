//! Leases ([`LeaseStore`](checkpoint_core::LeaseStore)): one public case per clause of the
//! contract's "Leases", one file per family.
//!
//! | file | clauses |
//! | --- | --- |
//! | `grants` | acquire grants free partitions and refuses live ones; an own lease keeps its epoch; epochs rise with every change of hands |
//! | `renewal` | renew extends every lease of the owner, never revives an expired one, never reports a lease taken over |
//! | `release` | release frees at once, only by the holder; leave releases everything and ends the heartbeat |
//! | `expiry` | an expired lease goes to another owner, never before the holder's local deadline; one clock decides |
//! | `listing` | `leases` shows every holder and live owner; a handover request reaches the holder |
//! | `ties` | a retired subscription cannot be leased; purge removes leases; a lease never moves a checkpoint |
//! | `race` | of concurrent acquirers of one partition, exactly one wins |
//! | `crossed` | calls of two owners on one lease crossing each other: a release racing a handover request releases; an expired lease goes to a taker racing its former holder's call |
//! | `inputs` | invalid input of every lease operation, rejected naming the argument |
//! | `histories` | generated histories of several owners with real short leases: no two validity windows overlap |
//!
//! Every case takes **two clients** of the same store, `a` and `b` (two connections, two
//! processes' worth of state), so a store that judges expiry on each client's clock, or keeps
//! state in the client, is caught. Owners on `b` are other workers.

use std::time::{Duration, Instant};

use checkpoint_core::{Error, HeldLease, LeaseStore};

use crate::{Failure, fresh_group};

mod crossed;
mod expiry;
mod grants;
mod histories;
mod inputs;
mod listing;
mod race;
mod release;
mod renewal;
mod ties;

pub use crossed::*;
pub use expiry::*;
pub use grants::*;
pub use histories::*;
pub use inputs::*;
pub use listing::*;
pub use race::*;
pub use release::*;
pub use renewal::*;
pub use ties::*;

/// A lease that does not expire during a case, even on a slow emulator.
const LONG: Duration = Duration::from_secs(60);

/// A lease that expires during a case.
const SHORT: Duration = Duration::from_millis(400);

/// How long a case waits for an expired lease to be granted to another owner, past its
/// duration, before it calls the store stuck. DynamoDB's taker must watch a lease for its
/// whole duration first; a loaded emulator answers slowly.
const TAKEOVER_PATIENCE: Duration = Duration::from_secs(15);

/// Rounds of each race case ([`concurrent_acquirers_each_partition_goes_to_one`] and the
/// cases of `crossed`), from `CHECKPOINT_LEASE_RACES` (default 16): a race that goes wrong in
/// one round of many needs many rounds to be seen.
fn rounds() -> u32 {
    std::env::var("CHECKPOINT_LEASE_RACES")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(16)
}

/// The subscription every lease case uses, in a fresh group of its own.
const SUBSCRIPTION: &str = "orders";

fn fresh(label: &str) -> String {
    fresh_group(&format!("lease-{label}"))
}

/// The partitions of `held`, in its order.
fn partitions(held: &[HeldLease]) -> Vec<u32> {
    held.iter().map(|lease| lease.partition).collect()
}

/// The epoch of `partition` in `held`, or a failure naming what was expected.
fn epoch_of(held: &[HeldLease], partition: u32, context: &str) -> Result<u64, Failure> {
    held.iter()
        .find(|lease| lease.partition == partition)
        .map(|lease| lease.epoch)
        .ok_or_else(|| {
            Failure::new(format!(
                "{context}: partition {partition} is not among the leases held, {:?}",
                partitions(held)
            ))
        })
}

/// `owner` polls `acquire` of `partition` until it is granted: when it was sent and received,
/// and the lease. Fails after `patience`.
async fn acquire_when_free<S: LeaseStore + ?Sized>(
    store: &S,
    group: &str,
    owner: &str,
    partition: u32,
    patience: Duration,
) -> Result<(Instant, Instant, HeldLease), Failure> {
    let start = Instant::now();
    loop {
        let sent = Instant::now();
        let acquired = store
            .acquire(group, SUBSCRIPTION, owner, &[partition], LONG)
            .await?;
        let received = Instant::now();
        if let Some(lease) = acquired
            .granted
            .into_iter()
            .find(|lease| lease.partition == partition)
        {
            return Ok((sent, received, lease));
        }
        if start.elapsed() > patience {
            return Err(Failure::new(format!(
                "{owner} was never granted partition {partition} of group {group:?}, {patience:?} after it expired or was released: an expired or free lease must be granted"
            )));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Fails unless `result` is [`Error::NotHeld`] for `owner`.
fn expect_not_held<T: std::fmt::Debug>(
    result: Result<T, Error>,
    owner: &str,
    context: &str,
) -> Result<(), Failure> {
    match result {
        Err(Error::NotHeld { owner: named, .. }) if named == owner => Ok(()),
        other => Err(Failure::new(format!(
            "{context}: expected Error::NotHeld for owner {owner:?}, got {other:?}"
        ))),
    }
}
