//! One attempt of `start_at`: the [create protocol](super::create) for every partition of a
//! new subscription at once, with a second read of the group in place of step (b) so that of
//! concurrent calls for one name at most one goes through. Each request is bounded by the
//! store's timeout; `admin` tries again after a refusal by a concurrent writer.

use std::collections::BTreeSet;

use aws_sdk_dynamodb::operation::delete_item::builders::DeleteItemFluentBuilder;
use checkpoint_core::{Error, Operation};
use futures_util::future::join;
use futures_util::{StreamExt, stream};

use super::admin::read_subscription;
use super::create::{finish_pending, put_pending};
use super::{Key, delete_item, groups};
use crate::DynamoDbCheckpointStore;
use crate::error::{is_condition_failed, sdk_error};
use crate::layout::PENDING;

/// Undoing step (a) of a `start_at` that is refused: only an item still pending.
const DELETE_PENDING_CONDITION: &str = "attribute_exists(#pend)";

/// Why one attempt of `start_at` did not create the subscription.
#[derive(Debug)]
pub(crate) enum Attempt {
    /// A concurrent writer of the name (another `start_at`, or a save) refused it after the
    /// name was seen free; what it created is taken back, so it may try again.
    Contended,
    /// Refused for good (`Exists` seen at the start, `Retired`) or failed.
    Failed(Error),
}

impl From<Error> for Attempt {
    fn from(error: Error) -> Self {
        Attempt::Failed(error)
    }
}

/// The operation every request here reports.
const OP: Operation = Operation::StartAt;

/// One attempt: a consistent `Query` of the group (nothing of the name may exist), then
/// (a) every partition pending, (b) the group read again and, at the same time, the group's
/// marker written (unless this instance wrote it), (c) every partition visible.
pub(crate) async fn attempt(
    store: &DynamoDbCheckpointStore,
    group: &str,
    name: &str,
    positions: &[(u32, u64)],
) -> Result<(), Attempt> {
    let found = read_subscription(store, OP, group, name).await?;
    if found.tombstone {
        return Err(Error::retired(group, name).into());
    }
    if !found.items.is_empty() {
        return Err(Error::exists(group, name).into());
    }
    // (a) Every partition, pending, only where no item is. The name had no item a moment ago,
    // so a partition taken now is a concurrent writer's.
    let mine = match put_pending_partitions(store, group, name, positions).await {
        Err(Error::Exists { .. }) => return Err(Attempt::Contended),
        other => other?,
    };
    // (b) Alone under the name, and not retired; the group's marker meanwhile (unless this
    // instance wrote it), before (c) makes anything visible.
    let (alone, marked) = join(
        alone_and_not_retired(store, group, name, &mine),
        store.within(OP, groups::mark(store, OP, group)),
    )
    .await;
    if let Err(refusal) = alone.and(marked) {
        take_back(store, group, name, mine).await?;
        return Err(match refusal {
            Error::Exists { .. } => Attempt::Contended,
            other => other.into(),
        });
    }
    // (c) Visible, unless retired meanwhile.
    store
        .for_each_partition(OP, mine, |partition| async move {
            match finish_pending(store, (group, name, partition)).send().await {
                Ok(_) => Ok(()),
                Err(error) if is_condition_failed(&error) => Err(Error::retired(group, name)),
                Err(error) => Err(sdk_error(OP, error)),
            }
        })
        .await
        .map_err(Attempt::from)
}

/// Step (a): a pending item for every partition, each only where no item is. Returns the
/// partitions it created; when another writer got one first (or a request failed), takes back
/// what it created, so that a refusal leaves nothing behind.
async fn put_pending_partitions(
    store: &DynamoDbCheckpointStore,
    group: &str,
    name: &str,
    positions: &[(u32, u64)],
) -> Result<Vec<u32>, Error> {
    let created = stream::iter(positions.iter().copied())
        .map(|(partition, position)| async move {
            let put = async {
                match put_pending(store, (group, name, partition), position, None)
                    .send()
                    .await
                {
                    Ok(_) => Ok(true),
                    Err(error) if is_condition_failed(&error) => Ok(false),
                    Err(error) => Err(sdk_error(OP, error)),
                }
            };
            match store.within(OP, put).await {
                Ok(created) => Ok((partition, created)),
                Err(error) => Err((partition, error)),
            }
        })
        .buffer_unordered(store.max_concurrency())
        .collect::<Vec<Result<(u32, bool), (u32, Error)>>>()
        .await;
    let mut mine = Vec::new();
    let mut refusal = None;
    for outcome in created {
        match outcome {
            Ok((partition, true)) => mine.push(partition),
            Ok((_, false)) => {
                refusal.get_or_insert_with(|| Error::exists(group, name));
            }
            // A failed put may have taken effect: take it back too.
            Err((partition, error)) => {
                mine.push(partition);
                refusal = Some(error);
            }
        }
    }
    match refusal {
        Some(refusal) => {
            take_back(store, group, name, mine).await?;
            Err(refusal)
        }
        None => Ok(mine),
    }
}

/// Step (b), after every item of step (a) is written: a consistent `Query` of the group. A
/// tombstone refuses the call as retired (a retire that began before (a) ended has put it by
/// now, or will find the pending items and mark them); an item of the name on a partition this
/// call did not create (another `start_at`'s or a save's) refuses it as existing. Of two
/// concurrent calls over disjoint partitions, the one whose `Query` starts last sees the
/// other's items, which were all written before the other's `Query` began; so they cannot both
/// pass, and they may both be refused.
async fn alone_and_not_retired(
    store: &DynamoDbCheckpointStore,
    group: &str,
    name: &str,
    mine: &[u32],
) -> Result<(), Error> {
    let found = read_subscription(store, OP, group, name).await?;
    if found.tombstone {
        return Err(Error::retired(group, name));
    }
    let mine: BTreeSet<u32> = mine.iter().copied().collect();
    if let Some(other) = found
        .items
        .iter()
        .find(|item| !mine.contains(&item.partition))
    {
        tracing::debug!(
            partition = other.partition,
            pending = other.pending,
            "another writer's item under the name"
        );
        return Err(Error::exists(group, name));
    }
    Ok(())
}

/// Deletes the pending items this attempt created, when it is refused after step (a). An item
/// that is no longer pending (a concurrent save finished it) stays.
async fn take_back(
    store: &DynamoDbCheckpointStore,
    group: &str,
    name: &str,
    partitions: Vec<u32>,
) -> Result<(), Error> {
    store
        .for_each_partition(OP, partitions, |partition| async move {
            match delete_pending(store, (group, name, partition)).send().await {
                Err(error) if !is_condition_failed(&error) => Err(sdk_error(OP, error)),
                _ => Ok(()),
            }
        })
        .await
}

/// A `DeleteItem` of an item only while it is pending.
fn delete_pending(store: &DynamoDbCheckpointStore, key: Key<'_>) -> DeleteItemFluentBuilder {
    let (group, subscription, partition) = key;
    delete_item(store, group, subscription, partition)
        .condition_expression(DELETE_PENDING_CONDITION)
        .expression_attribute_names("#pend", PENDING)
}
