//! The requests on one checkpoint's item (`save`'s and `claim`'s updates, the consistent reads
//! that stand in for an item a reply left out) and `list`'s pages, each read back into what
//! the store decides on.

use aws_sdk_dynamodb::operation::get_item::builders::GetItemFluentBuilder;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};
use checkpoint_core::{Checkpoint, Error, Fingerprint, Operation, UnexpectedValue};

use super::{
    Item, Key, Page, StartKey, consistent_get, group_page_query, next_start, sent, update_item,
};
use crate::DynamoDbCheckpointStore;
use crate::error::{sdk_error, unexpected};
use crate::layout::{
    FINGERPRINT, KEY, PARTITION, PENDING, POSITION, RETIRED, SUBSCRIPTION, Stored, UPDATED_AT,
    checkpoint_of, fingerprint_value, has_flag, now_millis, number, optional_position_of,
    stored_of,
};

/// `save`: write the position and the plain copies of the key parts...
const SAVE_UPDATE: &str = "SET #pos = :pos, #sub = :sub, #part = :part, #at = :at";
/// ...only when the item exists (a position is stored), its position is behind, and it is
/// neither retired nor pending. Anything else is decided by the item as it was (see `write`).
const SAVE_CONDITION: &str =
    "#pos < :pos AND attribute_not_exists(#ret) AND attribute_not_exists(#pend)";

/// `claim`: create at the initial position with the fingerprint on first use; afterwards keep
/// the stored position, and give a fingerprint-less (monotonic) item the claim's fingerprint.
/// A stored fingerprint is never overwritten: the caller compares it with the returned one.
const CLAIM_UPDATE: &str = "SET #pos = if_not_exists(#pos, :initial), #fp = if_not_exists(#fp, :fp), \
     #sub = :sub, #part = :part, #at = if_not_exists(#at, :at)";
/// ...only on an existing item that is neither retired nor pending: a claim never creates an
/// item in one step (the create protocol does).
const CLAIM_CONDITION: &str =
    "attribute_exists(#pos) AND attribute_not_exists(#ret) AND attribute_not_exists(#pend)";

/// `load`: the position, and the flags that hide it.
const LOAD_PROJECTION: &str = "#pos, #ret, #pend";

/// A claim's item read back: the position, the fingerprint and the flags.
const CLAIMED_PROJECTION: &str = "#pos, #fp, #ret, #pend";

/// `list`: every item of the group...
const LIST_KEY_CONDITION: &str = "#g = :g";
/// ...with its sort key, position, and the flags that hide it.
const LIST_PROJECTION: &str = "#k, #pos, #ret, #pend";

/// What a write knows of its item.
pub(crate) enum Seen {
    /// A refused request came back without the item: either there is none, or the server does
    /// not send it (dynalite). Step (a) of the create protocol tells which.
    Unknown,
    /// The item, as the last request or read found it.
    Known(Stored),
}

/// What an item returned by a refusal says: [`Seen::Unknown`] when there is none.
pub(crate) fn seen_in(op: Operation, item: Option<&Item>) -> Result<Seen, Error> {
    match sent(item) {
        Some(item) => stored_of(Some(item))
            .map(Seen::Known)
            .map_err(unexpected(op)),
        None => Ok(Seen::Unknown),
    }
}

/// The item as a reply carried it, else as a consistent read finds it: where the item is known
/// to have been there when the request ran, and a reply without it means only "not sent".
pub(crate) async fn as_sent_or_read(
    store: &DynamoDbCheckpointStore,
    op: Operation,
    (group, subscription, partition): Key<'_>,
    reply: Option<&Item>,
) -> Result<Seen, Error> {
    match sent(reply) {
        Some(item) => seen_in(op, Some(item)),
        None => {
            let output = consistent_get(store, group, subscription, partition)
                .send()
                .await
                .map_err(|e| sdk_error(op, e))?;
            stored_of(output.item())
                .map(Seen::Known)
                .map_err(unexpected(op))
        }
    }
}

/// `save` and each entry of `save_all`: one conditional `UpdateItem`. `None` when it took
/// effect, else what the item returned by its refusal says (not ahead, retired, pending or
/// absent: `write` tells which).
pub(crate) async fn save(
    store: &DynamoDbCheckpointStore,
    op: Operation,
    (group, subscription, partition): Key<'_>,
    position: u64,
) -> Result<Option<Seen>, Error> {
    let request = update_item(store, group, subscription, partition)
        .update_expression(SAVE_UPDATE)
        .condition_expression(SAVE_CONDITION)
        .expression_attribute_names("#pos", POSITION)
        .expression_attribute_values(":pos", number(position))
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
    match with_key_copies(request, subscription, partition)
        .send()
        .await
    {
        Ok(_) => Ok(None),
        Err(error) => match error.as_service_error() {
            Some(UpdateItemError::ConditionalCheckFailedException(failed)) => {
                seen_in(op, failed.item()).map(Some)
            }
            _ => Err(sdk_error(op, error)),
        },
    }
}

