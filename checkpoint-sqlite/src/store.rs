//! [`SqliteCheckpointStore`]: constructors, settings, and the operations on the pool.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use checkpoint_core::backoff::{Backoff, Jitter};
use checkpoint_core::door::{BoxFuture, Door};
use checkpoint_core::settings::validate_timeout;
use checkpoint_core::timeout::within;
use checkpoint_core::{DEFAULT_TIMEOUT, Error, Operation};
use sqlx::pool::PoolConnection;
use sqlx::sqlite::{
    Sqlite, SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions,
    SqliteSynchronous,
};

use crate::error::{backend, is_busy};
use crate::layout::TableName;
use checkpoint_sql::run_once;

use crate::requests::Requests;
use crate::{BACKEND, DEFAULT_BUSY_TIMEOUT, DEFAULT_MAX_CONNECTIONS};

#[cfg(doc)]
use crate::DEFAULT_TABLE;

/// A durable checkpoint store in one SQLite database file.
///
/// Cheap to clone: clones share the pool. See the [crate documentation](crate) for the schema,
/// the durability settings, timeouts and use from several processes.
#[derive(Debug, Clone)]
pub struct SqliteCheckpointStore {
    pub(crate) pool: SqlitePool,
    table: TableName,
    pub(crate) requests: Arc<Requests>,
    pub(crate) timeout: Option<Duration>,
}

impl SqliteCheckpointStore {
    /// A store over a pool the caller already has, on the table [`DEFAULT_TABLE`], with the
    /// timeout [`DEFAULT_TIMEOUT`].
    ///
    /// The pool's own settings apply. For durability and for use by several processes,
    /// configure it as [`connect_options`](Self::connect_options) does: WAL,
    /// `synchronous = FULL` and a busy timeout. (sqlx's defaults already have
    /// `synchronous = FULL` and a 5 s busy timeout, but leave a new file in rollback-journal
    /// mode, where readers and the writer block each other.) Call [`migrate`](Self::migrate)
    /// once before use.
    pub fn new(pool: SqlitePool) -> Self {
        let table = TableName::default_table();
        let requests = Arc::new(Requests::for_table(&table));
        Self {
            pool,
            table,
            requests,
            timeout: Some(DEFAULT_TIMEOUT),
        }
    }

    /// The recommended connection settings for the database file at `path`: create it if
    /// missing, WAL journal mode, `synchronous = FULL` and a busy timeout of
    /// [`DEFAULT_BUSY_TIMEOUT`].
    ///
    /// Adjust them before [`open_with`](Self::open_with). `synchronous = NORMAL` is faster
    /// (in WAL mode a commit no longer waits for the disk) but a power loss or an operating
    /// system crash may then lose the last commits: a checkpoint that a save reported as
    /// stored can come back lower after a reboot. Subscriptions then reprocess a few
    /// entries, which at-least-once consumers tolerate; choose it knowingly.
    pub fn connect_options(path: impl AsRef<Path>) -> SqliteConnectOptions {
        SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(DEFAULT_BUSY_TIMEOUT)
    }

    /// Opens (creating it if missing) the database file at `path` with
    /// [`connect_options`](Self::connect_options), in a pool of [`DEFAULT_MAX_CONNECTIONS`].
    ///
    /// Does not create the table: call [`migrate`](Self::migrate).
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, Error> {
        Self::open_with(Self::connect_options(path)).await
    }

