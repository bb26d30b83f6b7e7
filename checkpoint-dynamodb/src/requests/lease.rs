//! The requests of leases: the `Query` of a subscription's leases and heartbeats, the
//! tombstone's `GetItem`, and the conditional writes of one heartbeat or one lease. What they
//! decide on is in [`lease`](crate::lease); where the items live is in
//! [`layout`](crate::layout).
//!
//! Every write is a single-item conditional request: no transactions (dynalite, one of the
//! servers the tests run on, has none), so a takeover ends the dead owner's heartbeat first
//! (one `UpdateItem`, conditioned on the heartbeat being exactly as observed), which frees
//! all its leases at once, and then grants each lease on its epoch.

use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};
use checkpoint_core::{Error, Operation, UnexpectedValue};

use super::{Page, StartKey, group_page_query, next_start, sent};
use crate::DynamoDbCheckpointStore;
use crate::error::{is_condition_failed, sdk_error, unexpected};
use crate::layout::{
    COUNTER, DURATION_MS, ENDED, EPOCH, GENERATION, HANDOVER, Heartbeat, INCARNATION, KEY,
    LeasePartitionItem, OWNER, OWNER_GENERATION, PARTITION, UPDATED_AT, flag, heartbeat_sort_key,
    lease_item_key, lease_partition_item, lease_partition_key, lease_sort_key, now_millis, number,
    optional_number, tombstone_primary_key,
};

/// (group, subscription).
pub(crate) type Name<'a> = (&'a str, &'a str);

/// Every item of a subscription's leases: its partition key.
const LEASES_KEY_CONDITION: &str = "#g = :g";

/// A live owner's acquire or renew: one more beat, the duration it asks for...
const BEAT_UPDATE: &str = "SET #c = #c + :one, #d = :d, #at = :at";
/// ...only while its heartbeat is the generation it holds and has not ended.
const BEAT_CONDITION: &str = "#gen = :gen AND attribute_not_exists(#end)";

/// A (re)starting owner: a new generation (its earlier leases are never held again), one more
/// beat, the duration; the incarnation is set once, when the item is created.
const START_UPDATE: &str = "SET #gen = if_not_exists(#gen, :zero) + :one, \
     #c = if_not_exists(#c, :zero) + :one, #d = :d, #inc = if_not_exists(#inc, :inc), \
     #at = :at REMOVE #end";

/// A leave or a takeover: a new generation (every lease of the owner is free at once), ended.
const END_UPDATE: &str = "SET #gen = #gen + :one, #end = :true, #at = :at";
/// A leave of an owner this store holds live: only its generation.
const END_IF_GENERATION: &str = "#gen = :gen";
/// A leave of an owner this store does not hold: whatever its generation.
const END_IF_EXISTS: &str = "attribute_exists(#gen)";
/// A takeover: only if the heartbeat is exactly as observed for its whole duration.
const END_IF_UNCHANGED: &str =
    "#c = :c AND #gen = :gen AND #inc = :inc AND attribute_not_exists(#end)";

/// A lease's first grant: only where there is no item.
const NEW_LEASE_CONDITION: &str = "attribute_not_exists(#k)";

/// A grant of a free lease: the owner, its generation, the next epoch; no handover request...
const GRANT_UPDATE: &str = "SET #o = :o, #og = :og, #e = :next, #at = :at REMOVE #h";
/// ...only if nobody was granted it since it was read (every grant moves the epoch).
const GRANT_CONDITION: &str = "#e = :e";

/// A release: no owner, no handover request, the epoch kept...
const RELEASE_UPDATE: &str = "REMOVE #o, #og, #h SET #at = :at";
/// ...only from its holder's generation. Also the condition of a handover request.
const HELD_CONDITION: &str = "#o = :o AND #og = :og";

/// A handover request.
const HANDOVER_UPDATE: &str = "SET #h = :r, #at = :at";

/// The condition of a heartbeat's end.
#[derive(Debug, Clone, Copy)]
pub(crate) enum EndIf<'a> {
    /// The heartbeat exists.
    Exists,
    /// The heartbeat is of this generation.
    Generation(u64),
    /// The heartbeat is exactly this one (counter, generation, incarnation), not ended.
    Unchanged(&'a Heartbeat),
}

/// One page of a subscription's leases and heartbeats, on a consistent `Query`.
pub(crate) async fn leases_page(
    store: &DynamoDbCheckpointStore,
    op: Operation,
    (group, subscription): Name<'_>,
    start: Option<StartKey>,
) -> Result<Page<LeasePartitionItem>, Error> {
    let page = group_page_query(store, &lease_partition_key(group, subscription), start)
        .key_condition_expression(LEASES_KEY_CONDITION)
        .send()
        .await
        .map_err(|e| sdk_error(op, e))?;
    let items = page
        .items()
        .iter()
        .map(|item| lease_partition_item(item).map_err(unexpected(op)))
        .collect::<Result<_, Error>>()?;
    Ok(Page {
        items,
        next: next_start(page.last_evaluated_key),
    })
}

