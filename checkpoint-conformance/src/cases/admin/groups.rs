//! `groups`: every group holding a checkpoint or a retired subscription, sorted by bytes, each
//! once, however many.
//!
//! The server is shared by tests running in parallel, so each case creates its groups under a
//! prefix of its own and compares only those; that the whole answer is sorted and has no
//! repeats is checked on all of it.

use std::collections::BTreeSet;

use checkpoint_core::{Checkpoint, CheckpointAdmin};
use futures_util::future::join_all;

use super::expect_sorted_once;
use crate::{CaseResult, ensure, ensure_eq, fresh_group};

/// How many groups [`groups_lists_many_groups`] creates: more than a server's page (a Redis
/// `SCAN`, a DynamoDB page limited by count, a page of 1,000 keys) holds.
pub const MANY_GROUPS: usize = 1_200;

/// `groups` lists every group that holds checkpoints, each once however many checkpoints it
/// holds, sorted by the bytes of the name (upper case before lower case, `-` before `/`,
/// multi-byte characters last), and no group that was never used.
pub async fn groups_lists_every_group_sorted_once<S: CheckpointAdmin + ?Sized>(
    store: &S,
) -> CaseResult {
    let base = fresh_group("groups");
    // Byte order differs from insertion order and from a natural-language collation.
    let mine: Vec<String> = ["b", "a", "a/x", "é", "Z", "a-", "a b", "A"]
        .iter()
        .map(|suffix| format!("{base}/{suffix}"))
        .collect();
    for (i, group) in mine.iter().enumerate() {
        let i = i as u64;
        // Several subscriptions and partitions each: a store that lists a group per
        // checkpoint repeats it.
        store
            .save_all(
                group,
                &[
                    Checkpoint::new("orders", 0, i),
                    Checkpoint::new("orders", 1, i + 1),
                    Checkpoint::new("audit", 0, i + 2),
                ],
            )
            .await?;
    }
    let groups = store.groups().await?;
    expect_sorted_once(&groups, "groups()")?;
    let found: Vec<&String> = groups.iter().filter(|g| g.starts_with(&base)).collect();
    let mut want: Vec<&String> = mine.iter().collect();
    want.sort();
    ensure_eq!(
        found,
        want,
        "groups() filtered to the groups of this case (prefix {base:?}); {base:?} itself and \
         {:?} were never used",
        format!("{base}/unused")
    );
    Ok(())
}

/// `groups` lists every group however many there are: [`MANY_GROUPS`] groups, more than one
/// page of any server, all listed, sorted, each once.
pub async fn groups_lists_many_groups<S: CheckpointAdmin + ?Sized>(store: &S) -> CaseResult {
    let base = fresh_group("many-groups");
    let names: Vec<String> = (0..MANY_GROUPS).map(|i| format!("{base}/{i:04}")).collect();
    for (chunk_index, chunk) in names.chunks(100).enumerate() {
        let saves = chunk.iter().enumerate().map(|(i, group)| {
            let position = (chunk_index * 100 + i) as u64;
            store.save(group, "orders", 0, position)
        });
        for result in join_all(saves).await {
            result?;
        }
    }
    let groups = store.groups().await?;
    expect_sorted_once(&groups, "groups()")?;
    let prefix = format!("{base}/");
    let found: BTreeSet<&str> = groups
        .iter()
        .filter(|g| g.starts_with(&prefix))
        .map(String::as_str)
        .collect();
    let missing: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .filter(|name| !found.contains(name))
        .collect();
    ensure!(
        missing.is_empty(),
        "groups() returned {} groups in all, but only {} of the {MANY_GROUPS} groups saved \
         under prefix {prefix:?}; {} missing, the first: {:?}",
        groups.len(),
        found.len(),
        missing.len(),
        &missing[..missing.len().min(5)]
    );
    ensure_eq!(
        found.len(),
        MANY_GROUPS,
        "groups() under prefix {prefix:?}, some never saved"
    );
    Ok(())
}

/// A group whose only trace is a retired subscription is still listed (so an operator sees
/// what is left to purge): one whose subscription was saved then retired, and one where a
/// name that never saved was retired.
pub async fn groups_lists_a_group_with_only_a_retired_subscription<S: CheckpointAdmin + ?Sized>(
    store: &S,
) -> CaseResult {
    let saved_then_retired = fresh_group("groups-retired");
    store.save(&saved_then_retired, "old", 0, 5).await?;
    store.retire(&saved_then_retired, "old").await?;
    let only_retired = fresh_group("groups-tombstone");
    store.retire(&only_retired, "never-saved").await?;
    let groups = store.groups().await?;
    expect_sorted_once(&groups, "groups()")?;
    for (group, subscription) in [(&saved_then_retired, "old"), (&only_retired, "never-saved")] {
        ensure!(
            groups.binary_search(group).is_ok(),
            "groups() does not list group {group:?}, whose only trace is the retired \
             subscription {subscription:?}: a retired subscription keeps its group listed until \
             it is purged"
        );
        ensure_eq!(
            store.list(group).await?,
            Vec::<Checkpoint>::new(),
            "list({group:?}), whose only subscription is retired"
        );
    }
    Ok(())
}
