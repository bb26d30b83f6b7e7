//! The store: options, the monotonic operations and the exclusive ones.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType, ReturnValue,
    ReturnValuesOnConditionCheckFailure, ScalarAttributeType, TableStatus,
};
use checkpoint_core::batch::highest_per_key;
use checkpoint_core::validation::{
    validate_advance, validate_batch, validate_claim, validate_group, validate_key, validate_save,
};
use checkpoint_core::{
    Checkpoint, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint, Operation,
};
use futures_util::{StreamExt, TryStreamExt, future, stream};

use crate::error::{BACKEND, KeySchemaMismatch, MalformedItem, build_error, sdk_error};
use crate::schema::{
    FINGERPRINT, GROUP, KEY, PARTITION, POSITION, SUBSCRIPTION, UPDATED_AT, checkpoint_of,
    fingerprint_of, fingerprint_value, now_millis, number, optional_position_of, position_of,
    primary_key,
};

/// How many `UpdateItem` requests [`save_all`](CheckpointStore::save_all) keeps in flight by
/// default.
pub const DEFAULT_MAX_CONCURRENCY: usize = 32;

/// How long [`DynamoDbCheckpointStore::create_table`] waits for a new table to become `ACTIVE`.
const TABLE_ACTIVE_WAIT: Duration = Duration::from_secs(300);

/// How often [`DynamoDbCheckpointStore::create_table`] asks whether the table is `ACTIVE` yet.
const TABLE_POLL_INTERVAL: Duration = Duration::from_millis(500);

// Every expression names attributes through `#placeholders`: `group`, `key` and `position`'s
// neighbours include DynamoDB reserved words, and placeholders keep all expressions uniform.

/// `save`: write the position and the plain copies of the key parts...
const SAVE_UPDATE: &str = "SET #pos = :pos, #sub = :sub, #part = :part, #at = :at";
/// ...only when nothing is stored or the stored position is behind.
const SAVE_CONDITION: &str = "attribute_not_exists(#pos) OR #pos < :pos";

/// `claim`: create at the initial position with the fingerprint on first use; afterwards keep
/// the stored position, and give a fingerprint-less (monotonic) item the claim's fingerprint.
/// A stored fingerprint is never overwritten: the caller compares it with the returned one.
const CLAIM_UPDATE: &str = "SET #pos = if_not_exists(#pos, :initial), #fp = if_not_exists(#fp, :fp), \
     #sub = :sub, #part = :part, #at = if_not_exists(#at, :at)";

/// `advance`: move the position to `:to`...
pub(crate) const ADVANCE_UPDATE: &str = "SET #pos = :to, #at = :at";
/// ...only when it is still `:from` (false when the item or its position is absent).
pub(crate) const ADVANCE_CONDITION: &str = "#pos = :from";

/// A [`CheckpointStore`] and [`ExclusiveCheckpointStore`] on one DynamoDB table.
///
/// Every operation is a single request with a condition evaluated by DynamoDB, so each is one
/// atomic step on the server; see the [crate documentation](crate) for the table layout and the
/// requests each operation sends.
///
/// Cloning is cheap: the [`Client`] is shared.
#[derive(Clone)]
pub struct DynamoDbCheckpointStore {
    client: Client,
    table: String,
    max_concurrency: usize,
    timeout: Option<Duration>,
    query_page_size: Option<i32>,
}

impl fmt::Debug for DynamoDbCheckpointStore {
    // The client is left out: its configuration is the user's business and holds the credential
    // provider.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DynamoDbCheckpointStore")
            .field("table", &self.table)
            .field("max_concurrency", &self.max_concurrency)
            .field("timeout", &self.timeout)
            .field("query_page_size", &self.query_page_size)
            .finish_non_exhaustive()
    }
}

