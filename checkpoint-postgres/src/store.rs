//! [`PostgresCheckpointStore`]: construction, options, migration and every operation.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use checkpoint_core::batch::highest_per_key;
use checkpoint_core::validation::{
    validate_advance, validate_batch, validate_claim, validate_group, validate_key, validate_save,
};
use checkpoint_core::{
    Checkpoint, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint, Operation,
};
use sqlx::Connection;
use sqlx::pool::{PoolConnection, PoolConnectionMetadata};
use sqlx::postgres::{PgConnectOptions, PgConnection, PgExecutor, PgPool, PgPoolOptions, Postgres};

use crate::BACKEND;
use crate::errors::{Chain, backend, connection_lost, unexpected};
use crate::statements::{MIGRATE_LOCK, Statements, sql};
use crate::table::TableName;

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
    pool: PgPool,
    table: Arc<TableName>,
    statements: Arc<Statements>,
    timeout: Option<Duration>,
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
    /// [`DEFAULT_TABLE`](crate::DEFAULT_TABLE) and no timeout of its own.
    ///
    /// Nothing is sent to the server until the first call. A pool built with sqlx's defaults
    /// pings each idle connection before handing it out (`test_before_acquire`), one more
    /// round trip per call; [`connect`](Self::connect) shows a cheaper setting.
    pub fn new(pool: PgPool) -> Self {
        let table = TableName::default_table();
        let statements = Statements::new(&table);
        Self {
            pool,
            table: Arc::new(table),
            statements: Arc::new(statements),
            timeout: None,
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
        self.statements = Arc::new(Statements::new(&table));
        self.table = Arc::new(table);
        Ok(self)
    }

    /// Fails any operation that takes longer than `timeout` (waiting for a pooled connection
    /// included) with [`Error::Timeout`].
    ///
    /// The statement may still complete on the server; every operation is safe to retry. On
    /// a caller's connection (the `*_in` methods) a timed-out call leaves the transaction in
    /// an unknown state: roll it back.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
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

    /// The DDL that [`migrate`](Self::migrate) runs for this store's table, for teams that
    /// apply migrations with their own tooling.
    pub fn schema_sql(&self) -> String {
        match &self.statements.create_schema {
            Some(create_schema) => format!("{create_schema};\n{};\n", self.statements.create_table),
            None => format!("{};\n", self.statements.create_table),
        }
    }

    /// Creates the table (and its schema, when the name has one) unless it exists.
    ///
    /// Safe to call from every process at start-up, at the same time: the migrations of one
    /// table take turns on a transaction-scoped advisory lock. When the table exists, nothing
    /// is created, so a role with only the run-time privileges (see the crate doc) can call
    /// it too. An existing table is not checked against the schema.
    ///
    /// # Errors
    ///
    /// [`Error::Backend`] with [`Operation::Migrate`], for example when the role may not
    /// create the table.
    #[tracing::instrument(
        name = "checkpoint_postgres::migrate",
        level = "debug",
        skip(self),
        fields(table = %self.table)
    )]
    pub async fn migrate(&self) -> Result<(), Error> {
        self.timed(Operation::Migrate, async {
            let failed = |error| backend(Operation::Migrate, error);
            let mut transaction = self.pool.begin().await.map_err(failed)?;
            sqlx::query(MIGRATE_LOCK)
                .bind(self.table.to_string())
                .execute(&mut *transaction)
                .await
                .map_err(failed)?;
            let exists: bool = sqlx::query_scalar("SELECT to_regclass($1) IS NOT NULL")
                .bind(self.table.quoted())
                .fetch_one(&mut *transaction)
                .await
                .map_err(failed)?;
            if !exists {
                if let (Some(schema), Some(create_schema)) =
                    (self.table.schema(), &self.statements.create_schema)
                {
                    // Only when missing: CREATE SCHEMA IF NOT EXISTS needs the CREATE
                    // privilege on the database even when the schema is there.
                    let schema_exists: bool = sqlx::query_scalar(
                        "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = $1)",
                    )
                    .bind(schema)
                    .fetch_one(&mut *transaction)
                    .await
                    .map_err(failed)?;
                    if !schema_exists {
                        sqlx::query(sql(create_schema))
                            .execute(&mut *transaction)
                            .await
                            .map_err(failed)?;
                    }
                }
                sqlx::query(sql(&self.statements.create_table))
                    .execute(&mut *transaction)
                    .await
                    .map_err(failed)?;
            }
            transaction.commit().await.map_err(failed)
        })
        .await
    }

    /// [`load`](CheckpointStore::load) on the caller's connection or transaction.
    ///
    /// # Errors
    ///
    /// As [`load`](CheckpointStore::load).
    pub async fn load_in(
        &self,
        connection: &mut PgConnection,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> Result<Option<u64>, Error> {
        self.load_on(connection, group, subscription, partition)
            .await
    }

    /// [`list`](CheckpointStore::list) on the caller's connection or transaction.
    ///
    /// # Errors
    ///
    /// As [`list`](CheckpointStore::list).
    pub async fn list_in(
        &self,
        connection: &mut PgConnection,
        group: &str,
    ) -> Result<Vec<Checkpoint>, Error> {
        self.list_on(connection, group).await
    }

    /// [`save`](CheckpointStore::save) on the caller's connection or transaction: the
    /// checkpoint commits with whatever else the transaction writes, or not at all.
    ///
    /// # Errors
    ///
    /// As [`save`](CheckpointStore::save).
    pub async fn save_in(
        &self,
        connection: &mut PgConnection,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<(), Error> {
        self.save_on(connection, group, subscription, partition, position)
            .await
    }

    /// [`save_all`](CheckpointStore::save_all) on the caller's connection or transaction.
    ///
    /// # Errors
    ///
    /// As [`save_all`](CheckpointStore::save_all).
    pub async fn save_all_in(
        &self,
        connection: &mut PgConnection,
        group: &str,
        checkpoints: &[Checkpoint],
    ) -> Result<(), Error> {
        self.save_all_on(connection, group, checkpoints).await
    }

    /// [`claim`](ExclusiveCheckpointStore::claim) on the caller's connection or transaction.
    ///
    /// The claim locks the checkpoint's row until the transaction ends, so a second process
    /// claiming the same checkpoint waits for this one to commit or roll back.
    ///
    /// # Errors
    ///
    /// As [`claim`](ExclusiveCheckpointStore::claim).
    pub async fn claim_in(
        &self,
        connection: &mut PgConnection,
        group: &str,
        subscription: &str,
        partition: u32,
        fingerprint: Fingerprint,
        initial_position: u64,
    ) -> Result<u64, Error> {
        self.claim_on(
            connection,
            group,
            subscription,
            partition,
            fingerprint,
            initial_position,
        )
        .await
    }

    /// [`advance`](ExclusiveCheckpointStore::advance) on the caller's connection or
    /// transaction: run it in the transaction that writes the batch's read model, so that the
    /// read model and its position commit together or not at all. On
    /// [`Error::Moved`] roll the transaction back: another process has projected the batch.
    ///
    /// # Errors
    ///
    /// As [`advance`](ExclusiveCheckpointStore::advance).
    pub async fn advance_in(
        &self,
        connection: &mut PgConnection,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
    ) -> Result<(), Error> {
        self.advance_on(connection, group, subscription, partition, from, to)
            .await
    }

    /// Runs `operation` under the configured timeout, if any.
    async fn timed<T>(
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

    #[tracing::instrument(
        name = "checkpoint_postgres::load",
        level = "debug",
        skip(self, executor),
        fields(table = %self.table)
    )]
    async fn load_on<'e>(
        &self,
        executor: impl PgExecutor<'e>,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> Result<Option<u64>, Error> {
        validate_key(group, subscription)?;
        self.timed(Operation::Load, async {
            let stored: Option<i64> = sqlx::query_scalar(sql(&self.statements.load))
                .bind(group)
                .bind(subscription)
                .bind(i64::from(partition))
                .fetch_optional(executor)
                .await
                .map_err(|error| backend(Operation::Load, error))?;
            stored
                .map(|position| position_from_db(Operation::Load, position))
                .transpose()
        })
        .await
    }

    #[tracing::instrument(
        name = "checkpoint_postgres::list",
        level = "debug",
        skip(self, executor),
        fields(table = %self.table, count)
    )]
    async fn list_on<'e>(
        &self,
        executor: impl PgExecutor<'e>,
        group: &str,
    ) -> Result<Vec<Checkpoint>, Error> {
        validate_group(group)?;
        self.timed(Operation::List, async {
            let rows: Vec<(String, i64, i64)> = sqlx::query_as(sql(&self.statements.list))
                .bind(group)
                .fetch_all(executor)
                .await
                .map_err(|error| backend(Operation::List, error))?;
            tracing::Span::current().record("count", rows.len());
            rows.into_iter()
                .map(|(subscription, partition, position)| {
                    Ok(Checkpoint::new(
                        subscription,
                        partition_from_db(Operation::List, partition)?,
                        position_from_db(Operation::List, position)?,
                    ))
                })
                .collect()
        })
        .await
    }

    #[tracing::instrument(
        name = "checkpoint_postgres::save",
        level = "debug",
        skip(self, executor),
        fields(table = %self.table)
    )]
    async fn save_on<'e>(
        &self,
        executor: impl PgExecutor<'e>,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<(), Error> {
        validate_save(group, subscription, position)?;
        self.timed(Operation::Save, async {
            sqlx::query(sql(&self.statements.save))
                .bind(group)
                .bind(subscription)
                .bind(i64::from(partition))
                .bind(position_to_db(position))
                .execute(executor)
                .await
                .map_err(|error| backend(Operation::Save, error))?;
            Ok(())
        })
        .await
    }

    #[tracing::instrument(
        name = "checkpoint_postgres::save_all",
        level = "debug",
        skip(self, executor, checkpoints),
        fields(table = %self.table, batch_size = checkpoints.len(), distinct_keys)
    )]
    async fn save_all_on<'e>(
        &self,
        executor: impl PgExecutor<'e>,
        group: &str,
        checkpoints: &[Checkpoint],
    ) -> Result<(), Error> {
        validate_batch(group, checkpoints)?;
        if checkpoints.is_empty() {
            return Ok(());
        }
        // One entry per key (ON CONFLICT may not touch a row twice in one statement), sorted
        // by key (every batch locks its rows in the same order, so batches cannot deadlock).
        let batch = highest_per_key(checkpoints);
        tracing::Span::current().record("distinct_keys", batch.len());
        let mut subscriptions = Vec::with_capacity(batch.len());
        let mut partitions = Vec::with_capacity(batch.len());
        let mut positions = Vec::with_capacity(batch.len());
        for checkpoint in batch {
            subscriptions.push(checkpoint.subscription);
            partitions.push(i64::from(checkpoint.partition));
            positions.push(position_to_db(checkpoint.position));
        }
        self.timed(Operation::SaveAll, async {
            sqlx::query(sql(&self.statements.save_all))
                .bind(group)
                .bind(subscriptions)
                .bind(partitions)
                .bind(positions)
                .execute(executor)
                .await
                .map_err(|error| backend(Operation::SaveAll, error))?;
            Ok(())
        })
        .await
    }

    #[tracing::instrument(
        name = "checkpoint_postgres::claim",
        level = "debug",
        skip(self, executor),
        fields(table = %self.table)
    )]
    async fn claim_on<'e>(
        &self,
        executor: impl PgExecutor<'e>,
        group: &str,
        subscription: &str,
        partition: u32,
        fingerprint: Fingerprint,
        initial_position: u64,
    ) -> Result<u64, Error> {
        validate_claim(group, subscription, initial_position)?;
        self.timed(Operation::Claim, async {
            let (position, stored): (i64, Option<Vec<u8>>) =
                sqlx::query_as(sql(&self.statements.claim))
                    .bind(group)
                    .bind(subscription)
                    .bind(i64::from(partition))
                    .bind(position_to_db(initial_position))
                    .bind(fingerprint.as_bytes().as_slice())
                    .fetch_one(executor)
                    .await
                    .map_err(|error| backend(Operation::Claim, error))?;
            // The statement stores the requested fingerprint when there was none, so NULL
            // cannot come back; treat it as a broken table rather than as a match.
            let stored = stored
                .as_deref()
                .and_then(Fingerprint::from_slice)
                .ok_or_else(|| {
                    unexpected(
                        Operation::Claim,
                        "query_fingerprint",
                        format!(
                            "{} bytes instead of 32",
                            stored.as_ref().map_or(0, Vec::len)
                        ),
                    )
                })?;
            if stored != fingerprint {
                return Err(Error::QueryChanged {
                    stored,
                    requested: fingerprint,
                });
            }
            position_from_db(Operation::Claim, position)
        })
        .await
    }

    #[tracing::instrument(
        name = "checkpoint_postgres::advance",
        level = "debug",
        skip(self, executor),
        fields(table = %self.table)
    )]
    async fn advance_on<'e>(
        &self,
        executor: impl PgExecutor<'e>,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
    ) -> Result<(), Error> {
        validate_advance(group, subscription, from, to)?;
        self.timed(Operation::Advance, async {
            let (advanced, current): (i64, Option<i64>) =
                sqlx::query_as(sql(&self.statements.advance))
                    .bind(group)
                    .bind(subscription)
                    .bind(i64::from(partition))
                    .bind(position_to_db(from))
                    .bind(position_to_db(to))
                    .fetch_one(executor)
                    .await
                    .map_err(|error| backend(Operation::Advance, error))?;
            if advanced == 1 {
                return Ok(());
            }
            Err(Error::Moved {
                expected: from,
                current: current
                    .map(|position| position_from_db(Operation::Advance, position))
                    .transpose()?,
            })
        })
        .await
    }
}

