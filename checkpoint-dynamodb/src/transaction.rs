//! The `*_in` family on DynamoDB: advancing an exclusive checkpoint in the caller's own
//! `TransactWriteItems`.
//!
//! DynamoDB has no transaction a store could join; a transaction is one request that carries
//! every write. So "in" means here: the store builds the checkpoint's part of that request, and
//! the caller sends it together with its own writes.

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::TransactWriteItem;
use checkpoint_core::validation::validate_advance;
use checkpoint_core::{Error, Operation};

use crate::error::build_error;
use crate::layout::moved;
use crate::requests::compare_and_set::advance_update;
use crate::{BACKEND, DynamoDbCheckpointStore};

/// The cancellation-reason code of an item whose condition failed.
const CONDITIONAL_CHECK_FAILED: &str = "ConditionalCheckFailed";

impl DynamoDbCheckpointStore {
    /// The advance from `from` to `to` as one item of the caller's own `TransactWriteItems`, so
    /// the read model and the checkpoint commit together or not at all.
    ///
    /// "In" the caller's transaction means here: nothing is sent. The item is an `Update` with
    /// the same condition as [`advance`](checkpoint_core::ExclusiveCheckpointStore::advance)
    /// (`position = :from`) that asks for the old item when that condition fails; the caller
    /// puts it into its `TransactWriteItems` at some index and sends it. If the transaction is
    /// cancelled, pass the error and that index to
    /// [`moved_in_transaction`](Self::moved_in_transaction) to learn whether it was this
    /// checkpoint that had moved. The store's timeout does not apply: the caller sends the
    /// request.
    ///
    /// ```no_run
    /// # async fn example(store: checkpoint_dynamodb::DynamoDbCheckpointStore,
    /// #     read_model_put: aws_sdk_dynamodb::types::TransactWriteItem)
    /// #     -> Result<(), Box<dyn std::error::Error>> {
    /// use checkpoint_dynamodb::DynamoDbCheckpointStore;
    ///
    /// let advance = store.advance_in("billing", "invoices", 0, 100, 150)?;
    /// let result = store
    ///     .client()
    ///     .transact_write_items()
    ///     .transact_items(read_model_put) // index 0: the projection's own write
    ///     .transact_items(advance) // index 1: the checkpoint
    ///     .send()
    ///     .await;
    /// if let Err(error) = result {
    ///     if let Some(moved) = DynamoDbCheckpointStore::moved_in_transaction(&error, 1, 100) {
    ///         // Another process advanced this checkpoint: stop projecting.
    ///         return Err(moved.into());
    ///     }
    ///     return Err(error.into());
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] as for `advance`, before anything is built.
    #[tracing::instrument(
        name = "checkpoint.advance_in",
        level = "debug",
        skip_all,
        fields(
            backend = BACKEND, table = %self.table(), group = group, subscription = subscription,
            partition = partition,
        )
    )]
    pub fn advance_in(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
    ) -> Result<TransactWriteItem, Error> {
        validate_advance(group, subscription, from, to)?;
        let update = advance_update(self, (group, subscription, partition), from, to)
            .map_err(|e| build_error(Operation::Advance, e))?;
        Ok(TransactWriteItem::builder().update(update).build())
    }

    /// Whether a cancelled transaction was cancelled because the checkpoint advanced by the item
    /// at `index` (from [`advance_in`](Self::advance_in)) was no longer at `from`.
    ///
    /// Returns [`Error::Moved`] with the checkpoint's position at the time of the transaction
    /// (`None` when it did not exist), read from the cancellation reason at `index`, with no
    /// further request. Returns `None` for any other error, including a transaction cancelled
    /// for another item's sake or for a conflict with a concurrent transaction (retry those).
    /// In the rare case where the reason's old item cannot be read as a checkpoint, returns a
    /// non-retryable backend error whose source is a
    /// [`checkpoint_core::UnexpectedValue`] instead.
    ///
    /// The reason carries the old item because the update asks for it
    /// (`ReturnValuesOnConditionCheckFailure = ALL_OLD`), which DynamoDB and moto honour. Unlike
    /// [`advance`](checkpoint_core::ExclusiveCheckpointStore::advance), this function sends
    /// nothing, so it cannot check a reason without an item: on a server that leaves the item
    /// out, `current: None` would only mean "not sent", and
    /// [`load`](checkpoint_core::CheckpointStore::load) tells where the checkpoint is.
    pub fn moved_in_transaction<R>(
        error: &SdkError<TransactWriteItemsError, R>,
        index: usize,
        from: u64,
    ) -> Option<Error> {
        let TransactWriteItemsError::TransactionCanceledException(cancelled) =
            error.as_service_error()?
        else {
            return None;
        };
        let reason = cancelled.cancellation_reasons().get(index)?;
        if reason.code() != Some(CONDITIONAL_CHECK_FAILED) {
            return None;
        }
        Some(moved(from, reason.item()))
    }
}
