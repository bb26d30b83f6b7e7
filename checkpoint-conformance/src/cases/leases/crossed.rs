//! Calls of two owners on one lease crossing each other: each must answer as it would alone,
//! whichever lands first. A store that judges a row on one version and writes another, or
//! that refuses what it could not look at in time, shows it only in some rounds of many (see
//! [`rounds`](super::rounds)).

use std::future::Future;
use std::time::Duration;

use checkpoint_core::{Acquired, Error, HeldLease, LeaseStore, LeaseTable};

use super::{LONG, SUBSCRIPTION, expect_not_held, fresh, partitions, rounds};
use crate::{CaseResult, ensure};

/// `call`, started `delay` later (at once for no delay: a zero sleep may still wait for the
/// timer's next tick).
async fn after<T>(delay: Duration, call: impl Future<Output = T>) -> T {
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    call.await
}

/// The delays of round `round` for two crossing calls: one of them starts 0, 1 or 2 ms after
/// the other, each in turn, so that both orders and the overlaps between occur.
fn staggered(round: u32) -> (Duration, Duration) {
    let delay = Duration::from_millis(u64::from(round % 3));
    if round.is_multiple_of(2) {
        (delay, Duration::ZERO)
    } else {
        (Duration::ZERO, delay)
    }
}

/// Round after round, a holds partition 0 live; then a releases it while b asks for it with
/// `request_handover`, one call started 0-2 ms after the other. a held it, so whatever the
/// order the release answers `released: [0]`, and the lease is free afterwards: a's renew
/// does not report it, `leases` does not list it. (A request that lands first only marks the
/// lease; one that lands second finds it free and leaves it so.) A store that writes the mark
/// over a lease released in between, or judges the release on a version the mark replaced,
/// leaves a holding what it was told is released.
pub async fn a_release_racing_a_handover_request_releases<S: LeaseStore + ?Sized>(
    a: &S,
    b: &S,
) -> CaseResult {
    for round in 0..rounds() {
        let group = fresh("release-crossed");
        let group = group.as_str();
        a.acquire(group, SUBSCRIPTION, "a", &[0], LONG).await?;
        let (release_delay, request_delay) = staggered(round);
        let (requested, released) = futures_util::future::join(
            after(
                request_delay,
                b.request_handover(group, SUBSCRIPTION, "b", &[0]),
            ),
            after(release_delay, a.release(group, SUBSCRIPTION, "a", &[0])),
        )
        .await;
        requested?;
        let released = released?;
        ensure!(
            released.released == [0] && released.not_held.is_empty(),
            "round {round}: a released its live lease 0 while b asked for it (the release sent after {release_delay:?}, the request after {request_delay:?}) and was told released {:?}, not_held {:?}: a held it, so it must be released",
            released.released,
            released.not_held
        );
        let renewed = a.renew(group, SUBSCRIPTION, "a", LONG).await?;
        ensure!(
            !partitions(&renewed).contains(&0),
            "round {round}: a's renew after its release of 0 reports {:?}: a released lease is free, whatever handover request crossed the release",
            partitions(&renewed)
        );
        let table = b.leases(group, SUBSCRIPTION).await?;
        ensure!(
            held_live(&table, 0).is_none(),
            "round {round}: leases lists 0 held by {:?} after a released it while b asked for it: a released lease is free",
            held_live(&table, 0)
        );
    }
    Ok(())
}

/// How long the former holder's lease lasts in
/// [`an_expired_lease_goes_to_a_taker_racing_its_former_holder`].
const BRIEF: Duration = Duration::from_millis(50);

/// The owner holding `partition` in `table`, if any.
fn held_live(table: &LeaseTable, partition: u32) -> Option<&str> {
    table
        .leases
        .iter()
        .find(|lease| lease.partition == partition)
        .map(|lease| lease.owner.as_str())
}

/// What the former holder's call answered.
enum Former {
    /// Its `acquire` of nothing (joining again).
    Acquired(Result<Acquired, Error>),
    /// Its `renew`.
    Renewed(Result<Vec<HeldLease>, Error>),
}