/// `claim`: one `UpdateItem` with `if_not_exists` on an existing live item; the item as it is
/// afterwards, or as it was when refused.
pub(crate) async fn claim(
    store: &DynamoDbCheckpointStore,
    (group, subscription, partition): Key<'_>,
    fingerprint: Fingerprint,
    initial_position: u64,
) -> Result<Seen, Error> {
    let op = Operation::Claim;
    let request = update_item(store, group, subscription, partition)
        .update_expression(CLAIM_UPDATE)
        .condition_expression(CLAIM_CONDITION)
        .expression_attribute_names("#pos", POSITION)
        .expression_attribute_names("#fp", FINGERPRINT)
        .expression_attribute_values(":initial", number(initial_position))
        .expression_attribute_values(":fp", fingerprint_value(fingerprint))
        .return_values(ReturnValue::AllNew)
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
    let output = match with_key_copies(request, subscription, partition)
        .send()
        .await
    {
        Ok(output) => output,
        Err(error) => {
            return match error.as_service_error() {
                Some(UpdateItemError::ConditionalCheckFailedException(failed)) => {
                    seen_in(op, failed.item())
                }
                _ => Err(sdk_error(op, error)),
            };
        }
    };
    let item = match output.attributes.filter(|item| !item.is_empty()) {
        Some(item) => item,
        // A reply without the item (a server or client that leaves `ReturnValues` out): the
        // item exists now, so read it. The claim changed nothing a later claim would not
        // change again, and positions only move forward, so what the read finds is what a
        // claim at the time of the read returns.
        None => read_claimed(store, (group, subscription, partition)).await?,
    };
    let stored = stored_of(Some(&item)).map_err(unexpected(op))?;
    if let Stored::Live {
        fingerprint: None, ..
    } = stored
    {
        // `if_not_exists` has just set it, so only a broken server gets here.
        return Err(unexpected(op)(UnexpectedValue::new(
            "fingerprint",
            "nothing right after the claim set it",
        )));
    }
    Ok(Seen::Known(stored))
}

/// The claimed item's position, fingerprint and flags, on a consistent read: where the claim's
/// reply came back without it.
async fn read_claimed(
    store: &DynamoDbCheckpointStore,
    (group, subscription, partition): Key<'_>,
) -> Result<Item, Error> {
    let op = Operation::Claim;
    let output = with_read_names(consistent_get(store, group, subscription, partition))
        .projection_expression(CLAIMED_PROJECTION)
        .expression_attribute_names("#fp", FINGERPRINT)
        .send()
        .await
        .map_err(|e| sdk_error(op, e))?;
    output.item.filter(|item| !item.is_empty()).ok_or_else(|| {
        unexpected(op)(UnexpectedValue::new(
            "claim reply",
            "no item, and none on a consistent read right after the claim",
        ))
    })
}

/// The stored position on a consistent `GetItem`, `None` when absent, retired or pending:
/// `load`, and where a refused advance came back without the item.
pub(crate) async fn load(
    store: &DynamoDbCheckpointStore,
    op: Operation,
    (group, subscription, partition): Key<'_>,
) -> Result<Option<u64>, Error> {
    let output = with_read_names(consistent_get(store, group, subscription, partition))
        .projection_expression(LOAD_PROJECTION)
        .send()
        .await
        .map_err(|e| sdk_error(op, e))?;
    match output.item() {
        // A retired or pending item is not shown.
        Some(item) if has_flag(item, RETIRED) || has_flag(item, PENDING) => Ok(None),
        Some(item) => optional_position_of(item).map_err(unexpected(op)),
        None => Ok(None),
    }
}

/// One page of `list`: a consistent `Query` on the group's partition key from `start`, at most
/// the store's page size; tombstones, retired and pending items left out.
pub(crate) async fn list_page(
    store: &DynamoDbCheckpointStore,
    group: &str,
    start: Option<StartKey>,
) -> Result<Page<Checkpoint>, Error> {
    let op = Operation::List;
    let page = group_page_query(store, group, start)
        .key_condition_expression(LIST_KEY_CONDITION)
        .projection_expression(LIST_PROJECTION)
        .expression_attribute_names("#k", KEY)
        .expression_attribute_names("#pos", POSITION)
        .expression_attribute_names("#ret", RETIRED)
        .expression_attribute_names("#pend", PENDING)
        .send()
        .await
        .map_err(|e| sdk_error(op, e))?;
    let mut items = Vec::new();
    for item in page.items() {
        if let Some(checkpoint) = checkpoint_of(item).map_err(unexpected(op))? {
            items.push(checkpoint);
        }
    }
    Ok(Page {
        items,
        next: next_start(page.last_evaluated_key),
    })
}

/// The plain copies of the key parts and the time of the write, and the flags' names, which
/// `save` and `claim` both set and read.
fn with_key_copies(
    request: UpdateItemFluentBuilder,
    subscription: &str,
    partition: u32,
) -> UpdateItemFluentBuilder {
    request
        .expression_attribute_names("#sub", SUBSCRIPTION)
        .expression_attribute_names("#part", PARTITION)
        .expression_attribute_names("#at", UPDATED_AT)
        .expression_attribute_names("#ret", RETIRED)
        .expression_attribute_names("#pend", PENDING)
        .expression_attribute_values(":sub", AttributeValue::S(subscription.to_owned()))
        .expression_attribute_values(":part", number(u64::from(partition)))
        .expression_attribute_values(":at", now_millis())
}

/// The names a read of a checkpoint's position projects: `#pos` and the flags.
fn with_read_names(request: GetItemFluentBuilder) -> GetItemFluentBuilder {
    request
        .expression_attribute_names("#pos", POSITION)
        .expression_attribute_names("#ret", RETIRED)
        .expression_attribute_names("#pend", PENDING)
}
