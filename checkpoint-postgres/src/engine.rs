//! [`PostgresEngine`]: PostgreSQL as [`SqlStore`](checkpoint_sql::SqlStore) needs it: its
//! table names (schema-qualified or not), statements and errors, a pool that pings only idle
//! connections, and an idempotent request run once more after a lost connection.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use checkpoint_core::stored::SqlColumns;
use checkpoint_core::{Error, Operation};
use checkpoint_sql::parked::ParkedStatements;
use checkpoint_sql::{Again, Engine};
use sqlx::Connection;
use sqlx::pool::PoolConnectionMetadata;
use sqlx::postgres::{
    PgConnectOptions, PgConnection, PgPool, PgPoolOptions, PgQueryResult, Postgres,
};

use crate::BACKEND;
use crate::PostgresEngine;
use crate::error::{backend, connection_lost};
use crate::layout::{COLUMNS, TableName};
use crate::requests::Requests;

/// A pooled connection idle for longer than this is pinged before use by a pool that
/// [`PostgresEngine::connect`] creates.
const IDLE_CHECK_AFTER: Duration = Duration::from_secs(5);

impl Engine for PostgresEngine {
    type Database = Postgres;
    type Table = TableName;
    type Requests = Requests;
    type Parked = ParkedStatements;
    type Admin = Requests;

    const BACKEND: &'static str = BACKEND;
    const COLUMNS: SqlColumns = COLUMNS;

    /// A plain `BEGIN`: READ COMMITTED, as the handler's own statements expect.
    const BEGIN: &'static str = "BEGIN";

    fn default_table() -> TableName {
        TableName::default_table()
    }

    fn parse_table(name: &str) -> Result<TableName, Error> {
        TableName::parse(name)
    }

    fn error(operation: Operation, error: sqlx::Error) -> Error {
        backend(operation, error)
    }

    fn rows_affected(result: &PgQueryResult) -> u64 {
        result.rows_affected()
    }

    /// The pool does not ping a connection before every use (sqlx's `test_before_acquire`),
    /// which would double the round trips of every call; it pings only a connection that has
    /// been idle for more than 5 seconds, the ones most likely to have been cut by a server
    /// restart or a firewall. sqlx already checks each connection when it returns to the pool.
    async fn connect(options: PgConnectOptions) -> Result<PgPool, Error> {
        PgPoolOptions::new()
            .test_before_acquire(false)
            .before_acquire(ping_if_idle)
            .connect_with(options)
            .await
            .map_err(|error| backend(Operation::Connect, error))
    }

    /// When a call meets a connection that had died (the server restarted, or cut it while it
    /// sat idle), it runs once more on a connection checked to be alive, so the first call
    /// after a restart does not fail for connections that were already gone; the store's
    /// timeout bounds both runs together. Only the idempotent requests: not `advance` (if the
    /// connection died after the server had committed it, a second run would report `Moved`
    /// for the caller's own advance), `start_at` (`Exists` for its own), `release`, `leave`
    /// and `unpark` (nothing to report the second time): each fails with a retryable error,
    /// and the pool replaces that connection.
    fn again(operation: Operation, error: &Error, failures: u32) -> Option<Again> {
        let once_more = !matches!(
            operation,
            Operation::Advance
                | Operation::StartAt
                | Operation::Release
                | Operation::Leave
                | Operation::Unpark
        );
        (once_more && failures == 0 && connection_lost(error)).then_some(Again::OnLiveConnection)
    }
}

/// `before_acquire` hook of the pools [`PostgresEngine::connect`] creates: pings only a
/// connection that has been idle for a while (see there).
fn ping_if_idle<'c>(
    connection: &'c mut PgConnection,
    metadata: PoolConnectionMetadata,
) -> Pin<Box<dyn Future<Output = Result<bool, sqlx::Error>> + Send + 'c>> {
    Box::pin(async move {
        if metadata.idle_for >= IDLE_CHECK_AFTER {
            connection.ping().await?;
        }
        Ok(true)
    })
}