/// Whether the subscription has a tombstone, on a consistent `GetItem`.
pub(crate) async fn is_retired(
    store: &DynamoDbCheckpointStore,
    op: Operation,
    (group, subscription): Name<'_>,
) -> Result<bool, Error> {
    let output = store
        .client()
        .get_item()
        .table_name(store.table())
        .set_key(Some(tombstone_primary_key(group, subscription)))
        .consistent_read(true)
        .projection_expression("#k")
        .expression_attribute_names("#k", KEY)
        .send()
        .await
        .map_err(|e| sdk_error(op, e))?;
    Ok(sent(output.item()).is_some())
}

/// An `UpdateItem` of an item of the subscription's leases, with the attribute names every
/// expression here uses.
fn update(
    store: &DynamoDbCheckpointStore,
    (group, subscription): Name<'_>,
    sort_key: String,
) -> UpdateItemFluentBuilder {
    store
        .client()
        .update_item()
        .table_name(store.table())
        .set_key(Some(lease_item_key(group, subscription, sort_key)))
        .expression_attribute_names("#at", UPDATED_AT)
        .expression_attribute_values(":at", now_millis())
}

/// Sends `request`: `true` when it took effect, `false` when its condition refused it.
async fn conditional(op: Operation, request: UpdateItemFluentBuilder) -> Result<bool, Error> {
    match request.send().await {
        Ok(_) => Ok(true),
        Err(error) if is_condition_failed(&error) => Ok(false),
        Err(error) => Err(sdk_error(op, error)),
    }
}

/// One beat of a live owner of generation `generation`: `false` when its heartbeat has
/// another generation or ended (it was taken over, left, or purged).
pub(crate) async fn beat(
    store: &DynamoDbCheckpointStore,
    op: Operation,
    name: Name<'_>,
    owner: &str,
    generation: u64,
    duration_ms: u64,
) -> Result<bool, Error> {
    let request = update(store, name, heartbeat_sort_key(owner))
        .update_expression(BEAT_UPDATE)
        .condition_expression(BEAT_CONDITION)
        .expression_attribute_names("#c", COUNTER)
        .expression_attribute_names("#d", DURATION_MS)
        .expression_attribute_names("#gen", GENERATION)
        .expression_attribute_names("#end", ENDED)
        .expression_attribute_values(":one", number(1))
        .expression_attribute_values(":d", number(duration_ms))
        .expression_attribute_values(":gen", number(generation));
    conditional(op, request).await
}

/// Starts a new generation of `owner`'s heartbeat (creating it if need be): the generation.
pub(crate) async fn start(
    store: &DynamoDbCheckpointStore,
    name: Name<'_>,
    owner: &str,
    duration_ms: u64,
    incarnation: u64,
) -> Result<u64, Error> {
    let op = Operation::Acquire;
    let output = update(store, name, heartbeat_sort_key(owner))
        .update_expression(START_UPDATE)
        .expression_attribute_names("#c", COUNTER)
        .expression_attribute_names("#d", DURATION_MS)
        .expression_attribute_names("#gen", GENERATION)
        .expression_attribute_names("#inc", INCARNATION)
        .expression_attribute_names("#end", ENDED)
        .expression_attribute_values(":zero", number(0))
        .expression_attribute_values(":one", number(1))
        .expression_attribute_values(":d", number(duration_ms))
        .expression_attribute_values(":inc", number(incarnation))
        .return_values(ReturnValue::UpdatedNew)
        .send()
        .await
        .map_err(|e| sdk_error(op, e))?;
    let attributes = output.attributes.unwrap_or_default();
    optional_number(&attributes, GENERATION)
        .map_err(unexpected(op))?
        .ok_or_else(|| {
            unexpected(op)(UnexpectedValue::new(
                GENERATION,
                "nothing in the reply of the update that set it (ReturnValues UPDATED_NEW)",
            ))
        })
}

/// Ends `owner`'s heartbeat (a new generation, ended) if `condition` holds: `false` when not.
pub(crate) async fn end(
    store: &DynamoDbCheckpointStore,
    op: Operation,
    name: Name<'_>,
    owner: &str,
    condition: EndIf<'_>,
) -> Result<bool, Error> {
    let request = update(store, name, heartbeat_sort_key(owner))
        .update_expression(END_UPDATE)
        .expression_attribute_names("#gen", GENERATION)
        .expression_attribute_names("#end", ENDED)
        .expression_attribute_values(":one", number(1))
        .expression_attribute_values(":true", flag());
    let request = match condition {
        EndIf::Exists => request.condition_expression(END_IF_EXISTS),
        EndIf::Generation(generation) => request
            .condition_expression(END_IF_GENERATION)
            .expression_attribute_values(":gen", number(generation)),
        EndIf::Unchanged(heartbeat) => request
            .condition_expression(END_IF_UNCHANGED)
            .expression_attribute_names("#c", COUNTER)
            .expression_attribute_names("#inc", INCARNATION)
            .expression_attribute_values(":c", number(heartbeat.counter))
            .expression_attribute_values(":gen", number(heartbeat.generation))
            .expression_attribute_values(":inc", number(heartbeat.incarnation)),
    };
    conditional(op, request).await
}

