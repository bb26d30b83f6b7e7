//! Every request the store sends, with its expressions: the one place that holds request text.
//!
//! Each function builds one request, ready to send, from the item layout in
//! [`layout`](crate::layout); the store sends it and reads the reply. Every expression names
//! attributes through `#placeholders`: `group`, `key`, `position` and `partition` are among
//! DynamoDB's reserved words, and placeholders keep all expressions uniform.

use std::collections::HashMap;

use aws_sdk_dynamodb::error::BuildError;
use aws_sdk_dynamodb::operation::create_table::builders::CreateTableFluentBuilder;
use aws_sdk_dynamodb::operation::describe_table::builders::DescribeTableFluentBuilder;
use aws_sdk_dynamodb::operation::get_item::builders::GetItemFluentBuilder;
use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::{
    AttributeValue, BillingMode, ReturnValue, ReturnValuesOnConditionCheckFailure, Update,
};
use checkpoint_core::Fingerprint;

use crate::DynamoDbCheckpointStore;
use crate::layout::{
    FINGERPRINT, GROUP, KEY, PARTITION, PENDING, POSITION, RETIRED, SUBSCRIPTION, UPDATED_AT,
    attribute_definitions, fingerprint_value, key_schema, now_millis, number, primary_key,
};

mod tombstones;

pub(crate) use tombstones::*;

/// `save`: write the position and the plain copies of the key parts...
const SAVE_UPDATE: &str = "SET #pos = :pos, #sub = :sub, #part = :part, #at = :at";
/// ...only when the item exists (a position is stored), its position is behind, and it is
/// neither retired nor pending. Anything else is decided by the item as it was (see `write`).
const SAVE_CONDITION: &str =
    "#pos < :pos AND attribute_not_exists(#ret) AND attribute_not_exists(#pend)";

/// `load`: the position, and the flags that hide it.
const LOAD_PROJECTION: &str = "#pos, #ret, #pend";

/// `list`: every item of the group...
const LIST_KEY_CONDITION: &str = "#g = :g";
/// ...with its sort key, position, and the flags that hide it.
const LIST_PROJECTION: &str = "#k, #pos, #ret, #pend";

/// A claim's item read back: the position, the fingerprint and the flags.
const CLAIMED_PROJECTION: &str = "#pos, #fp, #ret, #pend";

/// `claim`: create at the initial position with the fingerprint on first use; afterwards keep
/// the stored position, and give a fingerprint-less (monotonic) item the claim's fingerprint.
/// A stored fingerprint is never overwritten: the caller compares it with the returned one.
const CLAIM_UPDATE: &str = "SET #pos = if_not_exists(#pos, :initial), #fp = if_not_exists(#fp, :fp), \
     #sub = :sub, #part = :part, #at = if_not_exists(#at, :at)";
/// ...only on an existing item that is neither retired nor pending: a claim never creates an
/// item in one step (the create protocol does, see `write`).
const CLAIM_CONDITION: &str =
    "attribute_exists(#pos) AND attribute_not_exists(#ret) AND attribute_not_exists(#pend)";

/// `advance`: move the position to `:to`...
const ADVANCE_UPDATE: &str = "SET #pos = :to, #at = :at";
/// ...only when it is still `:from` (false when the item or its position is absent) and the
/// item is neither retired nor pending.
const ADVANCE_CONDITION: &str =
    "#pos = :from AND attribute_not_exists(#ret) AND attribute_not_exists(#pend)";

/// `save` and each entry of `save_all`: one conditional `UpdateItem`, returning the item as it
/// was when the condition fails (not ahead, retired, pending or absent: `write` tells which).
pub(crate) fn save(
    store: &DynamoDbCheckpointStore,
    group: &str,
    subscription: &str,
    partition: u32,
    position: u64,
) -> UpdateItemFluentBuilder {
    let request = update_item(store, group, subscription, partition)
        .update_expression(SAVE_UPDATE)
        .condition_expression(SAVE_CONDITION)
        .expression_attribute_names("#pos", POSITION)
        .expression_attribute_values(":pos", number(position))
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
    with_flags(with_key_copies(request, subscription, partition))
}

/// `load`, and the read after an advance refused without the old item: one `GetItem` with
/// `ConsistentRead`.
pub(crate) fn load(
    store: &DynamoDbCheckpointStore,
    group: &str,
    subscription: &str,
    partition: u32,
) -> GetItemFluentBuilder {
    with_get_flags(
        consistent_get(store, group, subscription, partition)
            .projection_expression(LOAD_PROJECTION),
    )
}

/// A claim's item, when the claim's reply did not hold it: one `GetItem` with `ConsistentRead`
/// of the position and the fingerprint.
pub(crate) fn read_claimed(
    store: &DynamoDbCheckpointStore,
    group: &str,
    subscription: &str,
    partition: u32,
) -> GetItemFluentBuilder {
    with_get_flags(
        consistent_get(store, group, subscription, partition)
            .projection_expression(CLAIMED_PROJECTION)
            .expression_attribute_names("#fp", FINGERPRINT),
    )
}

/// One page of `list`: a `Query` on the group's partition key with `ConsistentRead`, from
/// `start_key` (the previous page's `LastEvaluatedKey`), at most `limit` items.
pub(crate) fn list_page(
    store: &DynamoDbCheckpointStore,
    group: &str,
    limit: Option<i32>,
    start_key: Option<HashMap<String, AttributeValue>>,
) -> QueryFluentBuilder {
    store
        .client()
        .query()
        .table_name(store.table())
        .key_condition_expression(LIST_KEY_CONDITION)
        .projection_expression(LIST_PROJECTION)
        .expression_attribute_names("#g", GROUP)
        .expression_attribute_names("#k", KEY)
        .expression_attribute_names("#pos", POSITION)
        .expression_attribute_names("#ret", RETIRED)
        .expression_attribute_names("#pend", PENDING)
        .expression_attribute_values(":g", AttributeValue::S(group.to_owned()))
        .consistent_read(true)
        .set_limit(limit)
        .set_exclusive_start_key(start_key)
}

