//! The create protocol: how a checkpoint's item comes into being, once in its lifetime, so
//! that a retired subscription stays retired without transactions (the crate documentation
//! says why it is safe):
//!
//! - (a) `PutItem` of the item with `pending = true`, only where no item is;
//! - (b) a consistent `GetItem` of the subscription's tombstone: if there is one, the item is
//!   marked `retired` and the write is ignored (a claim fails with `Error::Retired`); at the
//!   same time, the `PutItem` of the group's marker, unless this store instance wrote it
//!   already;
//! - (c) `REMOVE pending`, only if the item is not `retired`: from here on reads show it.
//!
//! A write that finds a pending item (another write between (a) and (c), or one that crashed
//! there) runs (b) and (c) itself, then goes on with its own write. `start_at` runs the same
//! steps for every partition at once ([`start_at`](super::start_at)).

use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::put_item::builders::PutItemFluentBuilder;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};
use checkpoint_core::{Error, Fingerprint, Operation};
use futures_util::future::try_join;

use super::checkpoint::{Seen, as_sent_or_read};
use super::{Key, admin, groups, update_item};
use crate::DynamoDbCheckpointStore;
use crate::error::sdk_error;
use crate::layout::{
    FINGERPRINT, KEY, PARTITION, PENDING, POSITION, RETIRED, SUBSCRIPTION, Stored, UPDATED_AT,
    fingerprint_value, flag, now_millis, number, primary_key, tombstone_primary_key,
};

/// Step (a): put the item, pending, only where there is none.
const PUT_PENDING_CONDITION: &str = "attribute_not_exists(#k)";

/// Step (c): the item becomes visible...
const FINISH_PENDING_UPDATE: &str = "REMOVE #pend";
/// ...unless a `retire` marked it meanwhile (or a `purge` deleted it).
const FINISH_PENDING_CONDITION: &str = "attribute_exists(#k) AND attribute_not_exists(#ret)";

/// Step (a) of a save or a claim: the item, pending, where there is none; else the item in the
/// way (as the refusal carried it, or on a consistent read).
pub(crate) async fn create(
    store: &DynamoDbCheckpointStore,
    op: Operation,
    key: Key<'_>,
    position: u64,
    fingerprint: Option<Fingerprint>,
) -> Result<Seen, Error> {
    match put_pending(store, key, position, fingerprint).send().await {
        Ok(_) => Ok(Seen::Known(Stored::Pending)),
        Err(error) => match error.as_service_error() {
            Some(PutItemError::ConditionalCheckFailedException(failed)) => {
                as_sent_or_read(store, op, key, failed.item()).await
            }
            _ => Err(sdk_error(op, error)),
        },
    }
}

/// Steps (b) and (c) on a pending item: retired if the subscription has a tombstone, else
/// visible (after the group's marker is written); the item as it is afterwards.
pub(crate) async fn finish(
    store: &DynamoDbCheckpointStore,
    op: Operation,
    key: Key<'_>,
) -> Result<Seen, Error> {
    let (group, subscription, _) = key;
    // The group's marker (unless this instance wrote it) at the same time as (b): both are
    // done before (c) makes the item visible, so no visible checkpoint lacks its marker.
    let (retired, ()) = try_join(
        has_tombstone(store, op, group, subscription),
        groups::mark(store, op, group),
    )
    .await?;
    if retired {
        tracing::debug!("the subscription is retired: the pending item is retired too");
        admin::mark_retired(store, op, key).await?;
        return Ok(Seen::Known(Stored::Retired));
    }
    match finish_pending(store, key).send().await {
        Ok(output) => as_sent_or_read(store, op, key, output.attributes.as_ref()).await,
        Err(error) => match error.as_service_error() {
            // Retired meanwhile, or deleted by a purge: the item as it was says which.
            Some(UpdateItemError::ConditionalCheckFailedException(failed)) => {
                as_sent_or_read(store, op, key, failed.item()).await
            }
            _ => Err(sdk_error(op, error)),
        },
    }
}

/// Step (b): whether the subscription has a tombstone, on a consistent `GetItem` of its key.
async fn has_tombstone(
    store: &DynamoDbCheckpointStore,
    op: Operation,
    group: &str,
    subscription: &str,
) -> Result<bool, Error> {
    let tombstone = store
        .client()
        .get_item()
        .table_name(store.table())
        .set_key(Some(tombstone_primary_key(group, subscription)))
        .projection_expression("#k")
        .expression_attribute_names("#k", KEY)
        .consistent_read(true)
        .send()
        .await
        .map_err(|e| sdk_error(op, e))?;
    Ok(tombstone.item.is_some_and(|item| !item.is_empty()))
}

/// Step (a)'s request: a `PutItem` of the whole item with `pending = true`, only where no item
/// is, returning the item in the way when there is one. `fingerprint` for a claim.
pub(crate) fn put_pending(
    store: &DynamoDbCheckpointStore,
    (group, subscription, partition): Key<'_>,
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

/// Step (c)'s request: `REMOVE pending` unless the item is retired, returning the item as it
/// is afterwards, or as it was when the condition fails.
pub(crate) fn finish_pending(
    store: &DynamoDbCheckpointStore,
    (group, subscription, partition): Key<'_>,
) -> UpdateItemFluentBuilder {
    update_item(store, group, subscription, partition)
        .update_expression(FINISH_PENDING_UPDATE)
        .condition_expression(FINISH_PENDING_CONDITION)
        .expression_attribute_names("#k", KEY)
        .expression_attribute_names("#ret", RETIRED)
        .expression_attribute_names("#pend", PENDING)
        .return_values(ReturnValue::AllNew)
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
}