/// Round after round, a holds partition 0 for 50 ms and lets it expire (it waits three
/// times as long); then, at once, a calls again (`acquire` of nothing, joining again, or
/// `renew` in every other round) and b acquires 0. The lease expired long before: a never
/// gets it back (its renew is `NotHeld`, its acquire grants it nothing), and b may be refused
/// 0 only if 0 was held live by another owner while b's call ran: a `leases` listing just
/// before the race or just after it shows 0 held live. Nobody but b is granted 0 in between,
/// so 0, listed free on both sides, was free throughout. Both sides are needed: a store that
/// judges expiry on each instance's clock, as DynamoDB's, holds a lease live for b's
/// instance until it has watched the holder's heartbeat for a whole duration (listed held
/// before, had b not watched it), and a's acquire, starting a new generation, frees it while
/// b's call runs (free after): b was rightly refused. So b lists the leases once right after
/// a's grant: by the race it has watched a's heartbeat stand still for three durations, and
/// takes 0 over (ending a's heartbeat only as it saw it) while a's acquire may start a new
/// generation between b's read and b's end, which frees 0 as surely. A store with a server
/// clock lists 0 free on both sides. A store that refuses the lease because its former
/// holder is busy with a call of its own shows it here.
pub async fn an_expired_lease_goes_to_a_taker_racing_its_former_holder<S: LeaseStore + ?Sized>(
    a: &S,
    b: &S,
) -> CaseResult {
    for round in 0..rounds() {
        let group = fresh("expired-crossed");
        let group = group.as_str();
        a.acquire(group, SUBSCRIPTION, "a", &[0], BRIEF).await?;
        // b looks at once, so that a store judging expiry by its own watch (DynamoDB's) has
        // watched a's heartbeat stand still for the whole duration by the race: b then takes
        // 0 over, ending a's heartbeat as it saw it, while a's acquire may start a new
        // generation in between, which frees 0 too.
        b.leases(group, SUBSCRIPTION).await?;
        tokio::time::sleep(BRIEF * 3).await;
        let before = b.leases(group, SUBSCRIPTION).await?;
        let renews = round % 2 == 1;
        let (former, taken) = futures_util::future::join(
            async {
                if renews {
                    Former::Renewed(a.renew(group, SUBSCRIPTION, "a", LONG).await)
                } else {
                    Former::Acquired(a.acquire(group, SUBSCRIPTION, "a", &[], LONG).await)
                }
            },
            b.acquire(group, SUBSCRIPTION, "b", &[0], LONG),
        )
        .await;
        former_gets_nothing(former, round)?;
        let taken = taken?;
        if !taken.refused.contains(&0) {
            continue;
        }
        let after = b.leases(group, SUBSCRIPTION).await?;
        ensure!(
            held_live(&before, 0).is_some() || held_live(&after, 0).is_some(),
            "round {round}: b was refused partition 0 while a, whose lease of {BRIEF:?} on it had expired {:?} before, called {}; but leases lists 0 free both just before the race and just after it: refused must name only partitions another owner holds live",
            BRIEF * 2,
            if renews {
                "renew"
            } else {
                "acquire of nothing"
            },
        );
    }
    Ok(())
}

/// The former holder's call in round `round` got nothing back: its `renew` is `NotHeld`, its
/// `acquire` of nothing grants nothing.
fn former_gets_nothing(former: Former, round: u32) -> CaseResult {
    match former {
        Former::Renewed(renewed) => expect_not_held(
            renewed,
            "a",
            &format!("round {round}: a's renew after its lease expired"),
        ),
        Former::Acquired(acquired) => {
            let acquired = acquired?;
            ensure!(
                acquired.granted.is_empty() && acquired.refused.is_empty(),
                "round {round}: a's acquire of nothing after its lease expired answered granted {:?}, refused {:?}: an expired lease is never given back to its former holder unasked",
                partitions(&acquired.granted),
                acquired.refused
            );
            Ok(())
        }
    }
}
