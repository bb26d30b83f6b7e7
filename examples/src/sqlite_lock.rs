//! SQLite's one write lock per file, seen from outside the processes that share the file: a
//! probe that asks for it without waiting (`BEGIN IMMEDIATE` with a busy timeout of 0). A
//! process frozen (SIGSTOP) inside a write transaction keeps the lock for the whole freeze, and
//! every other process's writes wait behind it (`checkpoint-sqlite`'s crate doc, "Many
//! processes on one file"): the examples that freeze a process use the probe to know when
//! that happened.

use std::path::{Path, PathBuf};
use std::time::Duration;

use checkpoint_connect::StoreUrl;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use sqlx::{Connection, raw_sql};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// SQLite's primary result codes for "another connection holds the lock" (`SQLITE_BUSY`,
/// `SQLITE_LOCKED`); sqlx reports extended codes, whose low byte is the primary one.
const BUSY: u32 = 5;
const LOCKED: u32 = 6;

/// The SQLite file of a store spec, if it is one.
pub fn sqlite_file(spec: &str) -> Option<PathBuf> {
    match spec.parse() {
        Ok(StoreUrl::Sqlite(path)) => Some(path),
        _ => None,
    }
}

fn is_busy(error: &sqlx::Error) -> bool {
    error
        .as_database_error()
        .and_then(|error| error.code())
        .and_then(|code| code.parse::<u32>().ok())
        .is_some_and(|code| matches!(code & 0xff, BUSY | LOCKED))
}

/// A connection of its own to the file that asks for the write lock and never waits for it.
pub struct Probe {
    connection: SqliteConnection,
}

impl Probe {
    /// A connection to `file` whose busy timeout is 0: it never waits for the lock.
    pub async fn open(file: &Path) -> Result<Self, BoxError> {
        let options = SqliteConnectOptions::new()
            .filename(file)
            .busy_timeout(Duration::ZERO);
        Ok(Self {
            connection: SqliteConnection::connect_with(&options).await?,
        })
    }

    /// Whether another connection holds the write lock right now: `BEGIN IMMEDIATE` fails at
    /// once with `SQLITE_BUSY` if so; if not, the probe had it and gives it back unused.
    pub async fn locked(&mut self) -> Result<bool, BoxError> {
        match raw_sql("BEGIN IMMEDIATE")
            .execute(&mut self.connection)
            .await
        {
            Ok(_) => {
                raw_sql("ROLLBACK").execute(&mut self.connection).await?;
                Ok(false)
            }
            Err(error) if is_busy(&error) => Ok(true),
            Err(error) => Err(error.into()),
        }
    }
}
