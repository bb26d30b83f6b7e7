//! Expiry: an expired lease goes to another owner, never before the holder's local deadline,
//! judged by one clock.

use std::time::{Duration, Instant};

use checkpoint_core::LeaseStore;
use checkpoint_core::lease::holder_deadline;

use super::{SHORT, SUBSCRIPTION, TAKEOVER_PATIENCE, acquire_when_free, epoch_of, fresh};
use crate::{CaseResult, ensure};

/// A lease its holder stops renewing goes to another owner under a higher epoch, and never
/// before the holder's local deadline ([`holder_deadline`]: counted from when the holder sent
/// its acquire). If the grant's reply arrives before that deadline, two owners believed they
/// held the partition at once.
pub async fn an_expired_lease_goes_to_another_owner_after_the_holders_deadline<
    S: LeaseStore + ?Sized,
>(
    a: &S,
    b: &S,
) -> CaseResult {
    let group = fresh("expiry");
    let sent = Instant::now();
    let held = a.acquire(&group, SUBSCRIPTION, "a", &[0], SHORT).await?;
    let deadline = holder_deadline(sent, SHORT);
    let old_epoch = epoch_of(&held.granted, 0, "a's grant")?;
    let (_, received, taken) =
        acquire_when_free(b, &group, "b", 0, SHORT + TAKEOVER_PATIENCE).await?;
    ensure!(
        received >= deadline,
        "b was granted a's lease {:?} before a's local deadline (a acquired it for {SHORT:?}): the store gave away a lease its holder could still be using",
        deadline - received
    );
    ensure!(
        taken.epoch > old_epoch,
        "the epoch of a lease taken over after expiry is {}, not above the old holder's {old_epoch}",
        taken.epoch
    );
    Ok(())
}

/// How long the lease of [`one_clock_decides_expiry`] lasts.
const MINUTE: Duration = Duration::from_secs(60);

/// Expiry is judged by one clock, not each client's: a live lease of a minute is refused to
/// another owner on another client, and that client sees it with at most a minute left (or
/// with no time at all where the store has no clock). A store that judged expiry by the
/// calling client's wall clock would give a client whose clock runs ahead a live lease.
pub async fn one_clock_decides_expiry<S: LeaseStore + ?Sized>(a: &S, b: &S) -> CaseResult {
    let group = fresh("one-clock");
    a.acquire(&group, SUBSCRIPTION, "a", &[0], MINUTE).await?;
    let other = b.acquire(&group, SUBSCRIPTION, "b", &[0], MINUTE).await?;
    ensure!(
        other.granted.is_empty(),
        "client b was granted a lease that client a holds for a minute: is expiry judged by each client's own clock?"
    );
    let table = b.leases(&group, SUBSCRIPTION).await?;
    let lease = table.leases.iter().find(|lease| lease.partition == 0);
    ensure!(
        lease.is_some_and(|lease| lease.owner == "a"
            && lease
                .time_left
                .is_none_or(|left| left <= MINUTE && left > MINUTE / 2)),
        "client b lists a's one-minute lease as {lease:?}: a, with at most a minute left (and more than half of it)"
    );
    Ok(())
}
