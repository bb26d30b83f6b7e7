//! [`PostgresCheckpointStore`]: construction, settings, and the operations on the pool.

use std::fmt;
use std::future::Future;
use std::ops::{Deref, DerefMut};
use std::pin::Pin;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use checkpoint_core::settings::validate_timeout;
use checkpoint_core::validation::{
    validate_advance, validate_batch, validate_claim, validate_group, validate_key, validate_save,
};
use checkpoint_core::{
    Checkpoint, CheckpointStore, DEFAULT_TIMEOUT, Error, ExclusiveCheckpointStore, Fingerprint,
    Operation,
};
use sqlx::Connection;
use sqlx::pool::{PoolConnection, PoolConnectionMetadata};
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions, Postgres};

use crate::BACKEND;
use crate::error::{Chain, backend, connection_lost};
use crate::layout::TableName;
use crate::requests::Requests;

/// A pooled connection idle for longer than this is pinged before use by a pool that
/// [`PostgresCheckpointStore::connect`] creates (see there).
const IDLE_CHECK_AFTER: Duration = Duration::from_secs(5);

/// A checkpoint store in one PostgreSQL table, on a sqlx [`PgPool`].
///
/// Every operation is one SQL statement, one round trip: [`save`](CheckpointStore::save) and
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

    /// Runs `operation` under the configured timeout, if any.
    pub(crate) async fn timed<T>(
        &self,
        operation: Operation,
        future: impl Future<Output = Result<T, Error>>,
    ) -> Result<T, Error> {
        match self.timeout {
            None => future.await,
            Some(after) => {
                tokio::time::timeout(after, future)
                    .await
                    .unwrap_or(Err(Error::Timeout {
                        backend: BACKEND,
                        operation,
                        after,
                    }))
            }
        }
    }

    /// Runs `request` on a connection from the pool, under the timeout (the wait for the
    /// connection included). The connection goes back to the pool when the request ends, and
    /// is closed instead when the call is abandoned before (see [`Checkout`]).
    pub(crate) async fn pooled<T, R: Future<Output = Result<T, Error>>>(
        &self,
        operation: Operation,
        request: impl Fn(Checkout) -> R,
    ) -> Result<T, Error> {
        self.timed(operation, async {
            let connection = self
                .pool
                .acquire()
                .await
                .map_err(|error| backend(operation, error))?;
            request(Checkout::new(connection)).await
        })
        .await
    }

    /// [`pooled`](Self::pooled), and when `request` fails because its pooled connection had
    /// died (the server restarted, or cut the connection while it sat idle), once more on a
    /// connection checked to be alive, so the first call after a restart does not fail for
    /// connections that were already gone.
    ///
    /// Only for idempotent requests. `advance` is not retried: if the connection died after
    /// the server had committed it, a second attempt would report `Moved` for the caller's own
    /// advance.
    pub(crate) async fn pooled_once_more_if_lost<T, R: Future<Output = Result<T, Error>>>(
        &self,
        operation: Operation,
        request: impl Fn(Checkout) -> R,
    ) -> Result<T, Error> {
        match self.pooled(operation, &request).await {
            Err(error) if connection_lost(&error) => {
                let connection = self.live_connection(operation, error).await?;
                self.timed(operation, request(connection)).await
            }
            result => result,
        }
    }

    /// A pooled connection that answers a ping, after `lost` (the error of a call whose
    /// connection had died): every dead idle connection met on the way is closed, so the pool
    /// replaces it. Returns `lost` when no live connection can be had.
    async fn live_connection(&self, operation: Operation, lost: Error) -> Result<Checkout, Error> {
        tracing::debug!(error = %Chain(&lost), "connection lost, trying once more on a live one");
        self.timed(operation, async {
            // Each pass closes one dead connection; the pool never holds more than its size.
            for _ in 0..=self.pool.size() {
                let mut connection = Checkout::new(
                    self.pool
                        .acquire()
                        .await
                        .map_err(|error| backend(operation, error))?,
                );
                if connection.ping().await.is_ok() {
                    return Ok(connection);
                }
                connection.close().await;
            }
            Err(lost)
        })
        .await
    }
}

