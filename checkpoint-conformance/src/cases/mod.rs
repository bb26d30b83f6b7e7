//! The cases of the kit, one public async function per clause of the contract, one file per
//! family of clauses.
//!
//! Call them directly from any test harness, or let [`checkpoint_store_tests!`],
//! [`exclusive_store_tests!`] and [`admin_store_tests!`] turn each into a named test.
//!
//! | family | clauses |
//! | --- | --- |
//! | `saves` | a save moves a checkpoint forward only, zombies included |
//! | `reads` | `load` and `list`: absent keys, every part of a key, small and large groups |
//! | `names` | names stored verbatim and kept apart, whatever characters they hold |
//! | `boundaries` | the lowest and highest partitions and positions |
//! | `inputs` | invalid inputs rejected naming the argument; arbitrary inputs |
//! | `batches` | `save_all` |
//! | `concurrency` | calls at the same time, and generated histories |
//! | `exclusive` | `claim` and `advance` |
//! | `contention` | exclusive contenders racing under one name: one winner per step |
//! | `admin` | the operations API: `groups`, `start_at`, `retire`, `retired`, `purge`, and what a retired subscription does to saves, claims and advances |
//! | `parked` | parked entries ([`ParkedStore`](checkpoint_core::parked::ParkedStore)): listed sorted and per group, parked again in place, retry requests, removal, extremes, invalid input |
//! | `leases` | partition ownership ([`LeaseStore`](checkpoint_core::LeaseStore)): grants, renewal, release, expiry by one clock, listing, handover requests, ties to retire and purge, races, histories |
//!
//! [`checkpoint_store_tests!`]: crate::checkpoint_store_tests
//! [`exclusive_store_tests!`]: crate::exclusive_store_tests
//! [`admin_store_tests!`]: crate::admin_store_tests

use std::collections::BTreeMap;

use checkpoint_core::{Argument, CheckpointStore, Error};

use crate::{CaseResult, Failure, ensure};

mod admin;
mod batches;
mod boundaries;
mod concurrency;
mod contention;
mod exclusive;
mod inputs;
mod leases;
mod names;
mod parked;
mod reads;
mod saves;

pub use admin::*;
pub use batches::*;
pub use boundaries::*;
pub use concurrency::*;
pub use contention::*;
pub use exclusive::*;
pub use inputs::*;
pub use leases::*;
pub use names::*;
pub use parked::*;
pub use reads::*;
pub use saves::*;

/// 2^53: the first integer above which an `f64` cannot hold every integer.
const F64_EXACT_LIMIT: u64 = 1 << 53;

/// `list` as a sorted map, so results compare regardless of order, failing on duplicates.
async fn listed<S: CheckpointStore + ?Sized>(
    store: &S,
    group: &str,
) -> Result<BTreeMap<(String, u32), u64>, Failure> {
    let checkpoints = store.list(group).await?;
    let count = checkpoints.len();
    let map: BTreeMap<_, _> = checkpoints
        .into_iter()
        .map(|c| ((c.subscription, c.partition), c.position))
        .collect();
    ensure!(
        map.len() == count,
        "list({group:?}) returned {count} checkpoints but only {} distinct keys",
        map.len()
    );
    Ok(map)
}

fn expected<'a>(
    entries: impl IntoIterator<Item = (&'a str, u32, u64)>,
) -> BTreeMap<(String, u32), u64> {
    entries
        .into_iter()
        .map(|(s, p, pos)| ((s.to_owned(), p), pos))
        .collect()
}

/// Compares what `group` holds with what it should: the failure names the group and every
/// wrong key with its expected and stored positions (a lost update, a key that should not
/// exist), so that it can be traced on the server.
fn expect_stored(
    group: &str,
    found: &BTreeMap<(String, u32), u64>,
    expected: &BTreeMap<(String, u32), u64>,
    what: &str,
) -> CaseResult {
    let shown = |position: Option<&u64>| position.map_or("nothing".to_owned(), u64::to_string);
    let wrong: Vec<String> = expected
        .keys()
        .chain(found.keys().filter(|key| !expected.contains_key(*key)))
        .filter(|key| found.get(*key) != expected.get(*key))
        .map(|key| {
            format!(
                "  ({:?}, {}): expected {}, stored {}",
                key.0,
                key.1,
                shown(expected.get(key)),
                shown(found.get(key))
            )
        })
        .collect();
    ensure!(
        wrong.is_empty(),
        "{what}: {} wrong key(s) in group {group:?}:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    Ok(())
}

fn expect_invalid(
    result: Result<impl std::fmt::Debug, Error>,
    argument: Argument,
    what: &str,
) -> CaseResult {
    match result {
        Err(Error::InvalidInput(invalid)) if invalid.argument == argument => Ok(()),
        Err(Error::InvalidInput(invalid)) => Err(Failure::new(format!(
            "{what}: rejected, but as invalid {} instead of {argument}",
            invalid.argument
        ))),
        other => Err(Failure::new(format!(
            "{what}: expected an invalid-input error for the {argument}, got {other:?}"
        ))),
    }
}
