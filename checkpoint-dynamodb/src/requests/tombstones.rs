//! The requests of the tombstone design: the create protocol's steps (`write`), and the
//! operations API (`admin`). See the crate documentation for why each is shaped as it is.

use std::collections::HashMap;

use aws_sdk_dynamodb::operation::delete_item::builders::DeleteItemFluentBuilder;
use aws_sdk_dynamodb::operation::get_item::builders::GetItemFluentBuilder;
use aws_sdk_dynamodb::operation::put_item::builders::PutItemFluentBuilder;
use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use aws_sdk_dynamodb::operation::scan::builders::ScanFluentBuilder;
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};
use checkpoint_core::Fingerprint;

use crate::DynamoDbCheckpointStore;
use crate::layout::{
    FINGERPRINT, GROUP, KEY, PARTITION, PENDING, POSITION, RETIRED, SUBSCRIPTION, TOMBSTONE_PREFIX,
    UPDATED_AT, fingerprint_value, flag, now_millis, number, primary_key, tombstone_primary_key,
};

/// Step (a) of the create protocol: put the item, pending, only where there is none.
const PUT_PENDING_CONDITION: &str = "attribute_not_exists(#k)";

/// Marks an item retired...
const MARK_RETIRED_UPDATE: &str = "SET #ret = :true";
/// ...only if it exists (a concurrent `purge` may have deleted it): an update of an absent key
/// would create an item.
const MARK_RETIRED_CONDITION: &str = "attribute_exists(#k)";

/// Step (c) of the create protocol: the item becomes visible...
const FINISH_PENDING_UPDATE: &str = "REMOVE #pend";
/// ...unless a `retire` marked it meanwhile (or a `purge` deleted it).
const FINISH_PENDING_CONDITION: &str = "attribute_exists(#k) AND attribute_not_exists(#ret)";

/// Undoing step (a) of a `start_at` that is refused: only an item still pending.
const DELETE_PENDING_CONDITION: &str = "attribute_exists(#pend)";

/// The items of a group, for `retire`, `purge` and `start_at`...
const GROUP_KEY_CONDITION: &str = "#g = :g";
/// ...with what tells them apart: the sort key and the flags.
const GROUP_PROJECTION: &str = "#k, #ret, #pend";

/// The tombstones of a group.
const TOMBSTONES_KEY_CONDITION: &str = "#g = :g AND begins_with(#k, :prefix)";

/// `groups`: every item's keys and flags.
const GROUPS_PROJECTION: &str = "#g, #k, #ret, #pend";

/// Step (a): a `PutItem` of the whole item with `pending = true`, only where no item is,
/// returning the item in the way when there is one. `fingerprint` for a claim.
pub(crate) fn put_pending(
    store: &DynamoDbCheckpointStore,
    group: &str,
    subscription: &str,
    partition: u32,
    position: u64,
    fingerprint: Option<Fingerprint>,
) -> PutItemFluentBuilder {
    let mut item = primary_key(group, subscription, partition);
    item.insert(
        SUBSCRIPTION.to_owned(),
        AttributeValue::S(subscription.to_owned()),
    );
    item.insert(PARTITION.to_owned(), number(u64::from(partition)));
    item.insert(POSITION.to_owned(), number(position));
    item.insert(UPDATED_AT.to_owned(), now_millis());
    item.insert(PENDING.to_owned(), flag());
    if let Some(fingerprint) = fingerprint {
        item.insert(FINGERPRINT.to_owned(), fingerprint_value(fingerprint));
    }
    store
        .client()
        .put_item()
        .table_name(store.table())
        .set_item(Some(item))
        .condition_expression(PUT_PENDING_CONDITION)
        .expression_attribute_names("#k", KEY)
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
}

/// The whole item of a checkpoint, on a consistent read: where a refused write came back
/// without it.
pub(crate) fn get_item(
    store: &DynamoDbCheckpointStore,
    group: &str,
    subscription: &str,
    partition: u32,
) -> GetItemFluentBuilder {
    store
        .client()
        .get_item()
        .table_name(store.table())
        .set_key(Some(primary_key(group, subscription, partition)))
        .consistent_read(true)
}

/// Step (b): the subscription's tombstone, on a consistent read (only its key).
pub(crate) fn get_tombstone(
    store: &DynamoDbCheckpointStore,
    group: &str,
    subscription: &str,
) -> GetItemFluentBuilder {
    store
        .client()
        .get_item()
        .table_name(store.table())
        .set_key(Some(tombstone_primary_key(group, subscription)))
        .projection_expression("#k")
        .expression_attribute_names("#k", KEY)
        .consistent_read(true)
}

/// `retire`, and step (b) when it finds the tombstone: `SET retired = true` on an existing item.
pub(crate) fn mark_retired(
    store: &DynamoDbCheckpointStore,
    group: &str,
    subscription: &str,
    partition: u32,
) -> UpdateItemFluentBuilder {
    store
        .client()
        .update_item()
        .table_name(store.table())
        .set_key(Some(primary_key(group, subscription, partition)))
        .update_expression(MARK_RETIRED_UPDATE)
        .condition_expression(MARK_RETIRED_CONDITION)
        .expression_attribute_names("#k", KEY)
        .expression_attribute_names("#ret", RETIRED)
        .expression_attribute_values(":true", flag())
}

