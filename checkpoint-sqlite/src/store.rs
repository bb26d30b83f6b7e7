//! [`SqliteCheckpointStore`]: constructors, the monotonic and exclusive operations, and their
//! variants on the caller's own connection or transaction.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use checkpoint_core::validation::{
    validate_advance, validate_batch, validate_claim, validate_group, validate_key, validate_save,
};
use checkpoint_core::{
    Checkpoint, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint, Operation,
};
use sqlx::Executor;
use sqlx::sqlite::{
    Sqlite, SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePool,
    SqlitePoolOptions, SqliteSynchronous,
};

use crate::error::{backend, is_busy, unexpected};
use crate::sql::{Statements, TableName, safe};

pub use crate::sql::DEFAULT_TABLE;

/// How long a connection waits for another connection's write lock before failing with
/// `SQLITE_BUSY` (a retryable error), in [`SqliteCheckpointStore::connect_options`].
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The size of the pool [`SqliteCheckpointStore::open`] creates. Writers take turns on one
/// lock whatever the size; more connections only let more reads run beside a write.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 8;

/// An advance retries its compare-and-set at most this many times, and only when the
/// checkpoint reached `from` between its update and its read (see [`SqliteCheckpointStore::advance`]).
const ADVANCE_ATTEMPTS: usize = 3;

/// A durable checkpoint store in one SQLite database file.
///
/// Cheap to clone: clones share the pool. See the [crate documentation](crate) for the schema,
/// the durability settings and use from several processes.
#[derive(Debug, Clone)]
pub struct SqliteCheckpointStore {
    pool: SqlitePool,
    table: TableName,
    sql: Arc<Statements>,
}

impl SqliteCheckpointStore {
    /// A store over a pool the caller already has, on the table [`DEFAULT_TABLE`].
    ///
    /// The pool's own settings apply. For durability and for use by several processes,
    /// configure it as [`connect_options`](Self::connect_options) does: WAL,
    /// `synchronous = FULL` and a busy timeout. (sqlx's defaults already have
    /// `synchronous = FULL` and a 5 s busy timeout, but leave a new file in rollback-journal
    /// mode, where readers and the writer block each other.) Call [`migrate`](Self::migrate)
    /// once before use.
    pub fn new(pool: SqlitePool) -> Self {
        let table = TableName::default_table();
        let sql = Arc::new(Statements::for_table(&table));
        Self { pool, table, sql }
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
    /// [`DEFAULT_BUSY_TIMEOUT`].
    #[tracing::instrument(name = "checkpoint_sqlite.open", skip_all, err(Debug))]
    pub async fn open_with(options: SqliteConnectOptions) -> Result<Self, Error> {
        let started = Instant::now();
        let mut pause = Duration::from_millis(5);
        loop {
            let connected = SqlitePoolOptions::new()
                .max_connections(DEFAULT_MAX_CONNECTIONS)
                .connect_with(options.clone())
                .await;
            match connected {
                Ok(pool) => return Ok(Self::new(pool)),
                Err(error) if is_busy(&error) && started.elapsed() < DEFAULT_BUSY_TIMEOUT => {
                    tracing::debug!(?error, "database busy while opening; retrying");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(100));
                }
                Err(error) => return Err(backend(Operation::Connect, error)),
            }
        }
    }

