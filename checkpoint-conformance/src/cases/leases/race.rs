//! Concurrent acquirers.

use std::collections::BTreeMap;

use checkpoint_core::LeaseStore;
use futures_util::future::join_all;

use super::{LONG, SUBSCRIPTION, fresh, rounds};
use crate::{CaseResult, ensure};

/// Four owners on two clients acquire the same free partitions at the same moment, round
/// after round: each partition is granted to exactly one of them, and `leases` agrees.
pub async fn concurrent_acquirers_each_partition_goes_to_one<S: LeaseStore + ?Sized>(
    a: &S,
    b: &S,
) -> CaseResult {
    let wanted = [0, 1, 2];
    for round in 0..rounds() {
        let group = fresh("race");
        let contenders = [(a, "w0"), (b, "w1"), (a, "w2"), (b, "w3")];
        let group = group.as_str();
        let results = join_all(contenders.iter().map(|&(store, owner)| async move {
            (
                owner,
                store
                    .acquire(group, SUBSCRIPTION, owner, &wanted, LONG)
                    .await,
            )
        }))
        .await;
        let mut winners: BTreeMap<u32, Vec<&str>> = BTreeMap::new();
        for (owner, result) in results {
            for lease in result?.granted {
                winners.entry(lease.partition).or_default().push(owner);
            }
        }
        for partition in wanted {
            let won = winners
                .get(&partition)
                .map(Vec::as_slice)
                .unwrap_or_default();
            ensure!(
                won.len() == 1,
                "round {round}: four owners acquired free partition {partition} at once and {} won ({won:?}): exactly one must",
                won.len()
            );
        }
        let table = a.leases(group, SUBSCRIPTION).await?;
        for lease in &table.leases {
            ensure!(
                winners
                    .get(&lease.partition)
                    .is_some_and(|won| won == &[lease.owner.as_str()]),
                "round {round}: leases lists {} holding {}, but the winner was {:?}",
                lease.owner,
                lease.partition,
                winners.get(&lease.partition)
            );
        }
    }
    Ok(())
}
