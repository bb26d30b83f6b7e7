//! Shared by the examples: opening a checkpoint store from a URL-like string.
//!
//! | store | meaning |
//! | --- | --- |
//! | `sqlite:<path>` | the embedded SQLite store on a file (created if missing) |
//! | `postgres://…` | PostgreSQL |
//! | `redis://…` | Redis |
//! | `dynamodb+http://host:port/table` | a local DynamoDB-compatible server with test credentials |
//! | `memory` | in process memory (lost when the process exits) |
//!
//! A real DynamoDB deployment builds its `aws_sdk_dynamodb::Client` with `aws-config` and
//! passes it to `DynamoDbCheckpointStore::new`; the `dynamodb+http` form is for emulators.

use std::sync::Arc;

use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use checkpoint_core::{
    Argument, CheckpointStore, Error, InMemoryCheckpointStore, InvalidInput, InvalidReason,
};
use checkpoint_dynamodb::DynamoDbCheckpointStore;
use checkpoint_postgres::PostgresCheckpointStore;
use checkpoint_redis::RedisCheckpointStore;
use checkpoint_sqlite::SqliteCheckpointStore;

/// Opens the store `spec` names (see the crate doc), creating its table where it has one.
pub async fn open_store(spec: &str) -> Result<Arc<dyn CheckpointStore>, Error> {
    if spec == "memory" {
        return Ok(Arc::new(InMemoryCheckpointStore::new()));
    }
    if let Some(path) = spec.strip_prefix("sqlite:") {
        let store = SqliteCheckpointStore::open(path).await?;
        store.migrate().await?;
        return Ok(Arc::new(store));
    }
    if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
        let store = PostgresCheckpointStore::connect(spec).await?;
        store.migrate().await?;
        return Ok(Arc::new(store));
    }
    if spec.starts_with("redis://") || spec.starts_with("rediss://") {
        return Ok(Arc::new(RedisCheckpointStore::connect(spec).await?));
    }
    if let Some(rest) = spec.strip_prefix("dynamodb+http://") {
        let (host, table) = rest.split_once('/').unwrap_or((rest, "checkpoints"));
        let config = aws_sdk_dynamodb::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .endpoint_url(format!("http://{host}"))
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("test", "test", None, None, "examples"))
            .build();
        let store = DynamoDbCheckpointStore::new(aws_sdk_dynamodb::Client::from_conf(config))
            .with_table(table)?;
        store.create_table().await?;
        return Ok(Arc::new(store));
    }
    Err(InvalidInput::new(
        Argument::Setting("store"),
        InvalidReason::Malformed {
            expected: "sqlite:<path>, postgres://…, redis://…, dynamodb+http://host:port/table or memory",
        },
    )
    .into())
}

/// The README's code blocks, compiled as doc tests so they cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;

/// The `checkpoint` command line that lists `subscription` of `group` in the store `spec`
/// names (see the crate doc), without any password; `None` for the in-memory store.
pub fn checkpoint_list_command(spec: &str, group: &str, subscription: &str) -> Option<String> {
    let list = format!("list {group} --subscription {subscription}");
    if let Some(rest) = spec.strip_prefix("dynamodb+http://") {
        let (host, table) = rest.split_once('/').unwrap_or((rest, "checkpoints"));
        return Some(format!(
            "AWS_ENDPOINT_URL_DYNAMODB=http://{host} AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=test \
             AWS_SECRET_ACCESS_KEY=test checkpoint --url dynamodb://{table} {list}"
        ));
    }
    if spec == "memory" {
        return None;
    }
    let url = checkpoint_cli::redact::display_url(spec)?;
    let note = if checkpoint_cli::redact::secrets_of(spec).is_empty() {
        ""
    } else {
        "   # with the password put back in the URL"
    };
    Some(format!("checkpoint --url '{url}' {list}{note}"))
}
