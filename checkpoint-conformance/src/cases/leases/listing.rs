//! `leases`: every holder and live owner; handover requests.

use std::collections::BTreeMap;

use checkpoint_core::LeaseStore;

use super::{LONG, SUBSCRIPTION, fresh};
use crate::{CaseResult, ensure, ensure_eq};

/// `leases` lists every live lease with its holder and epoch, sorted by partition, and every
/// live owner, sorted, including one that holds nothing.
pub async fn leases_lists_every_holder_and_live_owner<S: LeaseStore + ?Sized>(
    a: &S,
    b: &S,
) -> CaseResult {
    let group = fresh("list");
    let mut want = BTreeMap::new();
    for (store, owner, partitions) in [
        (a, "a", &[0, 2][..]),
        (b, "b", &[1, 3][..]),
        (a, "c", &[][..]),
    ] {
        let acquired = store
            .acquire(&group, SUBSCRIPTION, owner, partitions, LONG)
            .await?;
        for lease in acquired.granted {
            want.insert(lease.partition, (owner.to_owned(), lease.epoch));
        }
    }
    for store in [a, b] {
        let table = store.leases(&group, SUBSCRIPTION).await?;
        let listed: Vec<(u32, (String, u64))> = table
            .leases
            .iter()
            .map(|lease| (lease.partition, (lease.owner.clone(), lease.epoch)))
            .collect();
        let wanted: Vec<(u32, (String, u64))> = want.clone().into_iter().collect();
        ensure_eq!(
            listed,
            wanted,
            "leases: (partition, (holder, epoch)), sorted by partition"
        );
        let owners: Vec<&str> = table.owners.iter().map(|o| o.owner.as_str()).collect();
        ensure_eq!(
            owners,
            vec!["a", "b", "c"],
            "live owners, sorted (c holds nothing)"
        );
    }
    Ok(())
}

/// A handover request marks the holder's live lease, which its holder sees at its next renew
/// and `leases` shows; a free partition is not marked; the grant after the holder's release
/// clears it.
pub async fn a_handover_request_reaches_the_holder<S: LeaseStore + ?Sized>(
    a: &S,
    b: &S,
) -> CaseResult {
    let group = fresh("handover");
    a.acquire(&group, SUBSCRIPTION, "a", &[0, 1], LONG).await?;
    b.request_handover(&group, SUBSCRIPTION, "b", &[0, 5])
        .await?;
    let renewed = a.renew(&group, SUBSCRIPTION, "a", LONG).await?;
    let requested: Vec<(u32, Option<&str>)> = renewed
        .iter()
        .map(|lease| (lease.partition, lease.handover_requested_by.as_deref()))
        .collect();
    ensure_eq!(
        requested,
        vec![(0, Some("b")), (1, None)],
        "a's renew after b asked for 0 (and for free 5)"
    );
    let table = b.leases(&group, SUBSCRIPTION).await?;
    ensure!(
        table.leases.iter().all(|lease| lease.partition != 5),
        "a handover request for free partition 5 made a lease of it: {:?}",
        table.leases
    );
    a.release(&group, SUBSCRIPTION, "a", &[0]).await?;
    let taken = b.acquire(&group, SUBSCRIPTION, "b", &[0], LONG).await?;
    ensure!(
        taken
            .granted
            .first()
            .is_some_and(|lease| lease.partition == 0 && lease.handover_requested_by.is_none()),
        "b's grant of 0 after a released it: {:?}, with no handover request left",
        taken.granted
    );
    Ok(())
}
