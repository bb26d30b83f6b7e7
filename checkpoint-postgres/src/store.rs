//! [`PostgresCheckpointStore`]: construction, settings, and the operations on the pool.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use checkpoint_core::door::{BoxFuture, Checked, CheckpointDoor, Door, ExclusiveDoor};
use checkpoint_core::settings::validate_timeout;
use checkpoint_core::timeout::within;
use checkpoint_core::{Checkpoint, DEFAULT_TIMEOUT, Error, Fingerprint, Operation};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

use crate::BACKEND;
use crate::error::backend;
use crate::layout::TableName;
use crate::requests::{Pooled, Requests, ping_if_idle};

#[cfg(doc)]
use checkpoint_core::{CheckpointStore, ExclusiveCheckpointStore};

/// A checkpoint store in one PostgreSQL table, on a sqlx [`PgPool`].
///
/// Every operation of the hot path is one SQL statement, one round trip (the admin operations'
/// costs are in the crate doc): [`save`](CheckpointStore::save) and
/// [`save_all`](CheckpointStore::save_all) are `INSERT ... ON CONFLICT DO UPDATE ... WHERE`
/// the stored position is behind, so the server decides atomically and nothing is read first;
/// a batch of any size is sent as three arrays and unnested by the server.
///
/// The methods of [`CheckpointStore`] and [`ExclusiveCheckpointStore`] run on the pool. The
/// `*_in` methods run the same statements on a connection the caller holds, typically
/// `&mut *transaction`, so a projection commits its read model and its checkpoint together or
/// not at all.
///
/// Cloning is cheap: the clones share the pool and the prepared SQL.
#[derive(Clone)]
pub struct PostgresCheckpointStore {
    pub(crate) pool: PgPool,
    pub(crate) table: Arc<TableName>,
    pub(crate) requests: Arc<Requests>,
    pub(crate) timeout: Option<Duration>,
}

impl fmt::Debug for PostgresCheckpointStore {
    // Written by hand so that it can never show connection options (and so credentials),
    // whatever a future sqlx prints for its pool.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresCheckpointStore")
            .field("table", &self.table.to_string())
            .field("timeout", &self.timeout)
            .field("pool_size", &self.pool.size())
            .field("pool_idle", &self.pool.num_idle())
            .finish()
    }
}

impl PostgresCheckpointStore {
    /// A store over a pool the application already has, using the table
    /// [`DEFAULT_TABLE`](crate::DEFAULT_TABLE) and the timeout [`DEFAULT_TIMEOUT`].
    ///
    /// Nothing is sent to the server until the first call. A pool built with sqlx's defaults
    /// pings each idle connection before handing it out (`test_before_acquire`), one more
    /// round trip per call; [`connect`](Self::connect) shows a cheaper setting.
    pub fn new(pool: PgPool) -> Self {
        let table = TableName::default_table();
        let requests = Requests::for_table(&table);
        Self {
            pool,
            table: Arc::new(table),
            requests: Arc::new(requests),
            timeout: Some(DEFAULT_TIMEOUT),
        }
    }

