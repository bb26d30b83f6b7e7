//! `create_table`: the table with the key schema of [`layout`](crate::layout), and the wait
//! until it is `ACTIVE`. Each request is bounded by the store's timeout.

use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::{BillingMode, TableStatus};
use checkpoint_core::{Error, Operation};

use crate::error::{KeySchemaMismatch, build_error, sdk_error};
use crate::layout::{attribute_definitions, is_key_schema, key_schema};
use crate::{BACKEND, DynamoDbCheckpointStore};

/// How long `create_table` waits for a new table to become `ACTIVE`.
const TABLE_ACTIVE_WAIT: Duration = Duration::from_secs(300);

/// How often `create_table` asks whether the table is `ACTIVE` yet.
const TABLE_POLL_INTERVAL: Duration = Duration::from_millis(500);

/// The operation every request here reports (`create_table` is the backend's migration).
const OP: Operation = Operation::Migrate;

/// Creates the table with on-demand billing unless it exists, then waits until it is `ACTIVE`
/// and checks its key schema.
pub(crate) async fn create_and_wait(store: &DynamoDbCheckpointStore) -> Result<(), Error> {
    store.within(OP, create(store)).await?;
    let started = Instant::now();
    loop {
        if store.within(OP, is_active(store)).await? {
            return Ok(());
        }
        if started.elapsed() >= TABLE_ACTIVE_WAIT {
            return Err(Error::Timeout {
                backend: BACKEND,
                operation: OP,
                after: TABLE_ACTIVE_WAIT,
            });
        }
        tokio::time::sleep(TABLE_POLL_INTERVAL).await;
    }
}

/// A `CreateTable` with the layout's key schema and on-demand billing; a table that exists
/// already (perhaps being created by a concurrent call) is fine: the wait checks it.
async fn create(store: &DynamoDbCheckpointStore) -> Result<(), Error> {
    let created = store
        .client()
        .create_table()
        .table_name(store.table())
        .billing_mode(BillingMode::PayPerRequest)
        .set_attribute_definitions(Some(
            attribute_definitions().map_err(|e| build_error(OP, e))?,
        ))
        .set_key_schema(Some(key_schema().map_err(|e| build_error(OP, e))?))
        .send()
        .await;
    match created {
        Ok(_) => {
            tracing::info!("created table");
            Ok(())
        }
        Err(error)
            if error
                .as_service_error()
                .is_some_and(|e| e.is_resource_in_use_exception()) =>
        {
            Ok(())
        }
        Err(error) => Err(sdk_error(OP, error)),
    }
}

/// A `DescribeTable`: whether the table is `ACTIVE`; once it is, a table with another key
/// schema than the store needs is a non-retryable error.
async fn is_active(store: &DynamoDbCheckpointStore) -> Result<bool, Error> {
    let described = store
        .client()
        .describe_table()
        .table_name(store.table())
        .send()
        .await
        .map_err(|e| sdk_error(OP, e))?;
    let Some(table) = described.table() else {
        return Ok(false);
    };
    if table.table_status() != Some(&TableStatus::Active) {
        return Ok(false);
    }
    if !is_key_schema(table.key_schema()) {
        let mismatch = KeySchemaMismatch {
            table: store.table().to_owned(),
        };
        return Err(Error::backend(BACKEND, OP, false, mismatch));
    }
    Ok(true)
}
