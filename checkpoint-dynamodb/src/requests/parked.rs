//! The requests of parked entries: a `PutItem` for `park`, the `Query` of a group's parked
//! entries, a conditional `UpdateItem` for `retry_parked` and a conditional `DeleteItem` for
//! `unpark`, each on one item under the group's parked partition key
//! ([`layout`](crate::layout)).

use aws_sdk_dynamodb::types::AttributeValue;
use checkpoint_core::parked::ParkedEntry;
use checkpoint_core::{Error, Operation};

use super::{Page, StartKey, group_page_query, next_start};
use crate::DynamoDbCheckpointStore;
use crate::error::{is_condition_failed, sdk_error, unexpected};
use crate::layout::{
    KEY, RETRY_REQUESTED, parked_item, parked_of, parked_partition_key, parked_primary_key,
};

/// (group, subscription, partition, position): the key of a parked entry.
pub(crate) type ParkedKey<'a> = (&'a str, &'a str, u32, u64);

/// Every parked entry of a group: its partition key.
const PARKED_KEY_CONDITION: &str = "#g = :g";

/// `retry_parked`: set the flag...
const RETRY_UPDATE: &str = "SET #r = :true";
/// ...only on an entry that is parked (an `UpdateItem` would otherwise create the item), which
/// is also `unpark`'s condition.
const PARKED_CONDITION: &str = "attribute_exists(#k)";

/// `park`: one `PutItem` of the whole item, which replaces an entry parked before (its retry
/// request cleared with it).
pub(crate) async fn park(
    store: &DynamoDbCheckpointStore,
    group: &str,
    entry: &ParkedEntry,
) -> Result<(), Error> {
    store
        .client()
        .put_item()
        .table_name(store.table())
        .set_item(Some(parked_item(group, entry)))
        .send()
        .await
        .map_err(|e| sdk_error(Operation::Park, e))?;
    Ok(())
}

/// One page of a group's parked entries, on a consistent `Query` of their partition key.
pub(crate) async fn parked_page(
    store: &DynamoDbCheckpointStore,
    group: &str,
    start: Option<StartKey>,
) -> Result<Page<ParkedEntry>, Error> {
    let op = Operation::Parked;
    let page = group_page_query(store, &parked_partition_key(group), start)
        .key_condition_expression(PARKED_KEY_CONDITION)
        .send()
        .await
        .map_err(|e| sdk_error(op, e))?;
    let items = page
        .items()
        .iter()
        .map(|item| parked_of(item).map_err(unexpected(op)))
        .collect::<Result<_, Error>>()?;
    Ok(Page {
        items,
        next: next_start(page.last_evaluated_key),
    })
}

/// `retry_parked`: one `UpdateItem` conditioned on the item's existence; `false` when the
/// condition failed (nothing parked under the key, nothing written).
pub(crate) async fn retry_parked(
    store: &DynamoDbCheckpointStore,
    (group, subscription, partition, position): ParkedKey<'_>,
) -> Result<bool, Error> {
    let sent = store
        .client()
        .update_item()
        .table_name(store.table())
        .set_key(Some(parked_primary_key(
            group,
            subscription,
            partition,
            position,
        )))
        .update_expression(RETRY_UPDATE)
        .condition_expression(PARKED_CONDITION)
        .expression_attribute_names("#r", RETRY_REQUESTED)
        .expression_attribute_names("#k", KEY)
        .expression_attribute_values(":true", AttributeValue::Bool(true))
        .send()
        .await;
    match sent {
        Ok(_) => Ok(true),
        Err(error) if is_condition_failed(&error) => Ok(false),
        Err(error) => Err(sdk_error(Operation::RetryParked, error)),
    }
}

/// `unpark`: one `DeleteItem` conditioned on the item's existence; `false` when the condition
/// failed (nothing parked under the key). A condition rather than the old item returned, which
/// not every server sends.
pub(crate) async fn unpark(
    store: &DynamoDbCheckpointStore,
    (group, subscription, partition, position): ParkedKey<'_>,
) -> Result<bool, Error> {
    let sent = store
        .client()
        .delete_item()
        .table_name(store.table())
        .set_key(Some(parked_primary_key(
            group,
            subscription,
            partition,
            position,
        )))
        .condition_expression(PARKED_CONDITION)
        .expression_attribute_names("#k", KEY)
        .send()
        .await;
    match sent {
        Ok(_) => Ok(true),
        Err(error) if is_condition_failed(&error) => Ok(false),
        Err(error) => Err(sdk_error(Operation::Unpark, error)),
    }
}
