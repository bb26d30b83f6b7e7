//! Acquire: free partitions granted, live ones refused, epochs.

use checkpoint_core::LeaseStore;

use super::{LONG, SUBSCRIPTION, epoch_of, fresh, partitions};
use crate::{CaseResult, ensure, ensure_eq};

/// `acquire` of free partitions grants every one, sorted, each with an epoch of at least 1 and
/// no handover request, and refuses none.
pub async fn acquire_grants_free_partitions<S: LeaseStore + ?Sized>(a: &S, _b: &S) -> CaseResult {
    let group = fresh("grant");
    let acquired = a
        .acquire(&group, SUBSCRIPTION, "a", &[2, 0, 1], LONG)
        .await?;
    ensure_eq!(
        partitions(&acquired.granted),
        vec![0, 1, 2],
        "acquire of free partitions 2, 0, 1: granted, sorted"
    );
    ensure!(
        acquired.refused.is_empty(),
        "acquire of free partitions refused {:?}",
        acquired.refused
    );
    for lease in &acquired.granted {
        ensure!(
            lease.epoch >= 1,
            "a granted lease has epoch {}: epochs start at 1",
            lease.epoch
        );
        ensure!(
            lease.handover_requested_by.is_none(),
            "a fresh lease carries a handover request by {:?}",
            lease.handover_requested_by
        );
    }
    Ok(())
}

/// A partition another owner holds live is refused, from another client too; the others of
/// the same call are granted, and the holder keeps its lease.
pub async fn a_live_lease_is_refused_to_another_owner<S: LeaseStore + ?Sized>(
    a: &S,
    b: &S,
) -> CaseResult {
    let group = fresh("refuse");
    let held = a.acquire(&group, SUBSCRIPTION, "a", &[0, 1], LONG).await?;
    let other = b.acquire(&group, SUBSCRIPTION, "b", &[1, 2], LONG).await?;
    ensure_eq!(
        other.refused,
        vec![1],
        "b asked for 1 (held live by a) and 2 (free): refused"
    );
    ensure_eq!(
        partitions(&other.granted),
        vec![2],
        "b asked for 1 (held live by a) and 2 (free): granted"
    );
    let table = b.leases(&group, SUBSCRIPTION).await?;
    let holder = table.leases.iter().find(|lease| lease.partition == 1);
    ensure!(
        holder.is_some_and(|lease| lease.owner == "a"
            && Some(lease.epoch) == epoch_of(&held.granted, 1, "a's grant").ok()),
        "after b was refused partition 1, leases shows {holder:?}: a must still hold it under its epoch"
    );
    Ok(())
}

/// Acquiring a lease the owner holds live keeps its epoch (it did not change hands), and
/// grants the new partitions beside it.
pub async fn acquire_of_an_own_live_lease_keeps_its_epoch<S: LeaseStore + ?Sized>(
    a: &S,
    _b: &S,
) -> CaseResult {
    let group = fresh("own");
    let first = a.acquire(&group, SUBSCRIPTION, "a", &[0], LONG).await?;
    let epoch = epoch_of(&first.granted, 0, "first acquire")?;
    let again = a.acquire(&group, SUBSCRIPTION, "a", &[0, 1], LONG).await?;
    ensure_eq!(
        partitions(&again.granted),
        vec![0, 1],
        "a acquired 0 again and 1: granted"
    );
    ensure_eq!(
        epoch_of(&again.granted, 0, "second acquire")?,
        epoch,
        "epoch of a lease its owner acquired again while holding it"
    );
    ensure!(
        again.refused.is_empty(),
        "an owner was refused its own live lease: {:?}",
        again.refused
    );
    Ok(())
}

/// Every time a lease changes hands (through a release, to another owner or back to the same
/// one), its epoch is higher than every epoch it had before: never reused.
pub async fn epochs_increase_with_every_change_of_hands<S: LeaseStore + ?Sized>(
    a: &S,
    b: &S,
) -> CaseResult {
    let group = fresh("epochs");
    let mut seen = Vec::new();
    for (store, owner) in [(a, "a"), (b, "b"), (a, "a"), (a, "a"), (b, "b")] {
        let acquired = store
            .acquire(&group, SUBSCRIPTION, owner, &[0], LONG)
            .await?;
        let epoch = epoch_of(
            &acquired.granted,
            0,
            &format!("{owner} acquiring the released lease"),
        )?;
        ensure!(
            seen.last().is_none_or(|&last| epoch > last),
            "epochs of one lease, grant after grant: {seen:?} then {epoch}: each grant after a release must have a higher epoch, never one used before"
        );
        seen.push(epoch);
        let released = store.release(&group, SUBSCRIPTION, owner, &[0]).await?;
        ensure_eq!(
            released.released,
            vec![0],
            "{owner} releasing the lease it holds"
        );
    }
    Ok(())
}
