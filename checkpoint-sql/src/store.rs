//! [`SqlStore`]: one checkpoint store over the pool of any [`Engine`], its settings and its
//! migration; the engines' stores are its aliases (`SqliteCheckpointStore =
//! SqlStore<SqliteEngine>`).

use std::fmt;
use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use checkpoint_core::door::{BoxFuture, Door};
use checkpoint_core::settings::validate_timeout;
use checkpoint_core::timeout::within;
use checkpoint_core::{DEFAULT_TIMEOUT, Error, Operation};
use sqlx::Pool;

use crate::engine::{ConnectOptions, Engine, FileEngine};
use crate::requests::Statements;

/// A checkpoint store in a SQL database: the contract's five traits
/// ([`CheckpointStore`](checkpoint_core::CheckpointStore),
/// [`ExclusiveCheckpointStore`](checkpoint_core::ExclusiveCheckpointStore),
/// [`CheckpointAdmin`](checkpoint_core::CheckpointAdmin),
/// [`LeaseStore`](checkpoint_core::LeaseStore),
/// [`ParkedStore`](checkpoint_core::parked::ParkedStore)), the `*_in` family on the caller's
/// transaction and [`TransactionalStore`](checkpoint_core::transactional::TransactionalStore),
/// written once for every engine `E`.
///
/// Use it by its engine's name: `checkpoint_sqlite::SqliteCheckpointStore`,
/// `checkpoint_postgres::PostgresCheckpointStore`, `checkpoint_mysql::MysqlCheckpointStore`;
/// each engine's crate documents its schema, isolation and costs.
///
/// Cheap to clone: clones share the pool.
pub struct SqlStore<E: Engine> {
    pub(crate) pool: Pool<E::Database>,
    table: E::Table,
    pub(crate) requests: Arc<E::Requests>,
    pub(crate) timeout: Option<Duration>,
}

impl<E: Engine> Clone for SqlStore<E> {
    fn clone(&self) -> Self {
        Self {
            pool: self.pool.clone(),
            table: self.table.clone(),
            requests: Arc::clone(&self.requests),
            timeout: self.timeout,
        }
    }
}

/// Written by hand so that it can never show connection options (and so credentials),
/// whatever a future sqlx prints for its pool: the backend, the table, the timeout and the
/// pool's size.
impl<E: Engine> fmt::Debug for SqlStore<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqlStore")
            .field("backend", &E::BACKEND)
            .field("table", &self.table.to_string())
            .field("timeout", &self.timeout)
            .field("pool_size", &self.pool.size())
            .field("pool_idle", &self.pool.num_idle())
            .finish()
    }
}

impl<E: Engine> SqlStore<E> {
    /// A store over a pool the caller already has, on the engine's default table
    /// (`checkpoints`), with the timeout [`DEFAULT_TIMEOUT`].
    ///
    /// Nothing is sent until the first call; the pool's own settings apply (see the engine's
    /// crate doc for the ones its guarantees need). Call [`migrate`](Self::migrate) once
    /// before use.
    pub fn new(pool: Pool<E::Database>) -> Self {
        let table = E::default_table();
        let requests = Arc::new(E::Requests::for_table(&table));
        Self {
            pool,
            table,
            requests,
            timeout: Some(DEFAULT_TIMEOUT),
        }
    }

