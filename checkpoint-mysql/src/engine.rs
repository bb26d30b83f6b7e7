//! [`MysqlEngine`]: MySQL and MariaDB as [`SqlStore`](checkpoint_sql::SqlStore) needs them:
//! their table names, statements and errors, a pool at `REPEATABLE READ`, and a deadlock's
//! victim run again.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use checkpoint_core::backoff::{Backoff, Jitter};
use checkpoint_core::stored::SqlColumns;
use checkpoint_core::{Error, Operation};
use checkpoint_sql::admin::AdminStatements;
use checkpoint_sql::parked::ParkedStatements;
use checkpoint_sql::{Again, Engine};
use sqlx::mysql::{
    MySql, MySqlConnectOptions, MySqlConnection, MySqlPool, MySqlPoolOptions, MySqlQueryResult,
};
use sqlx::pool::PoolConnectionMetadata;
use sqlx::{Connection, Executor};

use crate::MysqlEngine;
use crate::error::{backend, is_deadlock};
use crate::layout::{COLUMNS, TableName};
use crate::requests::Requests;
use crate::{BACKEND, DEFAULT_MAX_CONNECTIONS};

/// A pooled connection idle for longer than this is pinged before use.
const IDLE_CHECK_AFTER: Duration = Duration::from_secs(5);

impl Engine for MysqlEngine {
    type Database = MySql;
    type Table = TableName;
    type Requests = Requests;
    type Parked = ParkedStatements;
    type Admin = AdminStatements;

    const BACKEND: &'static str = BACKEND;
    const COLUMNS: SqlColumns = COLUMNS;

    /// At the session's isolation level (`REPEATABLE READ` on the store's own connections), as
    /// the handler's own statements expect.
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

    fn rows_affected(result: &MySqlQueryResult) -> u64 {
        result.rows_affected()
    }

    /// A pool of [`DEFAULT_MAX_CONNECTIONS`]: every connection sets its session to
    /// `REPEATABLE READ`, whatever the server's default, and counts matched rows
    /// (`found_rows`); a connection idle for more than 5 seconds, the ones most likely to have
    /// been cut by a server restart or a firewall, is pinged before use, rather than every
    /// connection (one more round trip per call).
    async fn connect(options: MySqlConnectOptions) -> Result<MySqlPool, Error> {
        MySqlPoolOptions::new()
            .max_connections(DEFAULT_MAX_CONNECTIONS)
            .test_before_acquire(false)
            .before_acquire(ping_if_idle)
            .after_connect(|connection, _| Box::pin(repeatable_read(connection)))
            .connect_with(options.found_rows(true))
            .await
            .map_err(|error| backend(Operation::Connect, error))
    }

    /// A request InnoDB chose as a deadlock's victim runs again, after a short random pause:
    /// InnoDB rolled it back whole, so running it again is safe, and InnoDB's own documentation
    /// asks for it. At most five runs in all (`DEADLOCK_ATTEMPTS`).
    fn again(_operation: Operation, error: &Error, failures: u32) -> Option<Again> {
        (is_deadlock(error) && failures + 1 < DEADLOCK_ATTEMPTS)
            .then(|| Again::AfterPause(deadlock_pause(failures)))
    }
}

/// How many times a request InnoDB chose as a deadlock's victim runs, in all.
const DEADLOCK_ATTEMPTS: u32 = 5;

/// The pause before running a deadlock's victim again: random, under 2 ms doubling to 50 ms,
/// so that the transactions that met do not meet again.
fn deadlock_pause(failures: u32) -> Duration {
    Backoff::new(Duration::from_millis(2), Duration::from_millis(50))
        .with_jitter(Jitter::Full)
        .delay(failures)
}

/// `after_connect` hook of the pools [`MysqlEngine::connect`] creates: every session at
/// `REPEATABLE READ`, the level the tombstone checks need, whatever the server's default.
async fn repeatable_read(connection: &mut MySqlConnection) -> Result<(), sqlx::Error> {
    connection
        .execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        .await
        .map(drop)
}

/// `before_acquire` hook of the pools [`MysqlEngine::connect`] creates: pings only a
/// connection that has been idle for a while (see there).
fn ping_if_idle<'c>(
    connection: &'c mut MySqlConnection,
    metadata: PoolConnectionMetadata,
) -> Pin<Box<dyn Future<Output = Result<bool, sqlx::Error>> + Send + 'c>> {
    Box::pin(async move {
        if metadata.idle_for >= IDLE_CHECK_AFTER {
            connection.ping().await?;
        }
        Ok(true)
    })
}
