//! The exclusive mode's compare-and-set, and the consistent reads that stand in for an item a
//! refused request's reply left out (some servers never send it back).

use std::collections::HashMap;

use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::AttributeValue;
use checkpoint_core::{Error, Operation};

use crate::error::{moved, sdk_error, unexpected};
use crate::layout::{PENDING, RETIRED, has_flag, optional_position_of};
use crate::{DynamoDbCheckpointStore, requests};

/// How many times [`advance`](checkpoint_core::ExclusiveCheckpointStore::advance) sends its `UpdateItem` at most:
/// a second attempt follows only a refusal without the old item after which a consistent read
/// finds the checkpoint at `from` (see `compare_and_set`); two always decide on a table only
/// this store writes, the third is a margin.
pub(crate) const ADVANCE_ATTEMPTS: u32 = 3;

impl DynamoDbCheckpointStore {
    /// The stored position, on a consistent read (`GetItem` with `ConsistentRead`): `load`, and
    /// where a refused advance came back without the item.
    pub(crate) async fn read_position(
        &self,
        operation: Operation,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> Result<Option<u64>, Error> {
        let output = requests::load(self, group, subscription, partition)
            .send()
            .await
            .map_err(|e| sdk_error(operation, e))?;
        match output.item() {
            // A retired or pending item is not shown.
            Some(item) if has_flag(item, RETIRED) || has_flag(item, PENDING) => Ok(None),
            Some(item) => optional_position_of(item).map_err(unexpected(operation)),
            None => Ok(None),
        }
    }

    /// The stored position and fingerprint, on a consistent read: where a claim's reply came back
    /// without the item. `None` when there is no item.
    pub(crate) async fn read_claimed(
        &self,
        operation: Operation,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> Result<Option<HashMap<String, AttributeValue>>, Error> {
        let output = requests::read_claimed(self, group, subscription, partition)
            .send()
            .await
            .map_err(|e| sdk_error(operation, e))?;
        Ok(output.item.filter(|item| !item.is_empty()))
    }

    /// The advance's requests: the conditional `UpdateItem`, and when its condition fails
    /// without the old item in the reply, a consistent read of where the checkpoint is.
    ///
    /// A reply may lack the old item for two reasons that look alike: there is no item (the
    /// checkpoint was never claimed), or the server does not send it (emulators that ignore
    /// `ReturnValuesOnConditionCheckFailure`, such as dynalite). Reporting `current: None` in the
    /// second case would tell the caller an existing checkpoint is absent, so the position is
    /// read instead. When the read finds the checkpoint at `from` (it was absent or behind when
    /// the condition failed, and got there since), the advance is tried again: a refusal then
    /// would name the position it expected. Positions only move forward and this store deletes
    /// nothing, so a second attempt either succeeds or is refused at a position past `from`;
    /// [`ADVANCE_ATTEMPTS`] bounds the loop should something else write the table.
    pub(crate) async fn compare_and_set(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
    ) -> Result<(), Error> {
        let op = Operation::Advance;
        let mut attempt = 1;
        loop {
            let request = requests::advance(self, group, subscription, partition, from, to);
            let error = match request.send().await {
                Ok(_) => return Ok(()),
                Err(error) => error,
            };
            let Some(UpdateItemError::ConditionalCheckFailedException(failed)) =
                error.as_service_error()
            else {
                return Err(sdk_error(op, error));
            };
            if let Some(old) = failed.item().filter(|item| !item.is_empty()) {
                return Err(moved(from, Some(old)));
            }
            let current = self
                .read_position(op, group, subscription, partition)
                .await?;
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
}
