//! [`MysqlCheckpointStore`]: constructors, settings, and the operations on the pool.

use std::future::Future;
use std::pin::Pin;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use checkpoint_core::door::{BoxFuture, Door};
use checkpoint_core::settings::validate_timeout;
use checkpoint_core::timeout::within;
use checkpoint_core::{DEFAULT_TIMEOUT, Error, Operation};
use sqlx::mysql::{MySql, MySqlConnectOptions, MySqlConnection, MySqlPool, MySqlPoolOptions};
use sqlx::pool::{PoolConnection, PoolConnectionMetadata};
use sqlx::{Connection, Executor};

use crate::error::backend;
use crate::layout::TableName;
use crate::requests::{Requests, again_after_deadlock};
use crate::{BACKEND, DEFAULT_MAX_CONNECTIONS};

#[cfg(doc)]
use crate::DEFAULT_TABLE;

/// A pooled connection idle for longer than this is pinged before use.
const IDLE_CHECK_AFTER: Duration = Duration::from_secs(5);

/// A checkpoint store in a MySQL or MariaDB database.
///
/// Cheap to clone: clones share the pool. See the [crate documentation](crate) for the schema,
/// the isolation level it needs, timeouts and deadlocks.
#[derive(Debug, Clone)]
pub struct MysqlCheckpointStore {
    pub(crate) pool: MySqlPool,
    table: TableName,
    pub(crate) requests: Arc<Requests>,
    pub(crate) timeout: Option<Duration>,
}

impl MysqlCheckpointStore {
    /// A store over a pool the application already has, on the table [`DEFAULT_TABLE`], with
    /// the timeout [`DEFAULT_TIMEOUT`].
    ///
    /// The pool's own settings apply; the store's guarantees need two of them, both sqlx's and
    /// the servers' defaults: sessions at `REPEATABLE READ` (the tombstone checks are locking
    /// reads only at that level or `SERIALIZABLE`; see [Isolation](crate#isolation)), and
    /// `found_rows` on (matched rows counted, not only changed ones). Call
    /// [`migrate`](Self::migrate) once before use.
    pub fn new(pool: MySqlPool) -> Self {
        let table = TableName::default_table();
        let requests = Arc::new(Requests::for_table(&table));
        Self {
            pool,
            table,
            requests,
            timeout: Some(DEFAULT_TIMEOUT),
        }
    }

    /// Connects a new pool of [`DEFAULT_MAX_CONNECTIONS`] to `url`
    /// (`mysql://user:password@host:port/database`, `ssl-mode=…` and the other options sqlx
    /// reads) and returns a store over it.
    ///
    /// Every connection of the pool sets its session to `REPEATABLE READ`, whatever the
    /// server's default, and counts matched rows (`found_rows`). The pool pings only a
    /// connection that has been idle for more than 5 seconds, the ones most likely to have
    /// been cut by a server restart or a firewall, rather than before every use (one more
    /// round trip per call).
    ///
    /// # Errors
    ///
    /// [`Error::Backend`] with [`Operation::Connect`] when the URL is malformed or the first
    /// connection cannot be opened. The error never contains the URL.
    pub async fn connect(url: &str) -> Result<Self, Error> {
        let options = MySqlConnectOptions::from_str(url)
            .map_err(|error| backend(Operation::Connect, error))?;
        Self::connect_with(options).await
    }