impl DynamoDbCheckpointStore {
    /// A store on `table`, through `client`.
    ///
    /// The client's configuration (region, credentials, endpoint, retry and timeout settings)
    /// is used as it is: throttling and transient errors are retried by the SDK as that
    /// configuration says. The table must exist with the layout in the
    /// [crate documentation](crate); [`create_table`](Self::create_table) creates it.
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
            max_concurrency: DEFAULT_MAX_CONCURRENCY,
            timeout: None,
            query_page_size: None,
        }
    }

    /// How many `UpdateItem` requests [`save_all`](CheckpointStore::save_all) keeps in flight at
    /// once ([`DEFAULT_MAX_CONCURRENCY`] unless set; 0 counts as 1).
    pub fn with_max_concurrency(mut self, max_concurrency: usize) -> Self {
        self.max_concurrency = max_concurrency.max(1);
        self
    }

    /// Fails any operation that takes longer than `timeout` with [`Error::Timeout`].
    ///
    /// It bounds the whole call, including the SDK's own retries and, for
    /// [`save_all`](CheckpointStore::save_all), every request of the batch. An operation that
    /// timed out may or may not have taken effect; every save is idempotent, so retrying it is
    /// safe. For a bound per request, set the timeouts of the client's configuration instead.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Asks for at most `items` items per `Query` page in [`list`](CheckpointStore::list)
    /// (DynamoDB's `Limit`; without it a page holds up to 1 MB). `list` follows every page
    /// either way, so this only trades requests for response size. Values below 1 count as 1.
    pub fn with_query_page_size(mut self, items: u32) -> Self {
        self.query_page_size = Some(i32::try_from(items.max(1)).unwrap_or(i32::MAX));
        self
    }

    /// The table this store uses.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The client this store uses.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Creates the table with on-demand billing if it does not exist, then waits until it is
    /// `ACTIVE` (up to five minutes).
    ///
    /// Meant for tests and quick starts; teams that provision tables themselves use the
    /// definition in the [crate documentation](crate). Calling it for an existing table is fine:
    /// it then only checks that the table's key schema is the one this store needs, and fails
    /// with a non-retryable error when it is not.
    #[tracing::instrument(skip(self), fields(table = %self.table))]
    pub async fn create_table(&self) -> Result<(), Error> {
        let op = Operation::Migrate;
        let definition = |name: &str| {
            AttributeDefinition::builder()
                .attribute_name(name)
                .attribute_type(ScalarAttributeType::S)
                .build()
                .map_err(|e| build_error(op, e))
        };
        let key = |name: &str, key_type: KeyType| {
            KeySchemaElement::builder()
                .attribute_name(name)
                .key_type(key_type)
                .build()
                .map_err(|e| build_error(op, e))
        };
        let created = self
            .client
            .create_table()
            .table_name(&self.table)
            .billing_mode(BillingMode::PayPerRequest)
            .attribute_definitions(definition(GROUP)?)
            .attribute_definitions(definition(KEY)?)
            .key_schema(key(GROUP, KeyType::Hash)?)
            .key_schema(key(KEY, KeyType::Range)?)
            .send()
            .await;
        match created {
            Ok(_) => tracing::info!("created table"),
            // It exists already (perhaps being created by a concurrent call): wait for it too.
            Err(error)
                if error
                    .as_service_error()
                    .is_some_and(|e| e.is_resource_in_use_exception()) => {}
            Err(error) => return Err(sdk_error(op, error)),
        }

        let started = Instant::now();
        loop {
            let described = self
                .client
                .describe_table()
                .table_name(&self.table)
                .send()
                .await
                .map_err(|e| sdk_error(op, e))?;
            if let Some(table) = described.table()
                && table.table_status() == Some(&TableStatus::Active)
            {
                let schema: Vec<(&str, &KeyType)> = table
                    .key_schema()
                    .iter()
                    .map(|element| (element.attribute_name(), element.key_type()))
                    .collect();
                if schema != [(GROUP, &KeyType::Hash), (KEY, &KeyType::Range)] {
                    return Err(Error::backend(
                        BACKEND,
                        op,
                        false,
                        KeySchemaMismatch {
                            table: self.table.clone(),
                        },
                    ));
                }
                return Ok(());
            }
            if started.elapsed() >= TABLE_ACTIVE_WAIT {
                return Err(Error::Timeout {
                    backend: BACKEND,
                    operation: op,
                    after: TABLE_ACTIVE_WAIT,
                });
            }
            tokio::time::sleep(TABLE_POLL_INTERVAL).await;
        }
    }

    /// Runs `operation` under the configured timeout, if any.
    async fn timed<T>(
        &self,
        operation: Operation,
        work: impl Future<Output = Result<T, Error>>,
    ) -> Result<T, Error> {
        match self.timeout {
            None => work.await,
            Some(after) => tokio::time::timeout(after, work)
                .await
                .map_err(|_elapsed| Error::Timeout {
                    backend: BACKEND,
                    operation,
                    after,
                })?,
        }
    }

    /// One conditional `UpdateItem`: the whole of `save`, and one entry of `save_all`.
    async fn save_one(
        &self,
        operation: Operation,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<(), Error> {
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(primary_key(group, subscription, partition)))
            .update_expression(SAVE_UPDATE)
            .condition_expression(SAVE_CONDITION)
            .expression_attribute_names("#pos", POSITION)
            .expression_attribute_names("#sub", SUBSCRIPTION)
            .expression_attribute_names("#part", PARTITION)
            .expression_attribute_names("#at", UPDATED_AT)
            .expression_attribute_values(":pos", number(position))
            .expression_attribute_values(":sub", AttributeValue::S(subscription.to_owned()))
            .expression_attribute_values(":part", number(u64::from(partition)))
            .expression_attribute_values(":at", now_millis())
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            // The stored position is ahead or equal: the save changes nothing, as the contract
            // says, and that is success.
            Err(error)
                if error
                    .as_service_error()
                    .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
            {
                Ok(())
            }
            Err(error) => Err(sdk_error(operation, error)),
        }
    }
}

