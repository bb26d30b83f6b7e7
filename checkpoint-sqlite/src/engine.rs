//! [`SqliteEngine`]: SQLite as [`SqlStore`](checkpoint_sql::SqlStore) needs it: its table
//! names, its statements, its errors, and a pool on a local file.

use std::path::Path;
use std::time::{Duration, Instant};

use checkpoint_core::backoff::{Backoff, Jitter};
use checkpoint_core::stored::SqlColumns;
use checkpoint_core::{Error, Operation};
use checkpoint_sql::admin::AdminStatements;
use checkpoint_sql::parked::ParkedStatements;
use checkpoint_sql::{Engine, FileEngine};
use sqlx::sqlite::{
    Sqlite, SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions,
    SqliteQueryResult, SqliteSynchronous,
};

use crate::SqliteEngine;
use crate::error::{backend, is_busy};
use crate::layout::{COLUMNS, TableName};
use crate::requests::Requests;
use crate::{BACKEND, DEFAULT_BUSY_TIMEOUT, DEFAULT_MAX_CONNECTIONS};

impl Engine for SqliteEngine {
    type Database = Sqlite;
    type Table = TableName;
    type Requests = Requests;
    type Parked = ParkedStatements;
    type Admin = AdminStatements;

    const BACKEND: &'static str = BACKEND;
    const COLUMNS: SqlColumns = COLUMNS;

    /// `BEGIN IMMEDIATE`: the write lock from the start, so no later statement of a
    /// transactional handler fails on a lock upgrade.
    const BEGIN: &'static str = "BEGIN IMMEDIATE";

    fn default_table() -> TableName {
        TableName::default_table()
    }

    fn parse_table(name: &str) -> Result<TableName, Error> {
        TableName::parse(name)
    }

    fn error(operation: Operation, error: sqlx::Error) -> Error {
        backend(operation, error)
    }

    fn rows_affected(result: &SqliteQueryResult) -> u64 {
        result.rows_affected()
    }

    /// A pool of [`DEFAULT_MAX_CONNECTIONS`]. Switching a new database file into WAL mode needs
    /// a lock that SQLite's busy timeout does not wait for, so when several processes create
    /// the same file at once, one of them may see `SQLITE_BUSY` while connecting; that is
    /// retried here for up to [`DEFAULT_BUSY_TIMEOUT`], after random pauses under 5 ms
    /// doubling to 100 ms.
    async fn connect(options: SqliteConnectOptions) -> Result<SqlitePool, Error> {
        let started = Instant::now();
        // Those that see SQLITE_BUSY here are processes that raced each other for one lock:
        // full jitter spreads their next attempts so that they do not collide again.
        let backoff = Backoff::new(Duration::from_millis(5), Duration::from_millis(100))
            .with_jitter(Jitter::Full);
        let mut failures = 0;
        loop {
            let connected = SqlitePoolOptions::new()
                .max_connections(DEFAULT_MAX_CONNECTIONS)
                .connect_with(options.clone())
                .await;
            match connected {
                Ok(pool) => return Ok(pool),
                Err(error) if is_busy(&error) && started.elapsed() < DEFAULT_BUSY_TIMEOUT => {
                    tracing::debug!(?error, "database busy while opening; retrying");
                    tokio::time::sleep(backoff.delay(failures)).await;
                    failures += 1;
                }
                Err(error) => return Err(backend(Operation::Connect, error)),
            }
        }
    }
}

impl FileEngine for SqliteEngine {
    /// Create the file if missing, WAL journal mode, `synchronous = FULL` and a busy timeout
    /// of [`DEFAULT_BUSY_TIMEOUT`].
    ///
    /// `synchronous = NORMAL` is faster (in WAL mode a commit no longer waits for the disk)
    /// but a power loss or an operating system crash may then lose the last commits: a
    /// checkpoint that a save reported as stored can come back lower after a reboot.
    /// Subscriptions then reprocess a few entries, which at-least-once consumers tolerate;
    /// choose it knowingly.
    fn file_options(path: &Path) -> SqliteConnectOptions {
        SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(DEFAULT_BUSY_TIMEOUT)
    }
}