    /// Connects a new pool to `url` (`postgres://user:password@host:port/database`) and
    /// returns a store over it.
    ///
    /// The pool does not ping a connection before every use (sqlx's `test_before_acquire`),
    /// which would double the round trips of every call; it pings only a connection that has
    /// been idle for more than 5 seconds, the ones most likely to have been cut by a server
    /// restart or a firewall. sqlx already checks each connection when it returns to the
    /// pool. When a call still meets a dead connection, the store runs it once more on a
    /// connection it has pinged (closing the dead ones), except
    /// [`advance`](ExclusiveCheckpointStore::advance), which is not idempotent: it fails with
    /// a retryable error and the pool replaces that connection.
    ///
    /// # Errors
    ///
    /// [`Error::Backend`] with [`Operation::Connect`] when the URL is malformed or the first
    /// connection cannot be opened. The error never contains the URL.
    pub async fn connect(url: &str) -> Result<Self, Error> {
        let options =
            PgConnectOptions::from_str(url).map_err(|error| backend(Operation::Connect, error))?;
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
    pub async fn connect_with(options: PgConnectOptions) -> Result<Self, Error> {
        let pool = PgPoolOptions::new()
            .test_before_acquire(false)
            .before_acquire(ping_if_idle)
            .connect_with(options)
            .await
            .map_err(|error| backend(Operation::Connect, error))?;
        Ok(Self::new(pool))
    }

    /// Uses the table `name`, `table` or `schema.table`, instead of
    /// [`DEFAULT_TABLE`](crate::DEFAULT_TABLE).
    ///
    /// Each part must match `[A-Za-z_][A-Za-z0-9_]*` and have at most 63 bytes (PostgreSQL's
    /// identifier limit). The name is quoted in every statement, so its case is kept as
    /// written. An unqualified name is resolved through the connection's `search_path`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] with [`Argument::Setting("table")`](checkpoint_core::Argument)
    /// and [`InvalidReason::Malformed`](checkpoint_core::InvalidReason) for anything else.
    pub fn with_table(mut self, name: &str) -> Result<Self, Error> {
        let table = TableName::parse(name)?;
        self.requests = Arc::new(Requests::for_table(&table));
        self.table = Arc::new(table);
        Ok(self)
    }

    /// Fails any operation that takes longer than `timeout` (waiting for a pooled connection
    /// included) with [`Error::Timeout`], instead of after [`DEFAULT_TIMEOUT`].
    ///
    /// The statement may still complete on the server; every operation is safe to retry. On
    /// a caller's connection (the `*_in` methods) a timed-out call leaves the transaction in
    /// an unknown state: roll it back.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] with [`Argument::Setting("timeout")`](checkpoint_core::Argument)
    /// for a zero duration.
    pub fn with_timeout(mut self, timeout: Duration) -> Result<Self, Error> {
        self.timeout = Some(validate_timeout(timeout)?);
        Ok(self)
    }

    /// Lets every operation wait as long as the pool and the server make it (see the crate
    /// doc on faults): for a caller that bounds each call itself.
    pub fn without_timeout(mut self) -> Self {
        self.timeout = None;
        self
    }

    /// The pool the store runs on.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// The table name as configured, for example `checkpoints` or `app.checkpoints`.
    pub fn table(&self) -> String {
        self.table.to_string()
    }

    /// The DDL that [`migrate`](Self::migrate) runs for this store's table, its tombstone
    /// table, its two lease tables and its parked entries' table, for teams that apply migrations with their own tooling.
    pub fn schema_sql(&self) -> String {
        self.requests.schema_sql()
    }

    /// The statement [`save`](checkpoint_core::CheckpointStore::save) sends (parameters
    /// `$1` group, `$2` subscription, `$3` partition, `$4` position), rendered for this store's
    /// table: to review what runs, or to time the same statement on a client of your own, as
    /// the workspace's bench does.
    pub fn save_sql(&self) -> &str {
        self.requests.save_sql()
    }

    /// The statement [`list`](checkpoint_core::CheckpointStore::list) sends (parameter `$1`
    /// group), rendered for this store's table, as [`save_sql`](Self::save_sql).
    pub fn list_sql(&self) -> &str {
        self.requests.list_sql()
    }

    /// Creates the checkpoint table, its tombstone table, its lease tables
    /// (`<table>_leases`, `<table>_owners`) and its parked entries' table (`<table>_parked`),
    /// and their schema when the name has one, each
    /// unless it exists.
    ///
    /// Safe to call from every process at start-up, at the same time: the migrations of one
    /// table take turns on a transaction-scoped advisory lock. When all five tables exist,
    /// nothing is created, so a role with only the run-time privileges (see the crate doc) can
    /// call it too. A deployment made before the tombstone, lease or parked entries' tables existed gets them
    /// from the next `migrate` by a role that may create tables in the schema. An existing
    /// table is not checked against the schema.
    ///
    /// # Errors
    ///
    /// [`Error::Backend`] with [`Operation::Migrate`], for example when the role may not
    /// create a table; [`Error::Timeout`] when it takes longer than the store's timeout.
    #[tracing::instrument(
        name = "checkpoint.migrate",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = %self.table)
    )]
    pub async fn migrate(&self) -> Result<(), Error> {
        let pooled = self.on_pool(Operation::Migrate);
        let migration = pooled.run(|mut connection| async move {
            let reply = self.requests.migrate(&mut connection).await;
            (connection, reply)
        });
        within(BACKEND, Operation::Migrate, self.timeout, migration).await
    }

    /// One call of `operation` on the pool (bounded by the front, see [`Door::bound`]).
    pub(crate) fn on_pool(&self, operation: Operation) -> Pooled<'_> {
        Pooled {
            pool: &self.pool,
            operation,
        }
    }
}