/// The first grant of a lease, at epoch 1, only where it has no item: `false` when it has one.
pub(crate) async fn grant_new(
    store: &DynamoDbCheckpointStore,
    (group, subscription): Name<'_>,
    partition: u32,
    (owner, generation): (&str, u64),
) -> Result<bool, Error> {
    let op = Operation::Acquire;
    let mut item = lease_item_key(group, subscription, lease_sort_key(partition));
    item.extend([
        (OWNER.to_owned(), AttributeValue::S(owner.to_owned())),
        (OWNER_GENERATION.to_owned(), number(generation)),
        (EPOCH.to_owned(), number(1)),
        (PARTITION.to_owned(), number(u64::from(partition))),
        (UPDATED_AT.to_owned(), now_millis()),
    ]);
    let put = store
        .client()
        .put_item()
        .table_name(store.table())
        .set_item(Some(item))
        .condition_expression(NEW_LEASE_CONDITION)
        .expression_attribute_names("#k", KEY)
        .send()
        .await;
    match put {
        Ok(_) => Ok(true),
        Err(error) if is_condition_failed(&error) => Ok(false),
        Err(error) => Err(sdk_error(op, error)),
    }
}

/// A grant of a lease read free at epoch `epoch`: the next epoch, `false` when it was granted
/// meanwhile.
pub(crate) async fn grant(
    store: &DynamoDbCheckpointStore,
    name: Name<'_>,
    partition: u32,
    (owner, generation): (&str, u64),
    epoch: u64,
) -> Result<bool, Error> {
    let request = update(store, name, lease_sort_key(partition))
        .update_expression(GRANT_UPDATE)
        .condition_expression(GRANT_CONDITION)
        .expression_attribute_names("#o", OWNER)
        .expression_attribute_names("#og", OWNER_GENERATION)
        .expression_attribute_names("#e", EPOCH)
        .expression_attribute_names("#h", HANDOVER)
        .expression_attribute_values(":o", AttributeValue::S(owner.to_owned()))
        .expression_attribute_values(":og", number(generation))
        .expression_attribute_values(":e", number(epoch))
        .expression_attribute_values(":next", number(epoch.saturating_add(1)));
    conditional(Operation::Acquire, request).await
}

/// Frees a lease `owner` holds in `generation`: `false` when it does not.
pub(crate) async fn release(
    store: &DynamoDbCheckpointStore,
    name: Name<'_>,
    partition: u32,
    (owner, generation): (&str, u64),
) -> Result<bool, Error> {
    let request = held(
        update(store, name, lease_sort_key(partition)),
        owner,
        generation,
    )
    .update_expression(RELEASE_UPDATE)
    .expression_attribute_names("#h", HANDOVER);
    conditional(Operation::Release, request).await
}

/// Marks a lease held by `holder` in `generation` as asked for by `requester`; nothing when
/// it is no longer so held.
pub(crate) async fn request_handover(
    store: &DynamoDbCheckpointStore,
    name: Name<'_>,
    partition: u32,
    (holder, generation): (&str, u64),
    requester: &str,
) -> Result<(), Error> {
    let request = held(
        update(store, name, lease_sort_key(partition)),
        holder,
        generation,
    )
    .update_expression(HANDOVER_UPDATE)
    .expression_attribute_names("#h", HANDOVER)
    .expression_attribute_values(":r", AttributeValue::S(requester.to_owned()));
    conditional(Operation::RequestHandover, request)
        .await
        .map(drop)
}

/// The condition that `owner` holds the lease in `generation`.
fn held(request: UpdateItemFluentBuilder, owner: &str, generation: u64) -> UpdateItemFluentBuilder {
    request
        .condition_expression(HELD_CONDITION)
        .expression_attribute_names("#o", OWNER)
        .expression_attribute_names("#og", OWNER_GENERATION)
        .expression_attribute_values(":o", AttributeValue::S(owner.to_owned()))
        .expression_attribute_values(":og", number(generation))
}

/// `purge`: one item of the subscription's leases, whatever it holds.
pub(crate) async fn delete(
    store: &DynamoDbCheckpointStore,
    (group, subscription): Name<'_>,
    item: &LeasePartitionItem,
) -> Result<(), Error> {
    let sort_key = match item {
        LeasePartitionItem::Lease(lease) => lease_sort_key(lease.partition),
        LeasePartitionItem::Heartbeat(heartbeat) => heartbeat_sort_key(&heartbeat.owner),
    };
    store
        .client()
        .delete_item()
        .table_name(store.table())
        .set_key(Some(lease_item_key(group, subscription, sort_key)))
        .send()
        .await
        .map(drop)
        .map_err(|e| sdk_error(Operation::Purge, e))
}