/// The expression attribute names and values of an advance, shared by
/// [`ExclusiveCheckpointStore::advance`] and the transactional advance.
pub(crate) fn advance_expression(
    from: u64,
    to: u64,
) -> (HashMap<String, String>, HashMap<String, AttributeValue>) {
    let names = HashMap::from([
        ("#pos".to_owned(), POSITION.to_owned()),
        ("#at".to_owned(), UPDATED_AT.to_owned()),
    ]);
    let values = HashMap::from([
        (":from".to_owned(), number(from)),
        (":to".to_owned(), number(to)),
        (":at".to_owned(), now_millis()),
    ]);
    (names, values)
}

/// The [`Error::Moved`] for a failed advance condition, from the item as it was when the
/// condition failed (`None`: there was no item).
pub(crate) fn moved(
    from: u64,
    old_item: Option<&HashMap<String, AttributeValue>>,
) -> Result<Error, Error> {
    let current = match old_item {
        Some(item) => optional_position_of(item, Operation::Advance)?,
        None => None,
    };
    Ok(Error::Moved {
        expected: from,
        current,
    })
}

#[async_trait]
impl CheckpointStore for DynamoDbCheckpointStore {
    /// One `Query` on the group's partition key with `ConsistentRead`, followed through every
    /// page.
    #[tracing::instrument(skip(self), fields(table = %self.table))]
    async fn list(&self, group: &str) -> Result<Vec<Checkpoint>, Error> {
        validate_group(group)?;
        self.timed(Operation::List, async {
            let mut checkpoints = Vec::new();
            let mut start_key = None;
            let mut pages = 0_u32;
            loop {
                let page = self
                    .client
                    .query()
                    .table_name(&self.table)
                    .key_condition_expression("#g = :g")
                    .projection_expression("#k, #pos")
                    .expression_attribute_names("#g", GROUP)
                    .expression_attribute_names("#k", KEY)
                    .expression_attribute_names("#pos", POSITION)
                    .expression_attribute_values(":g", AttributeValue::S(group.to_owned()))
                    .consistent_read(true)
                    .set_limit(self.query_page_size)
                    .set_exclusive_start_key(start_key.take())
                    .send()
                    .await
                    .map_err(|e| sdk_error(Operation::List, e))?;
                pages += 1;
                for item in page.items() {
                    checkpoints.push(checkpoint_of(item)?);
                }
                match page.last_evaluated_key {
                    Some(key) if !key.is_empty() => start_key = Some(key),
                    _ => break,
                }
            }
            tracing::debug!(pages, checkpoints = checkpoints.len(), "listed");
            Ok(checkpoints)
        })
        .await
    }