checkpoint_core::through_door!(PostgresCheckpointStore: checkpoints, exclusive, admin, leases, parked);

impl Door for PostgresCheckpointStore {
    const BACKEND: &'static str = BACKEND;

    fn place(&self) -> Option<&dyn std::fmt::Display> {
        Some(&self.table)
    }

    /// The store's timeout bounds the whole call: the wait for a pooled connection, and a
    /// second attempt after a lost connection, included.
    fn bound<'a, T: Send + 'a>(
        &'a self,
        operation: Operation,
        request: BoxFuture<'a, T>,
    ) -> BoxFuture<'a, T> {
        Box::pin(within(BACKEND, operation, self.timeout, request))
    }
}

impl CheckpointDoor for PostgresCheckpointStore {
    async fn list(&self, _checked: Checked, group: &str) -> Result<Vec<Checkpoint>, Error> {
        self.on_pool(Operation::List)
            .run_once_more_if_lost(|mut connection| async move {
                let reply = self.requests.list(&mut connection, group).await;
                (connection, reply)
            })
            .await
    }

    async fn load(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> Result<Option<u64>, Error> {
        self.on_pool(Operation::Load)
            .run_once_more_if_lost(|mut connection| async move {
                let reply = self
                    .requests
                    .load(&mut connection, group, subscription, partition)
                    .await;
                (connection, reply)
            })
            .await
    }

    async fn save(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<(), Error> {
        self.on_pool(Operation::Save)
            .run_once_more_if_lost(|mut connection| async move {
                let reply = self
                    .requests
                    .save(&mut connection, group, subscription, partition, position)
                    .await;
                (connection, reply)
            })
            .await
    }

    async fn save_all(
        &self,
        _checked: Checked,
        group: &str,
        checkpoints: &[Checkpoint],
    ) -> Result<(), Error> {
        self.on_pool(Operation::SaveAll)
            .run_once_more_if_lost(|mut connection| async move {
                let reply = self
                    .requests
                    .save_all(&mut connection, group, checkpoints)
                    .await;
                (connection, reply)
            })
            .await
    }
}

impl ExclusiveDoor for PostgresCheckpointStore {
    async fn claim(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
        fingerprint: Fingerprint,
        initial_position: u64,
    ) -> Result<u64, Error> {
        self.on_pool(Operation::Claim)
            .run_once_more_if_lost(|mut connection| async move {
                let reply = self
                    .requests
                    .claim(
                        &mut connection,
                        group,
                        subscription,
                        partition,
                        fingerprint,
                        initial_position,
                    )
                    .await;
                (connection, reply)
            })
            .await
    }

    async fn advance(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
    ) -> Result<(), Error> {
        // Not once more on a lost connection: see `Pooled::run_once_more_if_lost`.
        self.on_pool(Operation::Advance)
            .run(|mut connection| async move {
                let reply = self
                    .requests
                    .advance(&mut connection, group, subscription, partition, from, to)
                    .await;
                (connection, reply)
            })
            .await
    }
}
