//! Release and leave: free at once, only by the holder.

use checkpoint_core::LeaseStore;

use super::{LONG, SUBSCRIPTION, epoch_of, expect_not_held, fresh, partitions};
use crate::{CaseResult, ensure, ensure_eq};

/// A released lease is free at once: another owner acquires it without waiting for an expiry,
/// under a higher epoch; the holder's other leases stay.
pub async fn release_frees_a_lease_at_once<S: LeaseStore + ?Sized>(a: &S, b: &S) -> CaseResult {
    let group = fresh("release");
    let held = a.acquire(&group, SUBSCRIPTION, "a", &[0, 1], LONG).await?;
    let released = a.release(&group, SUBSCRIPTION, "a", &[0]).await?;
    ensure_eq!(
        released.released,
        vec![0],
        "a releasing 0 of its leases 0, 1: released"
    );
    ensure!(
        released.not_held.is_empty(),
        "a releasing its own lease 0: not_held {:?}",
        released.not_held
    );
    let taken = b.acquire(&group, SUBSCRIPTION, "b", &[0, 1], LONG).await?;
    ensure_eq!(
        partitions(&taken.granted),
        vec![0],
        "b acquiring 0 (just released) and 1 (still a's): granted"
    );
    ensure!(
        epoch_of(&taken.granted, 0, "b's grant")? > epoch_of(&held.granted, 0, "a's grant")?,
        "the epoch of a released lease granted to b is not above a's"
    );
    ensure_eq!(
        taken.refused,
        vec![1],
        "b acquiring 1, still held by a: refused"
    );
    Ok(())
}

/// A release by an owner that does not hold the lease changes nothing and says so: every
/// partition named is in `not_held`, and the holder keeps it.
pub async fn release_by_a_non_holder_changes_nothing<S: LeaseStore + ?Sized>(
    a: &S,
    b: &S,
) -> CaseResult {
    let group = fresh("release-other");
    let held = a.acquire(&group, SUBSCRIPTION, "a", &[0], LONG).await?;
    let released = b.release(&group, SUBSCRIPTION, "b", &[7, 0]).await?;
    ensure!(
        released.released.is_empty(),
        "b released {:?}, which a holds (0) or nobody holds (7): only the holder releases",
        released.released
    );
    ensure_eq!(
        released.not_held,
        vec![0, 7],
        "b releasing leases it does not hold: not_held, sorted"
    );
    let again = b.acquire(&group, SUBSCRIPTION, "b", &[0], LONG).await?;
    ensure_eq!(
        again.refused,
        vec![0],
        "b acquiring 0 after its refused release: a still holds it"
    );
    let renewed = a.renew(&group, SUBSCRIPTION, "a", LONG).await?;
    ensure_eq!(
        renewed,
        held.granted,
        "a renewing after b's refused release"
    );
    Ok(())
}

/// `leave` releases every lease of the owner and ends its heartbeat: it is no longer a live
/// owner, its partitions are free at once, and its renew is refused.
pub async fn leave_releases_everything_and_ends_the_heartbeat<S: LeaseStore + ?Sized>(
    a: &S,
    b: &S,
) -> CaseResult {
    let group = fresh("leave");
    a.acquire(&group, SUBSCRIPTION, "a", &[0, 1, 2], LONG)
        .await?;
    b.acquire(&group, SUBSCRIPTION, "b", &[], LONG).await?;
    let left = a.leave(&group, SUBSCRIPTION, "a").await?;
    ensure_eq!(
        left,
        vec![0, 1, 2],
        "leave of a holding 0, 1, 2: the partitions released"
    );
    let table = b.leases(&group, SUBSCRIPTION).await?;
    let owners: Vec<&str> = table.owners.iter().map(|o| o.owner.as_str()).collect();
    ensure_eq!(
        owners,
        vec!["b"],
        "live owners after a left (b joined with no partition)"
    );
    ensure!(
        table.leases.is_empty(),
        "leases after the only holder left: {:?}",
        table.leases
    );
    let taken = b
        .acquire(&group, SUBSCRIPTION, "b", &[0, 1, 2], LONG)
        .await?;
    ensure_eq!(
        partitions(&taken.granted),
        vec![0, 1, 2],
        "b acquiring what a left"
    );
    expect_not_held(
        a.renew(&group, SUBSCRIPTION, "a", LONG).await,
        "a",
        "renew after leave",
    )?;
    ensure_eq!(
        a.leave(&group, SUBSCRIPTION, "a").await?,
        Vec::<u32>::new(),
        "a second leave"
    );
    Ok(())
}