    /// Opens a pool of [`DEFAULT_MAX_CONNECTIONS`] with the given settings.
    ///
    /// Switching a new database file into WAL mode needs a lock that SQLite's busy timeout does
    /// not wait for, so when several processes create the same file at once, one of them may
    /// see `SQLITE_BUSY` while connecting; that is retried here for up to
    /// [`DEFAULT_BUSY_TIMEOUT`], after random pauses under 5 ms doubling to 100 ms.
    #[tracing::instrument(
        name = "checkpoint.connect",
        level = "debug",
        skip_all,
        fields(backend = BACKEND),
        err(Debug)
    )]
    pub async fn open_with(options: SqliteConnectOptions) -> Result<Self, Error> {
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
                Ok(pool) => return Ok(Self::new(pool)),
                Err(error) if is_busy(&error) && started.elapsed() < DEFAULT_BUSY_TIMEOUT => {
                    tracing::debug!(?error, "database busy while opening; retrying");
                    tokio::time::sleep(backoff.delay(failures)).await;
                    failures += 1;
                }
                Err(error) => return Err(backend(Operation::Connect, error)),
            }
        }
    }

    /// The same store on the table `name` instead of [`DEFAULT_TABLE`].
    ///
    /// `name` must match `[A-Za-z_][A-Za-z0-9_]*`, have at most 128 bytes and not start with
    /// `sqlite_`. It is used quoted, so SQL keywords are fine.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] for
    /// [`Argument::Setting("table")`](checkpoint_core::Argument::Setting) with
    /// [`InvalidReason::Malformed`](checkpoint_core::InvalidReason::Malformed) for anything
    /// else.
    pub fn with_table(mut self, name: &str) -> Result<Self, Error> {
        let table = TableName::parse(name)?;
        self.requests = Arc::new(Requests::for_table(&table));
        self.table = table;
        Ok(self)
    }

    /// Fails any operation that takes longer than `timeout` (waiting for a pooled connection
    /// included) with [`Error::Timeout`], instead of after [`DEFAULT_TIMEOUT`].
    ///
    /// The statement is not interrupted: it may still complete, and every operation is safe
    /// to retry. On a caller's connection (the `*_in` methods) a timed-out call leaves the
    /// transaction in an unknown state: roll it back. See the crate doc for how this relates
    /// to SQLite's busy timeout.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] with [`Argument::Setting("timeout")`](checkpoint_core::Argument)
    /// for a zero duration.
    pub fn with_timeout(mut self, timeout: Duration) -> Result<Self, Error> {
        self.timeout = Some(validate_timeout(timeout)?);
        Ok(self)
    }

    /// Lets every operation wait as long as the pool and SQLite's busy timeout make it: for a
    /// caller that bounds each call itself.
    pub fn without_timeout(mut self) -> Self {
        self.timeout = None;
        self
    }

    /// The name of the table this store uses.
    pub fn table(&self) -> &str {
        self.table.as_str()
    }

    /// The pool this store uses, for example to begin a transaction for
    /// [`advance_in`](Self::advance_in).
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// The statement [`save`](checkpoint_core::CheckpointStore::save) sends (parameters `?1`
    /// group, `?2` subscription, `?3` partition, `?4` position), rendered for this store's
    /// table: to review what runs, or to time the same statement on a client of your own, as
    /// the workspace's bench does.
    pub fn save_sql(&self) -> &str {
        self.requests.save_sql()
    }

    /// The statement [`list`](checkpoint_core::CheckpointStore::list) sends (parameter `?1`
    /// group), rendered for this store's table, as [`save_sql`](Self::save_sql).
    pub fn list_sql(&self) -> &str {
        self.requests.list_sql()
    }

    /// Creates the checkpoint table, its tombstone table, the two lease tables and the parked
    /// entries' table, each unless it exists (see the [crate documentation](crate) for their
    /// definitions). Idempotent, and safe when several processes start at once: the statements
    /// take the write lock, and whoever comes second finds the tables there. A database made
    /// before the tombstone, lease or parked entries' tables existed gets them from the next
    /// `migrate`.
    ///
    /// It does not alter an existing table of the same name.
    ///
    /// # Errors
    ///
    /// [`Error::Backend`] with [`Operation::Migrate`], for example when the file is read-only;
    /// [`Error::Timeout`] when it takes longer than the store's timeout.
    #[tracing::instrument(
        name = "checkpoint.migrate",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = self.table()),
        err(Debug)
    )]
    pub async fn migrate(&self) -> Result<(), Error> {
        within(BACKEND, Operation::Migrate, self.timeout, async {
            let mut connection = self.connection(Operation::Migrate).await?;
            self.requests.migrate(&mut connection).await
        })
        .await
    }

    /// A connection from the pool for one call of `operation` (the wait for it is under the
    /// call's bound); it goes back to the pool when dropped.
    pub(crate) async fn connection(
        &self,
        operation: Operation,
    ) -> Result<PoolConnection<Sqlite>, Error> {
        self.pool
            .acquire()
            .await
            .map_err(|error| backend(operation, error))
    }
}

checkpoint_core::through_door!(SqliteCheckpointStore: checkpoints, exclusive, admin, leases, parked);

// The five doors: each method a pooled connection and one call of `requests/`.
checkpoint_sql::sql_doors!(SqliteCheckpointStore, run_once);

impl Door for SqliteCheckpointStore {
    const BACKEND: &'static str = BACKEND;

    fn place(&self) -> Option<&dyn std::fmt::Display> {
        Some(&self.table)
    }

    /// The store's timeout bounds the whole call, the wait for a pooled connection included.
    fn bound<'a, T: Send + 'a>(
        &'a self,
        operation: Operation,
        request: BoxFuture<'a, T>,
    ) -> BoxFuture<'a, T> {
        Box::pin(within(BACKEND, operation, self.timeout, request))
    }
}