#[async_trait]
impl CheckpointStore for PostgresCheckpointStore {
    #[tracing::instrument(
        name = "checkpoint.list",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = %self.table, count)
    )]
    async fn list(&self, group: &str) -> Result<Vec<Checkpoint>, Error> {
        validate_group(group)?;
        self.pooled_once_more_if_lost(Operation::List, |mut connection| async move {
            let listed = self.requests.list(&mut connection, group).await;
            connection.release(listed)
        })
        .await
    }

    #[tracing::instrument(
        name = "checkpoint.load",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = %self.table)
    )]
    async fn load(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> Result<Option<u64>, Error> {
        validate_key(group, subscription)?;
        self.pooled_once_more_if_lost(Operation::Load, |mut connection| async move {
            let loaded = self
                .requests
                .load(&mut connection, group, subscription, partition)
                .await;
            connection.release(loaded)
        })
        .await
    }

    #[tracing::instrument(
        name = "checkpoint.save",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = %self.table)
    )]
    async fn save(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<(), Error> {
        validate_save(group, subscription, position)?;
        self.pooled_once_more_if_lost(Operation::Save, |mut connection| async move {
            let saved = self
                .requests
                .save(&mut connection, group, subscription, partition, position)
                .await;
            connection.release(saved)
        })
        .await
    }

    #[tracing::instrument(
        name = "checkpoint.save_all",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = %self.table, batch_size = checkpoints.len(), distinct_keys)
    )]
    async fn save_all(&self, group: &str, checkpoints: &[Checkpoint]) -> Result<(), Error> {
        validate_batch(group, checkpoints)?;
        if checkpoints.is_empty() {
            return Ok(());
        }
        self.pooled_once_more_if_lost(Operation::SaveAll, |mut connection| async move {
            let saved = self
                .requests
                .save_all(&mut connection, group, checkpoints)
                .await;
            connection.release(saved)
        })
        .await
    }
}

#[async_trait]
impl ExclusiveCheckpointStore for PostgresCheckpointStore {
    #[tracing::instrument(
        name = "checkpoint.claim",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = %self.table)
    )]
    async fn claim(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        fingerprint: Fingerprint,
        initial_position: u64,
    ) -> Result<u64, Error> {
        validate_claim(group, subscription, initial_position)?;
        self.pooled_once_more_if_lost(Operation::Claim, |mut connection| async move {
            let claimed = self
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
            connection.release(claimed)
        })
        .await
    }

    #[tracing::instrument(
        name = "checkpoint.advance",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = %self.table)
    )]
    async fn advance(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
    ) -> Result<(), Error> {
        validate_advance(group, subscription, from, to)?;
        // Not once more on a lost connection: see `pooled_once_more_if_lost`.
        self.pooled(Operation::Advance, |mut connection| async move {
            let advanced = self
                .requests
                .advance(&mut connection, group, subscription, partition, from, to)
                .await;
            connection.release(advanced)
        })
        .await
    }
}

/// A pooled connection while a request runs on it.
///
/// When the call is abandoned before the request ends (its timeout), the connection is closed
/// rather than returned to the pool: it is in the middle of a statement, and may wait for ever
/// for the answer (a server that vanished without closing it, behind a cut network path or a
/// frozen host). sqlx pings a returned connection before it takes it back, and that ping
/// would wait with it, holding the connection's place in the pool for good: a long enough
/// outage would leave the pool with no place to open a new connection in. Closed, its place
/// is free again at once (sqlx sends `Terminate` and shuts the socket down, within 5 s).
///
/// A request that ended hands its connection back with [`release`](Self::release).
pub(crate) struct Checkout(Option<PoolConnection<Postgres>>);

impl Checkout {
    pub(crate) fn new(connection: PoolConnection<Postgres>) -> Self {
        Self(Some(connection))
    }

    /// The request on the connection ended with `result` (an error included: sqlx checks the
    /// connection on its way back): the connection goes back to the pool.
    pub(crate) fn release<T>(mut self, result: T) -> T {
        drop(self.0.take());
        result
    }

    /// Closes the connection now, so that the pool opens a new one in its place.
    async fn close(mut self) {
        if let Some(connection) = self.0.take() {
            connection.close().await.ok();
        }
    }
}

impl Deref for Checkout {
    type Target = PgConnection;

    fn deref(&self) -> &PgConnection {
        match &self.0 {
            Some(connection) => connection,
            None => unreachable!("{RELEASED}"),
        }
    }
}

impl DerefMut for Checkout {
    fn deref_mut(&mut self) -> &mut PgConnection {
        match &mut self.0 {
            Some(connection) => connection,
            None => unreachable!("{RELEASED}"),
        }
    }
}

/// Why a [`Checkout`] always holds its connection while it can be used.
const RELEASED: &str = "only `release`, which consumes the checkout, takes the connection";

impl Drop for Checkout {
    fn drop(&mut self) {
        if let Some(mut abandoned) = self.0.take() {
            tracing::debug!(
                "a call was abandoned in the middle of its request: closing its connection"
            );
            abandoned.close_on_drop();
        }
    }
}

/// `before_acquire` hook of the pools [`PostgresCheckpointStore::connect`] creates: pings only
/// a connection that has been idle for a while (see there).
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