/// Step (c): `REMOVE pending` unless the item is retired, returning the item as it is
/// afterwards, or as it was when the condition fails.
pub(crate) fn finish_pending(
    store: &DynamoDbCheckpointStore,
    group: &str,
    subscription: &str,
    partition: u32,
) -> UpdateItemFluentBuilder {
    store
        .client()
        .update_item()
        .table_name(store.table())
        .set_key(Some(primary_key(group, subscription, partition)))
        .update_expression(FINISH_PENDING_UPDATE)
        .condition_expression(FINISH_PENDING_CONDITION)
        .expression_attribute_names("#k", KEY)
        .expression_attribute_names("#ret", RETIRED)
        .expression_attribute_names("#pend", PENDING)
        .return_values(ReturnValue::AllNew)
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
}

/// A refused `start_at` takes back the items its step (a) created, if still pending.
pub(crate) fn delete_pending(
    store: &DynamoDbCheckpointStore,
    group: &str,
    subscription: &str,
    partition: u32,
) -> DeleteItemFluentBuilder {
    store
        .client()
        .delete_item()
        .table_name(store.table())
        .set_key(Some(primary_key(group, subscription, partition)))
        .condition_expression(DELETE_PENDING_CONDITION)
        .expression_attribute_names("#pend", PENDING)
}

/// `purge`: one item of the subscription, whatever it holds.
pub(crate) fn delete_checkpoint(
    store: &DynamoDbCheckpointStore,
    group: &str,
    subscription: &str,
    partition: u32,
) -> DeleteItemFluentBuilder {
    store
        .client()
        .delete_item()
        .table_name(store.table())
        .set_key(Some(primary_key(group, subscription, partition)))
}

/// `purge`, last: the tombstone.
pub(crate) fn delete_tombstone(
    store: &DynamoDbCheckpointStore,
    group: &str,
    subscription: &str,
) -> DeleteItemFluentBuilder {
    store
        .client()
        .delete_item()
        .table_name(store.table())
        .set_key(Some(tombstone_primary_key(group, subscription)))
}

/// `retire`, first: the tombstone (a `PutItem`; putting it again changes nothing that matters).
pub(crate) fn put_tombstone(
    store: &DynamoDbCheckpointStore,
    group: &str,
    subscription: &str,
) -> PutItemFluentBuilder {
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
}

/// One page of a group's items (sort key and flags), `ConsistentRead`: `retire`, `purge` and
/// `start_at` pick the subscription's out of it.
pub(crate) fn group_items_page(
    store: &DynamoDbCheckpointStore,
    group: &str,
    limit: Option<i32>,
    start_key: Option<HashMap<String, AttributeValue>>,
) -> QueryFluentBuilder {
    store
        .client()
        .query()
        .table_name(store.table())
        .key_condition_expression(GROUP_KEY_CONDITION)
        .projection_expression(GROUP_PROJECTION)
        .expression_attribute_names("#g", GROUP)
        .expression_attribute_names("#k", KEY)
        .expression_attribute_names("#ret", RETIRED)
        .expression_attribute_names("#pend", PENDING)
        .expression_attribute_values(":g", AttributeValue::S(group.to_owned()))
        .consistent_read(true)
        .set_limit(limit)
        .set_exclusive_start_key(start_key)
}

/// One page of a group's tombstones (their sort keys), `ConsistentRead`: `retired`.
pub(crate) fn tombstones_page(
    store: &DynamoDbCheckpointStore,
    group: &str,
    limit: Option<i32>,
    start_key: Option<HashMap<String, AttributeValue>>,
) -> QueryFluentBuilder {
    store
        .client()
        .query()
        .table_name(store.table())
        .key_condition_expression(TOMBSTONES_KEY_CONDITION)
        .projection_expression("#k")
        .expression_attribute_names("#g", GROUP)
        .expression_attribute_names("#k", KEY)
        .expression_attribute_values(":g", AttributeValue::S(group.to_owned()))
        .expression_attribute_values(":prefix", AttributeValue::S(TOMBSTONE_PREFIX.to_owned()))
        .consistent_read(true)
        .set_limit(limit)
        .set_exclusive_start_key(start_key)
}

/// One page of the whole table (keys and flags), `ConsistentRead`: `groups`.
pub(crate) fn groups_page(
    store: &DynamoDbCheckpointStore,
    limit: Option<i32>,
    start_key: Option<HashMap<String, AttributeValue>>,
) -> ScanFluentBuilder {
    store
        .client()
        .scan()
        .table_name(store.table())
        .projection_expression(GROUPS_PROJECTION)
        .expression_attribute_names("#g", GROUP)
        .expression_attribute_names("#k", KEY)
        .expression_attribute_names("#ret", RETIRED)
        .expression_attribute_names("#pend", PENDING)
        .consistent_read(true)
        .set_limit(limit)
        .set_exclusive_start_key(start_key)
}