// On the pool, an idempotent operation that fails because its pooled connection had died
// (the server restarted, or cut the connection while it sat idle) is run once more on a
// connection checked to be alive, so the first call after a restart does not fail for
// connections that were already gone. `advance` is not retried: if the connection died after
// the server had committed it, a second attempt would report `Moved` for the caller's own
// advance.
#[async_trait]
impl CheckpointStore for PostgresCheckpointStore {
    async fn list(&self, group: &str) -> Result<Vec<Checkpoint>, Error> {
        match self.list_on(&self.pool, group).await {
            Err(error) if connection_lost(&error) => {
                let mut connection = self.live_connection(Operation::List, error).await?;
                self.list_on(&mut *connection, group).await
            }
            result => result,
        }
    }

    async fn load(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> Result<Option<u64>, Error> {
        match self
            .load_on(&self.pool, group, subscription, partition)
            .await
        {
            Err(error) if connection_lost(&error) => {
                let mut connection = self.live_connection(Operation::Load, error).await?;
                self.load_on(&mut *connection, group, subscription, partition)
                    .await
            }
            result => result,
        }
    }

    async fn save(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<(), Error> {
        match self
            .save_on(&self.pool, group, subscription, partition, position)
            .await
        {
            Err(error) if connection_lost(&error) => {
                let mut connection = self.live_connection(Operation::Save, error).await?;
                self.save_on(&mut *connection, group, subscription, partition, position)
                    .await
            }
            result => result,
        }
    }

    async fn save_all(&self, group: &str, checkpoints: &[Checkpoint]) -> Result<(), Error> {
        match self.save_all_on(&self.pool, group, checkpoints).await {
            Err(error) if connection_lost(&error) => {
                let mut connection = self.live_connection(Operation::SaveAll, error).await?;
                self.save_all_on(&mut *connection, group, checkpoints).await
            }
            result => result,
        }
    }
}

#[async_trait]
impl ExclusiveCheckpointStore for PostgresCheckpointStore {
    async fn claim(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        fingerprint: Fingerprint,
        initial_position: u64,
    ) -> Result<u64, Error> {
        match self
            .claim_on(
                &self.pool,
                group,
                subscription,
                partition,
                fingerprint,
                initial_position,
            )
            .await
        {
            Err(error) if connection_lost(&error) => {
                let mut connection = self.live_connection(Operation::Claim, error).await?;
                self.claim_on(
                    &mut *connection,
                    group,
                    subscription,
                    partition,
                    fingerprint,
                    initial_position,
                )
                .await
            }
            result => result,
        }
    }

    async fn advance(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
    ) -> Result<(), Error> {
        self.advance_on(&self.pool, group, subscription, partition, from, to)
            .await
    }
}

impl PostgresCheckpointStore {
    /// A pooled connection that answers a ping, after `lost` (the error of a call whose
    /// connection had died): every dead idle connection met on the way is closed, so the pool
    /// replaces it. Returns `lost` when no live connection can be had.
    async fn live_connection(
        &self,
        operation: Operation,
        lost: Error,
    ) -> Result<PoolConnection<Postgres>, Error> {
        tracing::debug!(error = %Chain(&lost), "connection lost, trying once more on a live one");
        self.timed(operation, async {
            // Each pass closes one dead connection; the pool never holds more than its size.
            for _ in 0..=self.pool.size() {
                let mut connection = self
                    .pool
                    .acquire()
                    .await
                    .map_err(|error| backend(operation, error))?;
                if connection.ping().await.is_ok() {
                    return Ok(connection);
                }
                connection.close().await.ok();
            }
            Err(lost)
        })
        .await
    }
}

/// A validated position as the table's `BIGINT`.
fn position_to_db(position: u64) -> i64 {
    // Validation admits only 0..=i64::MAX, so the fallback is never taken; it saturates
    // rather than wraps should that ever change.
    i64::try_from(position).unwrap_or(i64::MAX)
}

fn position_from_db(operation: Operation, position: i64) -> Result<u64, Error> {
    u64::try_from(position)
        .map_err(|_| unexpected(operation, "position", format!("{position} is negative")))
}

fn partition_from_db(operation: Operation, partition: i64) -> Result<u32, Error> {
    u32::try_from(partition).map_err(|_| {
        unexpected(
            operation,
            "partition_id",
            format!("{partition} is not a u32"),
        )
    })
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
