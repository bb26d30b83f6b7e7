//! `advance`, the exclusive mode's compare-and-set: its conditional `UpdateItem` (also as an
//! item of the caller's `TransactWriteItems`), and the consistent re-read that stands in for
//! the old item a refusal's reply left out (some servers never send it back).

use std::collections::HashMap;

use aws_sdk_dynamodb::error::BuildError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure, Update};
use checkpoint_core::{Error, Operation};

use super::{Key, checkpoint, sent, update_item};
use crate::DynamoDbCheckpointStore;
use crate::error::sdk_error;
use crate::layout::{
    PENDING, POSITION, RETIRED, UPDATED_AT, moved, now_millis, number, primary_key,
};

/// `advance`: move the position to `:to`...
const ADVANCE_UPDATE: &str = "SET #pos = :to, #at = :at";
/// ...only when it is still `:from` (false when the item or its position is absent) and the
/// item is neither retired nor pending.
const ADVANCE_CONDITION: &str =
    "#pos = :from AND attribute_not_exists(#ret) AND attribute_not_exists(#pend)";

/// How many times `advance` sends its `UpdateItem` at most: a second attempt follows only a
/// refusal without the old item after which a consistent read finds the checkpoint at `from`;
/// two always decide on a table only this store writes, the third is a margin.
const ADVANCE_ATTEMPTS: u32 = 3;

/// The advance's requests: the conditional `UpdateItem`, and when its condition fails without
/// the old item in the reply, a consistent read of where the checkpoint is.
///
/// A reply may lack the old item for two reasons that look alike: there is no item (the
/// checkpoint was never claimed), or the server does not send it (emulators that ignore
/// `ReturnValuesOnConditionCheckFailure`, such as dynalite). Reporting `current: None` in the
/// second case would tell the caller an existing checkpoint is absent, so the position is read
/// instead. When the read finds the checkpoint at `from` (it was absent or behind when the
/// condition failed, and got there since), the advance is tried again: a refusal then would
/// name the position it expected. Positions only move forward and this store deletes nothing
/// on this path, so a second attempt either succeeds or is refused at a position past `from`;
/// [`ADVANCE_ATTEMPTS`] bounds the loop should something else write the table.
pub(crate) async fn advance(
    store: &DynamoDbCheckpointStore,
    key: Key<'_>,
    from: u64,
    to: u64,
) -> Result<(), Error> {
    let op = Operation::Advance;
    let (group, subscription, partition) = key;
    let mut attempt = 1;
    loop {
        let (names, values) = advance_expression(from, to);
        let request = update_item(store, group, subscription, partition)
            .update_expression(ADVANCE_UPDATE)
            .condition_expression(ADVANCE_CONDITION)
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(Some(values))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        let error = match request.send().await {
            Ok(_) => return Ok(()),
            Err(error) => error,
        };
        let Some(UpdateItemError::ConditionalCheckFailedException(failed)) =
            error.as_service_error()
        else {
            return Err(sdk_error(op, error));
        };
        if let Some(old) = sent(failed.item()) {
            return Err(moved(from, Some(old)));
        }
        let current = checkpoint::load(store, op, key).await?;
        tracing::debug!(?current, attempt, "refused without the old item; read it");
        if current != Some(from) || attempt >= ADVANCE_ATTEMPTS {
            return Err(Error::Moved {
                expected: from,
                current,
            });
        }
        attempt += 1;
    }
}

/// The same advance as [`advance`]'s request, as the `Update` of an item of the caller's
/// `TransactWriteItems`.
pub(crate) fn advance_update(
    store: &DynamoDbCheckpointStore,
    (group, subscription, partition): Key<'_>,
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