    /// One `GetItem` with `ConsistentRead`.
    #[tracing::instrument(skip(self), fields(table = %self.table))]
    async fn load(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> Result<Option<u64>, Error> {
        validate_key(group, subscription)?;
        self.timed(Operation::Load, async {
            let output = self
                .client
                .get_item()
                .table_name(&self.table)
                .set_key(Some(primary_key(group, subscription, partition)))
                .projection_expression("#pos")
                .expression_attribute_names("#pos", POSITION)
                .consistent_read(true)
                .send()
                .await
                .map_err(|e| sdk_error(Operation::Load, e))?;
            match output.item() {
                Some(item) => optional_position_of(item, Operation::Load),
                None => Ok(None),
            }
        })
        .await
    }

    /// One `UpdateItem` with the condition `attribute_not_exists(position) OR position < :p`.
    #[tracing::instrument(skip(self), fields(table = %self.table))]
    async fn save(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<(), Error> {
        validate_save(group, subscription, position)?;
        self.timed(
            Operation::Save,
            self.save_one(Operation::Save, group, subscription, partition, position),
        )
        .await
    }

    /// One conditional `UpdateItem` per distinct key, at most
    /// [`with_max_concurrency`](DynamoDbCheckpointStore::with_max_concurrency) in flight.
    ///
    /// That is the fewest requests DynamoDB allows while every entry stays independent:
    /// `BatchWriteItem` takes no conditions (it would move checkpoints backwards), and
    /// `TransactWriteItems` is all-or-nothing (one entry that is not ahead would cancel the
    /// others, and it takes at most 100 items). Repeated keys are collapsed to their highest
    /// position first. The first failing request fails the call; requests still in flight are
    /// dropped, so some entries may be saved and others not, as the contract allows.
    #[tracing::instrument(skip(self, checkpoints), fields(table = %self.table, batch_size = checkpoints.len()))]
    async fn save_all(&self, group: &str, checkpoints: &[Checkpoint]) -> Result<(), Error> {
        validate_batch(group, checkpoints)?;
        if checkpoints.is_empty() {
            return Ok(());
        }
        let entries = highest_per_key(checkpoints);
        self.timed(Operation::SaveAll, async {
            // Each future owns its entry: borrowing from `entries` makes the future's type
            // higher-ranked over the borrow, which `Send` inference cannot prove.
            stream::iter(entries)
                .map(|entry| async move {
                    self.save_one(
                        Operation::SaveAll,
                        group,
                        &entry.subscription,
                        entry.partition,
                        entry.position,
                    )
                    .await
                })
                .buffer_unordered(self.max_concurrency)
                .try_for_each(|()| future::ready(Ok(())))
                .await
        })
        .await
    }
}

#[async_trait]
impl ExclusiveCheckpointStore for DynamoDbCheckpointStore {
    /// One `UpdateItem` with `if_not_exists` for the position and the fingerprint, returning
    /// the item as it is after the update; the stored fingerprint is compared here.
    #[tracing::instrument(skip(self), fields(table = %self.table, fingerprint = %fingerprint))]
    async fn claim(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        fingerprint: Fingerprint,
        initial_position: u64,
    ) -> Result<u64, Error> {
        validate_claim(group, subscription, initial_position)?;
        self.timed(Operation::Claim, async {
            let output = self
                .client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(primary_key(group, subscription, partition)))
                .update_expression(CLAIM_UPDATE)
                .expression_attribute_names("#pos", POSITION)
                .expression_attribute_names("#fp", FINGERPRINT)
                .expression_attribute_names("#sub", SUBSCRIPTION)
                .expression_attribute_names("#part", PARTITION)
                .expression_attribute_names("#at", UPDATED_AT)
                .expression_attribute_values(":initial", number(initial_position))
                .expression_attribute_values(":fp", fingerprint_value(fingerprint))
                .expression_attribute_values(":sub", AttributeValue::S(subscription.to_owned()))
                .expression_attribute_values(":part", number(u64::from(partition)))
                .expression_attribute_values(":at", now_millis())
                .return_values(ReturnValue::AllNew)
                .send()
                .await
                .map_err(|e| sdk_error(Operation::Claim, e))?;
            let item = output.attributes().ok_or_else(|| {
                Error::backend(
                    BACKEND,
                    Operation::Claim,
                    false,
                    MalformedItem("the claim returned no attributes"),
                )
            })?;
            let position = position_of(item, Operation::Claim)?;
            match fingerprint_of(item, Operation::Claim)? {
                Some(stored) if stored == fingerprint => Ok(position),
                Some(stored) => Err(Error::QueryChanged {
                    stored,
                    requested: fingerprint,
                }),
                // `if_not_exists` has just set it, so only a broken server gets here.
                None => Err(Error::backend(
                    BACKEND,
                    Operation::Claim,
                    false,
                    MalformedItem("the claimed item has no fingerprint"),
                )),
            }
        })
        .await
    }

    /// One `UpdateItem` with the condition `position = :from`; when it fails, the item as it
    /// was comes back in the same response (`ReturnValuesOnConditionCheckFailure`) and gives
    /// [`Error::Moved`] its current position.
    #[tracing::instrument(skip(self), fields(table = %self.table))]
    async fn advance(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
    ) -> Result<(), Error> {
        validate_advance(group, subscription, from, to)?;
        self.timed(Operation::Advance, async {
            let (names, values) = advance_expression(from, to);
            let result = self
                .client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(primary_key(group, subscription, partition)))
                .update_expression(ADVANCE_UPDATE)
                .condition_expression(ADVANCE_CONDITION)
                .set_expression_attribute_names(Some(names))
                .set_expression_attribute_values(Some(values))
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                )
                .send()
                .await;
            match result {
                Ok(_) => Ok(()),
                Err(error) => match error.as_service_error() {
                    Some(aws_sdk_dynamodb::operation::update_item::UpdateItemError::ConditionalCheckFailedException(failed)) => {
                        Err(moved(from, failed.item())?)
                    }
                    _ => Err(sdk_error(Operation::Advance, error)),
                },
            }
        })
        .await
    }
}
