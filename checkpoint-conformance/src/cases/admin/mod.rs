//! The operations API ([`CheckpointAdmin`](checkpoint_core::CheckpointAdmin)): one public case
//! per clause of the contract's "Operating checkpoints", one file per entry point.
//!
//! | file | clauses |
//! | --- | --- |
//! | `groups` | every group, sorted and each once, however many; a group with only a retired subscription |
//! | `start` | `start_at` creates exactly its positions, refuses an existing or a retired name |
//! | `start_race` | of concurrent `start_at`s of one new name over disjoint partitions, at most one succeeds |
//! | `retire` | a retired subscription is gone and stays gone, whatever zombies save; `retired`; others untouched |
//! | `purge` | purge refuses a live subscription, accepts nothing, frees the name |
//! | `inputs` | invalid input of every new entry point, rejected naming the argument |
//! | `exclusive` | `claim` and `advance` of a retired subscription |
//! | `histories` | owners and zombies saving while a subscription is retired |
//!
//! The cases of a store with the operations API take `&S where S: CheckpointAdmin + ?Sized`;
//! those that also claim and advance take `S: ExclusiveCheckpointStore + CheckpointAdmin`.

use std::fmt::Debug;

use checkpoint_core::{CheckpointStore, Error};

use crate::{CaseResult, Failure, ensure};

mod exclusive;
mod groups;
mod histories;
mod inputs;
mod purge;
mod retire;
mod start;
mod start_race;

pub use exclusive::*;
pub use groups::*;
pub use histories::*;
pub use inputs::*;
pub use purge::*;
pub use retire::*;
pub use start::*;
pub use start_race::*;

/// The three refusals of the operations API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    Exists,
    Retired,
    NotRetired,
}

/// Fails unless `result` is `refusal` for exactly `subscription` of `group`.
fn expect_refused<T: Debug>(
    result: Result<T, Error>,
    refusal: Refusal,
    group: &str,
    subscription: &str,
    what: &str,
) -> CaseResult {
    let named = match (&result, refusal) {
        (
            Err(Error::Exists {
                group: g,
                subscription: s,
            }),
            Refusal::Exists,
        )
        | (
            Err(Error::Retired {
                group: g,
                subscription: s,
            }),
            Refusal::Retired,
        )
        | (
            Err(Error::NotRetired {
                group: g,
                subscription: s,
            }),
            Refusal::NotRetired,
        ) => Some((g, s)),
        _ => None,
    };
    match named {
        Some((g, s)) if g == group && s == subscription => Ok(()),
        Some((g, s)) => Err(Failure::new(format!(
            "{what}: refused as {refusal:?}, but naming subscription {s:?} of group {g:?} instead \
             of {subscription:?} of {group:?}"
        ))),
        None => Err(Failure::new(format!(
            "{what}: expected Error::{refusal:?} for subscription {subscription:?} of group \
             {group:?}, got {result:?}"
        ))),
    }
}

/// Fails unless a zombie's call under a retired name returned `Ok` (it is ignored, like a
/// save that is behind, never refused).
fn expect_ignored(result: Result<(), Error>, what: &str) -> CaseResult {
    result.map_err(|error| {
        Failure::new(format!(
            "{what}: a save under a retired subscription must be ignored (Ok), got the error: {}",
            crate::error_chain(&error)
        ))
    })
}

/// Fails if `load` of any of `partitions`, or `list`, shows `subscription` of `group`; the
/// failure names every key that came back.
async fn expect_gone<S: CheckpointStore + ?Sized>(
    store: &S,
    group: &str,
    subscription: &str,
    partitions: &[u32],
    what: &str,
) -> CaseResult {
    let mut shown = Vec::new();
    for &partition in partitions {
        if let Some(position) = store.load(group, subscription, partition).await? {
            shown.push(format!(
                "  load({subscription:?}, {partition}) returned {position}"
            ));
        }
    }
    for c in store.list(group).await? {
        if c.subscription == subscription {
            shown.push(format!(
                "  list returned ({:?}, {}) at {}",
                c.subscription, c.partition, c.position
            ));
        }
    }
    ensure!(
        shown.is_empty(),
        "{what}: retired subscription {subscription:?} of group {group:?} is visible:\n{}",
        shown.join("\n")
    );
    Ok(())
}

/// Fails unless `names` is sorted by bytes with each name once; the failure names the first
/// pair out of order or repeated.
fn expect_sorted_once(names: &[String], what: &str) -> CaseResult {
    if let Some(pair) = names.windows(2).find(|pair| pair[0] >= pair[1]) {
        let why = if pair[0] == pair[1] {
            format!("{:?} is listed twice", pair[0])
        } else {
            format!("{:?} comes before {:?}", pair[0], pair[1])
        };
        return Err(Failure::new(format!(
            "{what} must be sorted by the bytes of each name, each once, but {why} (of {} names)",
            names.len()
        )));
    }
    Ok(())
}