/// `claim`: one `UpdateItem` with `if_not_exists` on an existing live item, returning the item
/// as it is afterwards, or as it was when the condition fails.
pub(crate) fn claim(
    store: &DynamoDbCheckpointStore,
    group: &str,
    subscription: &str,
    partition: u32,
    fingerprint: Fingerprint,
    initial_position: u64,
) -> UpdateItemFluentBuilder {
    let request = update_item(store, group, subscription, partition)
        .update_expression(CLAIM_UPDATE)
        .condition_expression(CLAIM_CONDITION)
        .expression_attribute_names("#pos", POSITION)
        .expression_attribute_names("#fp", FINGERPRINT)
        .expression_attribute_values(":initial", number(initial_position))
        .expression_attribute_values(":fp", fingerprint_value(fingerprint))
        .return_values(ReturnValue::AllNew)
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
    with_flags(with_key_copies(request, subscription, partition))
}

/// `advance`: one `UpdateItem` with the condition `position = :from`, returning the item as it
/// was when the condition fails.
pub(crate) fn advance(
    store: &DynamoDbCheckpointStore,
    group: &str,
    subscription: &str,
    partition: u32,
    from: u64,
    to: u64,
) -> UpdateItemFluentBuilder {
    let (names, values) = advance_expression(from, to);
    update_item(store, group, subscription, partition)
        .update_expression(ADVANCE_UPDATE)
        .condition_expression(ADVANCE_CONDITION)
        .set_expression_attribute_names(Some(names))
        .set_expression_attribute_values(Some(values))
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
}

/// The same advance as [`advance`], as the `Update` of an item of the caller's
/// `TransactWriteItems`.
pub(crate) fn advance_update(
    store: &DynamoDbCheckpointStore,
    group: &str,
    subscription: &str,
    partition: u32,
    from: u64,
    to: u64,
) -> Result<Update, BuildError> {
    let (names, values) = advance_expression(from, to);
    Update::builder()
        .table_name(store.table())
        .set_key(Some(primary_key(group, subscription, partition)))
        .update_expression(ADVANCE_UPDATE)
        .condition_expression(ADVANCE_CONDITION)
        .set_expression_attribute_names(Some(names))
        .set_expression_attribute_values(Some(values))
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
        .build()
}

/// An `UpdateItem` of the key, for [`save`], [`claim`] and [`advance`] to complete.
pub(crate) fn update_item(
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
}

/// The plain copies of the key parts and the time of the write (`#sub = :sub, #part = :part`
/// and `#at` from `:at`), which [`save`] and [`claim`] both set.
pub(crate) fn with_key_copies(
    request: UpdateItemFluentBuilder,
    subscription: &str,
    partition: u32,
) -> UpdateItemFluentBuilder {
    request
        .expression_attribute_names("#sub", SUBSCRIPTION)
        .expression_attribute_names("#part", PARTITION)
        .expression_attribute_names("#at", UPDATED_AT)
        .expression_attribute_values(":sub", AttributeValue::S(subscription.to_owned()))
        .expression_attribute_values(":part", number(u64::from(partition)))
        .expression_attribute_values(":at", now_millis())
}

/// The names of the flags, `#ret` and `#pend`, for an update whose condition reads them.
fn with_flags(request: UpdateItemFluentBuilder) -> UpdateItemFluentBuilder {
    request
        .expression_attribute_names("#ret", RETIRED)
        .expression_attribute_names("#pend", PENDING)
}

/// The names of the flags, `#ret` and `#pend`, for a read that projects them.
fn with_get_flags(request: GetItemFluentBuilder) -> GetItemFluentBuilder {
    request
        .expression_attribute_names("#ret", RETIRED)
        .expression_attribute_names("#pend", PENDING)
}

/// A `GetItem` of the key with `ConsistentRead`, its position named `#pos`, for [`load`] and
/// [`read_claimed`] to say what to read.
fn consistent_get(
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
        .expression_attribute_names("#pos", POSITION)
        .consistent_read(true)
}

/// The expression attribute names and values of an advance, shared by [`advance`] and
/// [`advance_update`].
fn advance_expression(
    from: u64,
    to: u64,
) -> (HashMap<String, String>, HashMap<String, AttributeValue>) {
    let names = HashMap::from([
        ("#pos".to_owned(), POSITION.to_owned()),
        ("#at".to_owned(), UPDATED_AT.to_owned()),
        ("#ret".to_owned(), RETIRED.to_owned()),
        ("#pend".to_owned(), PENDING.to_owned()),
    ]);
    let values = HashMap::from([
        (":from".to_owned(), number(from)),
        (":to".to_owned(), number(to)),
        (":at".to_owned(), now_millis()),
    ]);
    (names, values)
}

/// `create_table`: the key schema of [`layout`](crate::layout), on-demand billing.
pub(crate) fn create_table(
    store: &DynamoDbCheckpointStore,
) -> Result<CreateTableFluentBuilder, BuildError> {
    Ok(store
        .client()
        .create_table()
        .table_name(store.table())
        .billing_mode(BillingMode::PayPerRequest)
        .set_attribute_definitions(Some(attribute_definitions()?))
        .set_key_schema(Some(key_schema()?)))
}

/// `create_table`'s wait: the table's status and key schema.
pub(crate) fn describe_table(store: &DynamoDbCheckpointStore) -> DescribeTableFluentBuilder {
    store.client().describe_table().table_name(store.table())
}