    /// The same store on the table `name` instead of [`DEFAULT_TABLE`].
    ///
    /// `name` must match `[A-Za-z_][A-Za-z0-9_]*`, have at most 128 bytes and not start with
    /// `sqlite_`; anything else fails with [`Error::InvalidInput`] for
    /// [`Argument::Setting("table")`](checkpoint_core::Argument::Setting) with
    /// [`InvalidReason::Malformed`](checkpoint_core::InvalidReason::Malformed). It is used
    /// quoted, so SQL keywords are fine.
    pub fn with_table(self, name: &str) -> Result<Self, Error> {
        let table = TableName::parse(name)?;
        let sql = Arc::new(Statements::for_table(&table));
        Ok(Self {
            pool: self.pool,
            table,
            sql,
        })
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

    /// Creates the table if it does not exist (see the [crate documentation](crate) for its
    /// definition). Idempotent, and safe when several processes start at once: the statement
    /// takes the write lock, and whoever comes second finds the table there.
    ///
    /// It does not alter an existing table of the same name.
    #[tracing::instrument(name = "checkpoint_sqlite.migrate", skip_all, fields(table = self.table()), err(Debug))]
    pub async fn migrate(&self) -> Result<(), Error> {
        sqlx::query(safe(&self.sql.schema))
            .execute(&self.pool)
            .await
            .map_err(|error| backend(Operation::Migrate, error))?;
        Ok(())
    }

    /// [`save`](CheckpointStore::save) on the caller's connection or transaction (pass
    /// `&mut *tx`), so that a read model and its checkpoint commit together or not at all.
    ///
    /// Inside a transaction begun with a plain `BEGIN` that has already read, SQLite may fail
    /// the write at once with `SQLITE_BUSY` (retryable) if another connection wrote since that
    /// read; begin with `BEGIN IMMEDIATE` to take the write lock up front instead.
    #[tracing::instrument(
        name = "checkpoint_sqlite.save_in",
        skip_all,
        fields(table = self.table(), group = group, subscription = subscription, partition = partition, position = position),
    )]
    pub async fn save_in(
        &self,
        conn: &mut SqliteConnection,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<(), Error> {
        validate_save(group, subscription, position)?;
        self.run_save(&mut *conn, group, subscription, partition, position)
            .await
    }

    /// [`save_all`](CheckpointStore::save_all) on the caller's connection or transaction: one
    /// statement, whatever the size of the batch.
    #[tracing::instrument(
        name = "checkpoint_sqlite.save_all_in",
        skip_all,
        fields(table = self.table(), group = group, batch_size = checkpoints.len()),
    )]
    pub async fn save_all_in(
        &self,
        conn: &mut SqliteConnection,
        group: &str,
        checkpoints: &[Checkpoint],
    ) -> Result<(), Error> {
        validate_batch(group, checkpoints)?;
        self.run_save_all(&mut *conn, group, checkpoints).await
    }

    /// [`claim`](ExclusiveCheckpointStore::claim) on the caller's connection or transaction.
    #[tracing::instrument(
        name = "checkpoint_sqlite.claim_in",
        skip_all,
        fields(table = self.table(), group = group, subscription = subscription, partition = partition),
    )]
    pub async fn claim_in(
        &self,
        conn: &mut SqliteConnection,
        group: &str,
        subscription: &str,
        partition: u32,
        fingerprint: Fingerprint,
        initial_position: u64,
    ) -> Result<u64, Error> {
        validate_claim(group, subscription, initial_position)?;
        self.run_claim(
            &mut *conn,
            group,
            subscription,
            partition,
            fingerprint,
            initial_position,
        )
        .await
    }

    /// [`advance`](ExclusiveCheckpointStore::advance) on the caller's connection or
    /// transaction: the projection's read model and its position commit together or not at
    /// all, and of two processes projecting under one name, the second to reach this call
    /// gets [`Error::Moved`] and should roll back.
    ///
    /// Inside a transaction, the compare-and-set takes SQLite's write lock and holds it until
    /// the transaction ends, so other writers of the same database wait for the commit (up to
    /// their busy timeout). Keep such transactions short.
    #[tracing::instrument(
        name = "checkpoint_sqlite.advance_in",
        skip_all,
        fields(table = self.table(), group = group, subscription = subscription, partition = partition, from = from, to = to),
    )]
    pub async fn advance_in(
        &self,
        conn: &mut SqliteConnection,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
    ) -> Result<(), Error> {
        validate_advance(group, subscription, from, to)?;
        self.run_advance(conn, group, subscription, partition, from, to)
            .await
    }

    async fn run_load<'c, E>(
        &self,
        executor: E,
        operation: Operation,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> Result<Option<u64>, Error>
    where
        E: Executor<'c, Database = Sqlite>,
    {
        let stored: Option<i64> = sqlx::query_scalar(safe(&self.sql.load))
            .bind(group)
            .bind(subscription)
            .bind(i64::from(partition))
            .fetch_optional(executor)
            .await
            .map_err(|error| backend(operation, error))?;
        stored
            .map(|position| stored_position(operation, position))
            .transpose()
    }

    async fn run_save<'c, E>(
        &self,
        executor: E,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<(), Error>
    where
        E: Executor<'c, Database = Sqlite>,
    {
        sqlx::query(safe(&self.sql.save))
            .bind(group)
            .bind(subscription)
            .bind(i64::from(partition))
            .bind(sql_position(position))
            .execute(executor)
            .await
            .map_err(|error| backend(Operation::Save, error))?;
        Ok(())
    }

    async fn run_save_all<'c, E>(
        &self,
        executor: E,
        group: &str,
        checkpoints: &[Checkpoint],
    ) -> Result<(), Error>
    where
        E: Executor<'c, Database = Sqlite>,
    {
        if checkpoints.is_empty() {
            return Ok(());
        }
        // Repeated keys are collapsed to their highest position first, which is what saving
        // them one by one would leave. SQLite's upsert would also accept a row twice in one
        // statement (PostgreSQL's refuses), but collapsing writes each row once and keeps the
        // parameter small.
        let batch = batch_json(&checkpoint_core::batch::highest_per_key(checkpoints));
        sqlx::query(safe(&self.sql.save_all))
            .bind(group)
            .bind(batch)
            .execute(executor)
            .await
            .map_err(|error| backend(Operation::SaveAll, error))?;
        Ok(())
    }

    async fn run_claim<'c, E>(
        &self,
        executor: E,
        group: &str,
        subscription: &str,
        partition: u32,
        fingerprint: Fingerprint,
        initial_position: u64,
    ) -> Result<u64, Error>
    where
        E: Executor<'c, Database = Sqlite>,
    {
        let (position, stored): (i64, Option<Vec<u8>>) = sqlx::query_as(safe(&self.sql.claim))
            .bind(group)
            .bind(subscription)
            .bind(i64::from(partition))
            .bind(sql_position(initial_position))
            .bind(fingerprint.as_bytes().as_slice())
            .fetch_one(executor)
            .await
            .map_err(|error| backend(Operation::Claim, error))?;
        let position = stored_position(Operation::Claim, position)?;
        // COALESCE with the claim's fingerprint never yields NULL, and this store only writes
        // 32-byte fingerprints: anything else was written by someone else.
        let stored = stored
            .ok_or_else(|| unexpected(Operation::Claim, "query_fingerprint", "NULL".to_owned()))?;
        let stored = Fingerprint::from_slice(&stored).ok_or_else(|| {
            unexpected(
                Operation::Claim,
                "query_fingerprint",
                format!("a blob of {} bytes", stored.len()),
            )
        })?;
        if stored != fingerprint {
            return Err(Error::QueryChanged {
                stored,
                requested: fingerprint,
            });
        }
        Ok(position)
    }

    async fn run_advance(
        &self,
        conn: &mut SqliteConnection,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
    ) -> Result<(), Error> {
        let mut current = None;
        for _ in 0..ADVANCE_ATTEMPTS {
            let changed = sqlx::query(safe(&self.sql.advance))
                .bind(group)
                .bind(subscription)
                .bind(i64::from(partition))
                .bind(sql_position(from))
                .bind(sql_position(to))
                .execute(&mut *conn)
                .await
                .map_err(|error| backend(Operation::Advance, error))?
                .rows_affected();
            if changed > 0 {
                return Ok(());
            }
            // SQLite's RETURNING sees only the new row, so the failed compare-and-set cannot
            // also say where the checkpoint is: a second statement reads it. On an embedded
            // database that costs no network round trip.
            current = self
                .run_load(
                    &mut *conn,
                    Operation::Advance,
                    group,
                    subscription,
                    partition,
                )
                .await?;
            if current != Some(from) {
                return Err(Error::Moved {
                    expected: from,
                    current,
                });
            }
            // Another writer moved the checkpoint up to `from` between the two statements
            // (positions only move forward, so this happens at most once): the
            // compare-and-set may succeed now.
        }
        Err(Error::Moved {
            expected: from,
            current,
        })
    }
}

