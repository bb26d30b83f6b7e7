//! Renew: every lease of the owner in one call; never a revival, never a lease taken over.

use std::time::{Duration, Instant};

use checkpoint_core::LeaseStore;
use checkpoint_core::lease::holder_deadline;

use super::{
    LONG, SHORT, SUBSCRIPTION, TAKEOVER_PATIENCE, acquire_when_free, expect_not_held, fresh,
    partitions,
};
use crate::{CaseResult, Failure, ensure, ensure_eq};

/// How long the renewed leases of [`renew_extends_every_lease_of_the_owner`] last.
const RENEWED: Duration = Duration::from_millis(1_500);

/// `renew` extends **every** lease of the owner: renewed well within their duration for
/// longer than that duration, all of them are still held (none granted to another owner),
/// and each renew reports all of them under unchanged epochs.
pub async fn renew_extends_every_lease_of_the_owner<S: LeaseStore + ?Sized>(
    a: &S,
    b: &S,
) -> CaseResult {
    let group = fresh("renew");
    let all = [0, 1, 2, 3, 4];
    let mut sent = Instant::now();
    let acquired = a.acquire(&group, SUBSCRIPTION, "a", &all, RENEWED).await?;
    for round in 0..4 {
        tokio::time::sleep(RENEWED / 3).await;
        if Instant::now() >= holder_deadline(sent, RENEWED) {
            return Err(Failure::new(format!(
                "renew round {round} could not be sent before a's local deadline: the store answers slower than {:?}, too slow for this case",
                RENEWED / 3
            )));
        }
        sent = Instant::now();
        let renewed = a.renew(&group, SUBSCRIPTION, "a", RENEWED).await?;
        ensure_eq!(
            renewed,
            acquired.granted,
            "renew round {round} of an owner holding partitions {all:?}: it must report every one under its epoch"
        );
    }
    let taker = b.acquire(&group, SUBSCRIPTION, "b", &all, LONG).await?;
    ensure!(
        taker.granted.is_empty(),
        "after a renewed its leases {:?} every {:?} (each for {RENEWED:?}), b was granted {:?}: renew must extend every lease of the owner",
        all,
        RENEWED / 3,
        partitions(&taker.granted)
    );
    Ok(())
}

/// A renew of an owner that never acquired, or whose leases expired, is
/// [`Error::NotHeld`](checkpoint_core::Error::NotHeld): a renew never revives a lease.
pub async fn renew_without_live_leases_is_not_held<S: LeaseStore + ?Sized>(
    a: &S,
    _b: &S,
) -> CaseResult {
    let group = fresh("renew-none");
    expect_not_held(
        a.renew(&group, SUBSCRIPTION, "a", LONG).await,
        "a",
        "renew of an owner that never acquired",
    )?;
    a.acquire(&group, SUBSCRIPTION, "a", &[0], SHORT).await?;
    tokio::time::sleep(SHORT * 2).await;
    expect_not_held(
        a.renew(&group, SUBSCRIPTION, "a", LONG).await,
        "a",
        "renew of an owner whose only lease expired (duration 400 ms, renewed 800 ms later)",
    )
}

/// Once another owner took an expired lease, the old holder's renew is
/// [`Error::NotHeld`](checkpoint_core::Error::NotHeld): it is never accepted, and the lease
/// stays with the new holder.
pub async fn renew_after_a_takeover_is_refused<S: LeaseStore + ?Sized>(a: &S, b: &S) -> CaseResult {
    let group = fresh("renew-taken");
    a.acquire(&group, SUBSCRIPTION, "a", &[0, 1], SHORT).await?;
    let (_, _, taken) = acquire_when_free(b, &group, "b", 0, SHORT + TAKEOVER_PATIENCE).await?;
    expect_not_held(
        a.renew(&group, SUBSCRIPTION, "a", LONG).await,
        "a",
        "renew of a after b took over its expired lease 0",
    )?;
    let table = b.leases(&group, SUBSCRIPTION).await?;
    let holder = table.leases.iter().find(|lease| lease.partition == 0);
    ensure!(
        holder.is_some_and(|lease| lease.owner == "b" && lease.epoch == taken.epoch),
        "after a's refused renew, lease 0 is {holder:?}: it must stay b's, epoch {}",
        taken.epoch
    );
    Ok(())
}
