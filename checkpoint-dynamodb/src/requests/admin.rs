//! The requests of the operations API: tombstones, the `retired` flag, deletes, and the reads
//! of a group, each read back into what `admin` decides on.

use aws_sdk_dynamodb::types::AttributeValue;
use checkpoint_core::{Error, Operation};

use super::{Key, Page, StartKey, delete_item, group_page_query, next_start, update_item};
use crate::DynamoDbCheckpointStore;
use crate::error::{is_condition_failed, sdk_error, unexpected};
use crate::layout::{
    ItemKind, KEY, PENDING, RETIRED, SUBSCRIPTION, TOMBSTONE_PREFIX, UPDATED_AT, flag, has_flag,
    item_kind, now_millis, tombstone_primary_key,
};

/// Marks an item retired...
const MARK_RETIRED_UPDATE: &str = "SET #ret = :true";
/// ...only if it exists (a concurrent `purge` may have deleted it): an update of an absent key
/// would create an item.
const MARK_RETIRED_CONDITION: &str = "attribute_exists(#k)";

/// The items of a group, for `retire`, `purge` and `start_at`...
const GROUP_KEY_CONDITION: &str = "#g = :g";
/// ...with what tells them apart: the sort key and the flags.
const GROUP_PROJECTION: &str = "#k, #ret, #pend";

/// The tombstones of a group.
const TOMBSTONES_KEY_CONDITION: &str = "#g = :g AND begins_with(#k, :prefix)";

/// One checkpoint item of a subscription, as a group's `Query` shows it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Found {
    pub(crate) partition: u32,
    pub(crate) retired: bool,
    pub(crate) pending: bool,
}

impl Found {
    /// What `list` and `load` show.
    pub(crate) fn is_live(self) -> bool {
        !self.retired && !self.pending
    }
}

/// A subscription's items and whether it has a tombstone, on consistent reads.
#[derive(Debug, Default)]
pub(crate) struct Subscription {
    pub(crate) tombstone: bool,
    pub(crate) items: Vec<Found>,
}

/// Every item of `subscription`, and its tombstone: a consistent `Query` of the group, every
/// page followed (each within the store's timeout). A subscription's checkpoints do not sit
/// together in the group (the sort key starts with the partition), so the whole group is read.
pub(crate) async fn read_subscription(
    store: &DynamoDbCheckpointStore,
    op: Operation,
    group: &str,
    subscription: &str,
) -> Result<Subscription, Error> {
    let (items, _pages) = store
        .every_page(op, |start| group_items_page(store, op, group, start))
        .await?;
    let mut found = Subscription::default();
    for (kind, retired, pending) in items {
        match kind {
            ItemKind::Tombstone(name) if name == subscription => found.tombstone = true,
            ItemKind::Checkpoint(name, partition) if name == subscription => {
                found.items.push(Found {
                    partition,
                    retired,
                    pending,
                });
            }
            _ => {}
        }
    }
    Ok(found)
}

/// One page of a group's items: what each is, and its flags (retired, pending).
async fn group_items_page(
    store: &DynamoDbCheckpointStore,
    op: Operation,
    group: &str,
    start: Option<StartKey>,
) -> Result<Page<(ItemKind, bool, bool)>, Error> {
    let page = group_page_query(store, group, start)
        .key_condition_expression(GROUP_KEY_CONDITION)
        .projection_expression(GROUP_PROJECTION)
        .expression_attribute_names("#k", KEY)
        .expression_attribute_names("#ret", RETIRED)
        .expression_attribute_names("#pend", PENDING)
        .send()
        .await
        .map_err(|e| sdk_error(op, e))?;
    let items = page
        .items()
        .iter()
        .map(|item| {
            let kind = item_kind(item).map_err(unexpected(op))?;
            Ok((kind, has_flag(item, RETIRED), has_flag(item, PENDING)))
        })
        .collect::<Result<_, Error>>()?;
    Ok(Page {
        items,
        next: next_start(page.last_evaluated_key),
    })
}

/// One page of a group's tombstones, consistent: the retired subscriptions' names.
pub(crate) async fn tombstones_page(
    store: &DynamoDbCheckpointStore,
    group: &str,
    start: Option<StartKey>,
) -> Result<Page<String>, Error> {
    let op = Operation::Retired;
    let page = group_page_query(store, group, start)
        .key_condition_expression(TOMBSTONES_KEY_CONDITION)
        .projection_expression("#k")
        .expression_attribute_names("#k", KEY)
        .expression_attribute_values(":prefix", AttributeValue::S(TOMBSTONE_PREFIX.to_owned()))
        .send()
        .await
        .map_err(|e| sdk_error(op, e))?;
    let mut items = Vec::new();
    for item in page.items() {
        if let ItemKind::Tombstone(name) = item_kind(item).map_err(unexpected(op))? {
            items.push(name);
        }
    }
    Ok(Page {
        items,
        next: next_start(page.last_evaluated_key),
    })
}

/// `retire`, first: the tombstone (a `PutItem`; putting it again changes nothing that matters).
pub(crate) async fn put_tombstone(
    store: &DynamoDbCheckpointStore,
    group: &str,
    subscription: &str,
) -> Result<(), Error> {
    let mut item = tombstone_primary_key(group, subscription);
    item.insert(
        SUBSCRIPTION.to_owned(),
        AttributeValue::S(subscription.to_owned()),
    );
    item.insert(UPDATED_AT.to_owned(), now_millis());
    store
        .client()
        .put_item()
        .table_name(store.table())
        .set_item(Some(item))
        .send()
        .await
        .map(drop)
        .map_err(|e| sdk_error(Operation::Retire, e))
}

/// `retire`, and step (b) of the create protocol when it finds the tombstone:
/// `SET retired = true` on an existing item. Refused, a concurrent purge deleted the item: it
/// was retired either way.
pub(crate) async fn mark_retired(
    store: &DynamoDbCheckpointStore,
    op: Operation,
    (group, subscription, partition): Key<'_>,
) -> Result<(), Error> {
    let marked = update_item(store, group, subscription, partition)
        .update_expression(MARK_RETIRED_UPDATE)
        .condition_expression(MARK_RETIRED_CONDITION)
        .expression_attribute_names("#k", KEY)
        .expression_attribute_names("#ret", RETIRED)
        .expression_attribute_values(":true", flag())
        .send()
        .await;
    match marked {
        Err(error) if !is_condition_failed(&error) => Err(sdk_error(op, error)),
        _ => Ok(()),
    }
}

/// `purge`: one item of the subscription, whatever it holds.
pub(crate) async fn delete_checkpoint(
    store: &DynamoDbCheckpointStore,
    (group, subscription, partition): Key<'_>,
) -> Result<(), Error> {
    delete_item(store, group, subscription, partition)
        .send()
        .await
        .map(drop)
        .map_err(|e| sdk_error(Operation::Purge, e))
}

/// `purge`, last: the tombstone.
pub(crate) async fn delete_tombstone(
    store: &DynamoDbCheckpointStore,
    group: &str,
    subscription: &str,
) -> Result<(), Error> {
    store
        .client()
        .delete_item()
        .table_name(store.table())
        .set_key(Some(tombstone_primary_key(group, subscription)))
        .send()
        .await
        .map(drop)
        .map_err(|e| sdk_error(Operation::Purge, e))
}