#[async_trait]
impl CheckpointStore for SqliteCheckpointStore {
    #[tracing::instrument(name = "checkpoint_sqlite.list", skip_all, fields(table = self.table(), group = group))]
    async fn list(&self, group: &str) -> Result<Vec<Checkpoint>, Error> {
        validate_group(group)?;
        let rows: Vec<(String, i64, i64)> = sqlx::query_as(safe(&self.sql.list))
            .bind(group)
            .fetch_all(&self.pool)
            .await
            .map_err(|error| backend(Operation::List, error))?;
        rows.into_iter()
            .map(|(subscription, partition, position)| {
                let partition = u32::try_from(partition).map_err(|_| {
                    unexpected(Operation::List, "partition_id", partition.to_string())
                })?;
                let position = stored_position(Operation::List, position)?;
                Ok(Checkpoint::new(subscription, partition, position))
            })
            .collect()
    }

    #[tracing::instrument(
        name = "checkpoint_sqlite.load",
        skip_all,
        fields(table = self.table(), group = group, subscription = subscription, partition = partition),
    )]
    async fn load(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> Result<Option<u64>, Error> {
        validate_key(group, subscription)?;
        self.run_load(&self.pool, Operation::Load, group, subscription, partition)
            .await
    }

    #[tracing::instrument(
        name = "checkpoint_sqlite.save",
        skip_all,
        fields(table = self.table(), group = group, subscription = subscription, partition = partition, position = position),
    )]
    async fn save(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<(), Error> {
        validate_save(group, subscription, position)?;
        self.run_save(&self.pool, group, subscription, partition, position)
            .await
    }

    #[tracing::instrument(
        name = "checkpoint_sqlite.save_all",
        skip_all,
        fields(table = self.table(), group = group, batch_size = checkpoints.len()),
    )]
    async fn save_all(&self, group: &str, checkpoints: &[Checkpoint]) -> Result<(), Error> {
        validate_batch(group, checkpoints)?;
        self.run_save_all(&self.pool, group, checkpoints).await
    }
}