    /// [`connect`](Self::connect) with options built in code rather than parsed from a URL.
    ///
    /// # Errors
    ///
    /// [`Error::Backend`] with [`Operation::Connect`] when the first connection cannot be
    /// opened.
    #[tracing::instrument(
        name = "checkpoint.connect",
        level = "debug",
        skip_all,
        fields(backend = BACKEND)
    )]
    pub async fn connect_with(options: MySqlConnectOptions) -> Result<Self, Error> {
        let pool = MySqlPoolOptions::new()
            .max_connections(DEFAULT_MAX_CONNECTIONS)
            .test_before_acquire(false)
            .before_acquire(ping_if_idle)
            .after_connect(|connection, _| Box::pin(repeatable_read(connection)))
            .connect_with(options.found_rows(true))
            .await
            .map_err(|error| backend(Operation::Connect, error))?;
        Ok(Self::new(pool))
    }

    /// The same store on the table `name` instead of [`DEFAULT_TABLE`].
    ///
    /// `name` must match `[A-Za-z_][A-Za-z0-9_]*` and have at most 48 bytes (MySQL's 64, less
    /// the longest suffix the store adds for its other tables). It is quoted in every
    /// statement, so SQL keywords are fine; it is resolved in the connection's database.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] with [`Argument::Setting("table")`](checkpoint_core::Argument)
    /// and [`InvalidReason::Malformed`](checkpoint_core::InvalidReason::Malformed) for
    /// anything else.
    pub fn with_table(mut self, name: &str) -> Result<Self, Error> {
        let table = TableName::parse(name)?;
        self.requests = Arc::new(Requests::for_table(&table));
        self.table = table;
        Ok(self)
    }

    /// Fails any operation that takes longer than `timeout` (waiting for a pooled connection
    /// and a deadlock's reruns included) with [`Error::Timeout`], instead of after
    /// [`DEFAULT_TIMEOUT`].
    ///
    /// The statement is not interrupted on the server: it may still complete, and every
    /// operation is safe to retry. On a caller's connection (the `*_in` methods) a timed-out
    /// call leaves the transaction in an unknown state: roll it back.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] with [`Argument::Setting("timeout")`](checkpoint_core::Argument)
    /// for a zero duration.
    pub fn with_timeout(mut self, timeout: Duration) -> Result<Self, Error> {
        self.timeout = Some(validate_timeout(timeout)?);
        Ok(self)
    }

    /// Lets every operation wait as long as the pool and the server make it: for a caller
    /// that bounds each call itself.
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
    pub fn pool(&self) -> &MySqlPool {
        &self.pool
    }

    /// The statement [`save`](checkpoint_core::CheckpointStore::save) sends (parameters:
    /// group, subscription, partition, position), rendered for this store's table: to review
    /// what runs, or to time the same statement on a client of your own, as the workspace's
    /// bench does.
    pub fn save_sql(&self) -> &str {
        self.requests.save_sql()
    }

    /// The statement [`list`](checkpoint_core::CheckpointStore::list) sends (parameter:
    /// group), rendered for this store's table, as [`save_sql`](Self::save_sql).
    pub fn list_sql(&self) -> &str {
        self.requests.list_sql()
    }

    /// Creates the checkpoint table, its tombstone table, the two lease tables and the parked
    /// entries' table, each unless it exists (see the [crate documentation](crate) for their
    /// definitions). Idempotent, and safe when several processes start at once.
    ///
    /// It does not alter an existing table of the same name. It needs the `CREATE` privilege,
    /// which the store's runtime role does not (see [Privileges](crate#privileges)).
    ///
    /// # Errors
    ///
    /// [`Error::Backend`] with [`Operation::Migrate`]; [`Error::Timeout`] when it takes longer
    /// than the store's timeout.
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
    ) -> Result<PoolConnection<MySql>, Error> {
        self.pool
            .acquire()
            .await
            .map_err(|error| backend(operation, error))
    }
}

/// `after_connect` hook of the pools [`MysqlCheckpointStore::connect`] creates: every session
/// at `REPEATABLE READ`, the level the tombstone checks need, whatever the server's default.
async fn repeatable_read(connection: &mut MySqlConnection) -> Result<(), sqlx::Error> {
    connection
        .execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        .await
        .map(drop)
}

/// `before_acquire` hook of the pools [`MysqlCheckpointStore::connect`] creates: pings only a
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

checkpoint_core::through_door!(MysqlCheckpointStore: checkpoints, exclusive, admin, leases, parked);

// The five doors: each method a pooled connection and one call of `requests/`, run again
// when InnoDB picks it as a deadlock's victim.
checkpoint_sql::sql_doors!(MysqlCheckpointStore, again_after_deadlock);

impl Door for MysqlCheckpointStore {
    const BACKEND: &'static str = BACKEND;

    fn place(&self) -> Option<&dyn std::fmt::Display> {
        Some(&self.table)
    }

    /// The store's timeout bounds the whole call, the wait for a pooled connection and a
    /// deadlock's reruns included.
    fn bound<'a, T: Send + 'a>(
        &'a self,
        operation: Operation,
        request: BoxFuture<'a, T>,
    ) -> BoxFuture<'a, T> {
        Box::pin(within(BACKEND, operation, self.timeout, request))
    }
}
