//! Leases and the rest of the store: retired subscriptions, purge, checkpoints.

use checkpoint_core::{CheckpointAdmin, Error, LeaseStore};

use super::{LONG, SUBSCRIPTION, fresh, partitions};
use crate::{CaseResult, Failure, ensure, ensure_eq};

fn expect_retired<T: std::fmt::Debug>(result: Result<T, Error>, context: &str) -> CaseResult {
    match result {
        Err(Error::Retired { subscription, .. }) if subscription == SUBSCRIPTION => Ok(()),
        other => Err(Failure::new(format!(
            "{context}: expected Error::Retired, got {other:?}"
        ))),
    }
}

/// A retired subscription cannot be leased: `acquire` and `renew` fail with
/// [`Error::Retired`].
pub async fn a_retired_subscription_cannot_be_leased<S: LeaseStore + CheckpointAdmin + ?Sized>(
    a: &S,
    b: &S,
) -> CaseResult {
    let group = fresh("retired");
    a.acquire(&group, SUBSCRIPTION, "a", &[0], LONG).await?;
    b.retire(&group, SUBSCRIPTION).await?;
    expect_retired(
        a.renew(&group, SUBSCRIPTION, "a", LONG).await,
        "renew of a lease of a retired subscription",
    )?;
    expect_retired(
        b.acquire(&group, SUBSCRIPTION, "b", &[1], LONG).await,
        "acquire of a retired subscription",
    )
}

/// `purge` of a retired subscription removes its leases and owners; the name, started again,
/// leases from scratch.
pub async fn purge_removes_the_leases_of_a_retired_subscription<
    S: LeaseStore + CheckpointAdmin + ?Sized,
>(
    a: &S,
    b: &S,
) -> CaseResult {
    let group = fresh("purge");
    a.acquire(&group, SUBSCRIPTION, "a", &[0, 1], LONG).await?;
    b.retire(&group, SUBSCRIPTION).await?;
    b.purge(&group, SUBSCRIPTION).await?;
    let table = a.leases(&group, SUBSCRIPTION).await?;
    ensure!(
        table.leases.is_empty() && table.owners.is_empty(),
        "leases after purge of the retired subscription: {table:?}, expected none"
    );
    let again = b.acquire(&group, SUBSCRIPTION, "b", &[0, 1], LONG).await?;
    ensure_eq!(
        partitions(&again.granted),
        vec![0, 1],
        "b acquiring under the purged name"
    );
    Ok(())
}

/// A lease never moves a checkpoint nor creates one: acquire, release and a change of hands
/// leave `load` and `list` as they were.
pub async fn a_lease_never_moves_a_checkpoint<S: LeaseStore + CheckpointAdmin + ?Sized>(
    a: &S,
    b: &S,
) -> CaseResult {
    let group = fresh("checkpoint");
    a.save(&group, SUBSCRIPTION, 0, 10).await?;
    a.acquire(&group, SUBSCRIPTION, "a", &[0, 1], LONG).await?;
    a.release(&group, SUBSCRIPTION, "a", &[0, 1]).await?;
    b.acquire(&group, SUBSCRIPTION, "b", &[0, 1], LONG).await?;
    ensure_eq!(
        b.load(&group, SUBSCRIPTION, 0).await?,
        Some(10),
        "load of partition 0 after leases changed hands"
    );
    ensure_eq!(
        b.load(&group, SUBSCRIPTION, 1).await?,
        None,
        "load of partition 1, leased but never saved"
    );
    ensure_eq!(
        b.list(&group).await?.len(),
        1,
        "list of a group with one checkpoint and two leases"
    );
    Ok(())
}

/// A lease is not a checkpoint: a group whose only trace is a lease (or a heartbeat) is not
/// listed by `groups`, and `list` of it is empty.
pub async fn a_group_with_only_leases_is_not_listed<S: LeaseStore + CheckpointAdmin + ?Sized>(
    a: &S,
    _b: &S,
) -> CaseResult {
    let group = fresh("only-leases");
    a.acquire(&group, SUBSCRIPTION, "a", &[0, 1], LONG).await?;
    a.acquire(&group, "joined", "b", &[], LONG).await?;
    ensure!(
        !a.groups().await?.contains(&group),
        "groups lists {group:?}, whose only traces are leases and a heartbeat: only checkpoints and retired subscriptions make a group"
    );
    ensure_eq!(
        a.list(&group).await?,
        Vec::new(),
        "list of a group with only leases"
    );
    Ok(())
}