    /// Connects a new pool with the engine's recommended settings to `url` and returns a store
    /// over it (see the engine's crate doc for the URL and the settings).
    ///
    /// # Errors
    ///
    /// [`Error::Backend`] with [`Operation::Connect`] when the URL is malformed or the first
    /// connection cannot be opened. The error never contains the URL.
    pub async fn connect(url: &str) -> Result<Self, Error> {
        let options = ConnectOptions::<E>::from_str(url)
            .map_err(|error| E::error(Operation::Connect, error))?;
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
        fields(backend = E::BACKEND),
        err(Debug)
    )]
    pub async fn connect_with(options: ConnectOptions<E>) -> Result<Self, Error> {
        E::connect(options).await.map(Self::new)
    }

    /// The same store on the table `name` instead of the default one; the engine's crate doc
    /// says which names it accepts. The name is quoted in every statement.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] with [`Argument::Setting("table")`](checkpoint_core::Argument)
    /// and [`InvalidReason::Malformed`](checkpoint_core::InvalidReason::Malformed) for a name
    /// the engine refuses.
    pub fn with_table(mut self, name: &str) -> Result<Self, Error> {
        let table = E::parse_table(name)?;
        self.requests = Arc::new(E::Requests::for_table(&table));
        self.table = table;
        Ok(self)
    }

    /// Fails any operation that takes longer than `timeout` (waiting for a pooled connection
    /// and the engine's reruns included) with [`Error::Timeout`], instead of after
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

    /// Lets every operation wait as long as the pool and the server make it: for a caller that
    /// bounds each call itself.
    pub fn without_timeout(mut self) -> Self {
        self.timeout = None;
        self
    }

    /// The table this store uses, as configured.
    pub fn table(&self) -> String {
        self.table.to_string()
    }

    /// The pool this store uses, for example to begin a transaction for the `*_in` family.
    pub fn pool(&self) -> &Pool<E::Database> {
        &self.pool
    }

    /// The statement [`save`](checkpoint_core::CheckpointStore::save) sends, rendered for this
    /// store's table (parameters: group, subscription, partition, position): to review what
    /// runs, or to time the same statement on a client of your own, as the workspace's bench
    /// does.
    pub fn save_sql(&self) -> &str {
        self.requests.save_sql()
    }

    /// The statement [`list`](checkpoint_core::CheckpointStore::list) sends (parameter: the
    /// group), rendered for this store's table, as [`save_sql`](Self::save_sql).
    pub fn list_sql(&self) -> &str {
        self.requests.list_sql()
    }

    /// The schema [`migrate`](Self::migrate) creates, for this store's table: to review it, or
    /// to run it yourself with a privileged user.
    pub fn schema_sql(&self) -> String {
        self.requests.schema_sql()
    }

    /// Creates the checkpoint table, its tombstone table, the lease tables and the parked
    /// entries' table, each unless it exists (their definitions: the engine's crate doc).
    /// Idempotent, and safe when several processes start at once. It does not alter an
    /// existing table of the same name.
    ///
    /// # Errors
    ///
    /// [`Error::Backend`] with [`Operation::Migrate`], for example without the privilege to
    /// create tables; [`Error::Timeout`] when it takes longer than the store's timeout.
    #[tracing::instrument(
        name = "checkpoint.migrate",
        level = "debug",
        skip_all,
        fields(backend = E::BACKEND, table = %self.table),
        err(Debug)
    )]
    pub async fn migrate(&self) -> Result<(), Error> {
        let migration = self.run(Operation::Migrate, |mut connection| async move {
            let reply = self.requests.migrate(&mut connection).await;
            (connection, reply)
        });
        within(E::BACKEND, Operation::Migrate, self.timeout, migration).await
    }
}

impl<E: FileEngine> SqlStore<E> {
    /// The engine's recommended connection settings for the database file at `path` (see the
    /// engine's crate doc); adjust them before [`open_with`](Self::open_with).
    pub fn connect_options(path: impl AsRef<Path>) -> ConnectOptions<E> {
        E::file_options(path.as_ref())
    }

    /// Opens (creating it if missing) the database file at `path` with
    /// [`connect_options`](Self::connect_options). Does not create the tables: call
    /// [`migrate`](Self::migrate).
    ///
    /// # Errors
    ///
    /// [`Error::Backend`] with [`Operation::Connect`] when the file cannot be opened.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, Error> {
        Self::connect_with(Self::connect_options(path)).await
    }

    /// Opens a pool with the given settings: [`connect_with`](Self::connect_with), under the
    /// name a file's store reads best with.
    ///
    /// # Errors
    ///
    /// As [`connect_with`](Self::connect_with).
    pub async fn open_with(options: ConnectOptions<E>) -> Result<Self, Error> {
        Self::connect_with(options).await
    }
}

checkpoint_core::through_door!([E: Engine] SqlStore<E>: checkpoints, exclusive, admin, leases, parked);

impl<E: Engine> Door for SqlStore<E> {
    const BACKEND: &'static str = E::BACKEND;

    fn place(&self) -> Option<&dyn fmt::Display> {
        Some(&self.table)
    }

    /// The store's timeout bounds the whole call: the wait for a pooled connection, and the
    /// engine's reruns, included.
    fn bound<'a, T: Send + 'a>(
        &'a self,
        operation: Operation,
        request: BoxFuture<'a, T>,
    ) -> BoxFuture<'a, T> {
        Box::pin(within(E::BACKEND, operation, self.timeout, request))
    }
}