#[async_trait]
impl ExclusiveCheckpointStore for SqliteCheckpointStore {
    #[tracing::instrument(
        name = "checkpoint_sqlite.claim",
        skip_all,
        fields(table = self.table(), group = group, subscription = subscription, partition = partition),
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
        self.run_claim(
            &self.pool,
            group,
            subscription,
            partition,
            fingerprint,
            initial_position,
        )
        .await
    }

    /// The compare-and-set is one `UPDATE`. Only when it changes nothing does a second
    /// statement read where the checkpoint is, for [`Error::Moved`]; both run on one pooled
    /// connection.
    #[tracing::instrument(
        name = "checkpoint_sqlite.advance",
        skip_all,
        fields(table = self.table(), group = group, subscription = subscription, partition = partition, from = from, to = to),
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
        let mut conn = self
            .pool
            .acquire()
            .await
            .map_err(|error| backend(Operation::Advance, error))?;
        self.run_advance(&mut conn, group, subscription, partition, from, to)
            .await
    }
}

/// A validated position as SQLite's signed 64-bit INTEGER.
///
/// Every caller has validated it (`0..=i64::MAX`), so the conversion is exact; saturating
/// keeps this total without a panic path.
fn sql_position(position: u64) -> i64 {
    i64::try_from(position).unwrap_or(i64::MAX)
}

/// A stored position back as `u64`; negative values are never written by this store.
fn stored_position(operation: Operation, position: i64) -> Result<u64, Error> {
    u64::try_from(position).map_err(|_| unexpected(operation, "position", position.to_string()))
}

/// The batch as one JSON array of `[subscription, partition, position]` triples, the single
/// parameter the `save_all` statement expands with `json_each`.
fn batch_json(checkpoints: &[Checkpoint]) -> String {
    let mut json = String::with_capacity(2 + checkpoints.len() * 48);
    json.push('[');
    for (index, checkpoint) in checkpoints.iter().enumerate() {
        if index > 0 {
            json.push(',');
        }
        json.push('[');
        push_json_string(&mut json, &checkpoint.subscription);
        json.push(',');
        json.push_str(&checkpoint.partition.to_string());
        json.push(',');
        json.push_str(&checkpoint.position.to_string());
        json.push(']');
    }
    json.push(']');
    json
}

/// Appends `text` as a JSON string: quotes, backslashes and control characters escaped,
/// everything else (any Unicode) as it is, which JSON allows and SQLite decodes back exactly.
fn push_json_string(json: &mut String, text: &str) {
    json.push('"');
    for character in text.chars() {
        match character {
            '"' => json.push_str("\\\""),
            '\\' => json.push_str("\\\\"),
            control if u32::from(control) < 0x20 => {
                json.push_str(&format!("\\u{:04x}", u32::from(control)));
            }
            other => json.push(other),
        }
    }
    json.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_json_escapes_what_json_requires() {
        let batch = [
            Checkpoint::new("plain", 0, 1),
            Checkpoint::new(
                "quote\" back\\slash\n\u{1}tab\t😀",
                u32::MAX,
                i64::MAX as u64,
            ),
        ];
        assert_eq!(
            batch_json(&batch),
            "[[\"plain\",0,1],[\"quote\\\" back\\\\slash\\u000a\\u0001tab\\u0009😀\",4294967295,9223372036854775807]]"
        );
        assert_eq!(batch_json(&[]), "[]");
    }
}
