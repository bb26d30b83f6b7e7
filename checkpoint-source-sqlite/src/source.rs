//! [`SqliteSource`]: constructors, settings, the migration, the setup check and the append
//! helpers.

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use checkpoint_core::source::SourceError;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePool, SqlitePoolOptions,
};
use tokio::sync::{Mutex, OnceCell, mpsc, oneshot, watch};

use crate::error::{backend, other_partition_count};
use crate::table::{Statements, sql};
use crate::writer::{Request, Writer, insert};
use crate::{DEFAULT_BUSY_TIMEOUT, DEFAULT_POLL_INTERVAL, DEFAULT_TABLE};

/// A log source over an event table in an SQLite database: see the [crate documentation](crate)
/// for the schema and why no committed entry is ever skipped.
///
/// Cheap to clone: clones share the pool, the setup check and the wake-ups.
#[derive(Debug, Clone)]
pub struct SqliteSource {
    pub(crate) pool: SqlitePool,
    /// The partition count as last known: the count given, raised to the stored one by the
    /// setup check and [`discover_partitions`](checkpoint_core::source::Source::discover_partitions);
    /// shared by clones, never lowered.
    pub(crate) partitions: Arc<AtomicU32>,
    pub(crate) statements: Arc<Statements>,
    pub(crate) poll_interval: Duration,
    pub(crate) shared: Arc<Shared>,
}

/// What clones of a source share.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    /// Bumped after every append through this process's helpers, and by a waiter that saw
    /// another connection commit: every waiter of the process wakes and looks.
    pub(crate) changes: watch::Sender<u64>,
    /// Set once the table and the partition count were found as expected.
    verified: OnceCell<()>,
    /// The connection whose `PRAGMA data_version` tells whether another connection committed,
    /// and the version it saw last. One connection, because the version is per connection.
    pub(crate) watcher: Mutex<Option<(SqliteConnection, i64)>>,
    /// The queue of [`append`](SqliteSource::append)'s writer task (`writer.rs`), started by
    /// the first append; the task ends when this sender is dropped with the last clone.
    appends: OnceLock<mpsc::UnboundedSender<Request>>,
}

impl SqliteSource {
    /// A source of `partitions` partitions over the table [`DEFAULT_TABLE`] in `pool`'s
    /// database, polling other processes' appends every [`DEFAULT_POLL_INTERVAL`].
    ///
    /// Configure the pool for WAL (readers then never wait for the writer) and a busy timeout,
    /// as `checkpoint_sqlite::SqliteCheckpointStore::connect_options` does. Call
    /// [`migrate`](Self::migrate) once to create the table; every operation checks once that
    /// the table is there and was made with the same partition count.
    pub fn new(pool: SqlitePool, partitions: u32) -> Self {
        Self {
            pool,
            partitions: Arc::new(AtomicU32::new(partitions)),
            statements: Arc::new(Self::default_statements()),
            poll_interval: DEFAULT_POLL_INTERVAL,
            shared: Arc::default(),
        }
    }

    /// Opens (creating it if missing) the database file at `path` in WAL mode (readers never
    /// wait for the writer) with a busy timeout of [`DEFAULT_BUSY_TIMEOUT`], and a source of
    /// `partitions` partitions over it, as [`new`](Self::new) does. Call
    /// [`migrate`](Self::migrate) before the first append.
    ///
    /// # Errors
    ///
    /// [`SourceError::Backend`] when the file cannot be opened.
    pub async fn open(path: impl AsRef<Path>, partitions: u32) -> Result<Self, SourceError> {
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .busy_timeout(DEFAULT_BUSY_TIMEOUT);
        let pool = SqlitePoolOptions::new()
            .connect_with(options)
            .await
            .map_err(|e| backend("open", DEFAULT_TABLE, e))?;
        Ok(Self::new(pool, partitions))
    }

    fn default_statements() -> Statements {
        match Statements::for_table(DEFAULT_TABLE) {
            Ok(statements) => statements,
            // DEFAULT_TABLE is a valid name (tested): this arm is never taken.
            Err(_) => unreachable!("the default table name is valid"),
        }
    }

    /// The same source on the table `name` (and its meta table `name_meta`).
    ///
    /// # Errors
    ///
    /// [`SourceError::InvalidInput`] for `table` unless `name` matches
    /// `[A-Za-z_][A-Za-z0-9_]*`, has at most 128 bytes and does not start with `sqlite_`.
    pub fn with_table(mut self, name: &str) -> Result<Self, SourceError> {
        self.statements = Arc::new(Statements::for_table(name)?);
        self.shared = Arc::default();
        Ok(self)
    }

    /// How often [`wait`](checkpoint_core::source::Source::wait) looks for appends of other
    /// processes (and of other code on the database that does not call
    /// [`notify_appended`](Self::notify_appended)). Each look is one `PRAGMA data_version`;
    /// the table is read only when it changed.
    ///
    /// # Errors
    ///
    /// [`SourceError::InvalidInput`] for `poll_interval` when it is zero: that is a busy loop.
    pub fn with_poll_interval(mut self, interval: Duration) -> Result<Self, SourceError> {
        if interval.is_zero() {
            return Err(SourceError::InvalidInput {
                argument: "poll_interval",
                reason: "a zero interval would poll in a busy loop".into(),
            });
        }
        self.poll_interval = interval;
        Ok(self)
    }

    /// The partition count as last known (see [`grow_to`](Self::grow_to)).
    pub(crate) fn count(&self) -> u32 {
        self.partitions.load(Ordering::Acquire)
    }

    /// Raises the count this source knows to `stored` (never lowers it).
    pub(crate) fn raise_count(&self, stored: u32) {
        self.partitions.fetch_max(stored, Ordering::AcqRel);
    }

    /// The event table's name.
    pub fn table(&self) -> &str {
        &self.statements.name
    }

    /// The pool, for a transaction of your own with [`append_in`](Self::append_in).
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// Creates the event table and its meta table unless they exist, and stores the partition
    /// count in the meta table the first time. Idempotent, and safe when several processes
    /// start at once.
    ///
    /// # Errors
    ///
    /// [`SourceError::InvalidInput`] for zero partitions; [`SourceError::Setup`] when the
    /// table has fewer partitions than this source (grow it with
    /// [`grow_to`](Self::grow_to)); [`SourceError::Backend`] when SQLite fails. A table
    /// with more (the log grew) is taken as it is.
    pub async fn migrate(&self) -> Result<(), SourceError> {
        if self.count() == 0 {
            return Err(SourceError::InvalidInput {
                argument: "partitions",
                reason: "a log needs at least one partition".into(),
            });
        }
        let table = self.table();
        let mut tx = self
            .pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(|e| backend("migrate", table, e))?;
        sqlx::raw_sql(sql(&self.statements.schema))
            .execute(&mut *tx)
            .await
            .map_err(|e| backend("migrate", table, e))?;
        sqlx::query(sql(&self.statements.store_partitions))
            .bind(i64::from(self.count()))
            .execute(&mut *tx)
            .await
            .map_err(|e| backend("migrate", table, e))?;
        tx.commit()
            .await
            .map_err(|e| backend("migrate", table, e))?;
        self.verify().await
    }

    /// Checks, once per source, that the table is there with this partition count.
    pub(crate) async fn ensure_setup(&self) -> Result<(), SourceError> {
        self.shared
            .verified
            .get_or_try_init(|| self.verify())
            .await
            .map(drop)
    }

    /// Checks the stored count against this source's: a stored count above it is a log that
    /// grew (the source takes it), one below it a source opened with more partitions than
    /// the log has (refused: grow the log first).
    async fn verify(&self) -> Result<(), SourceError> {
        let stored = self.stored_partitions("setup").await?;
        if stored < self.count() {
            return Err(other_partition_count(self.table(), stored, self.count()));
        }
        self.raise_count(stored);
        Ok(())
    }

    /// Appends `payload` (under `key`) to `partition` at the position after the partition's
    /// last, and returns that position once the entry is committed. Readers in this process
    /// that [`wait`](checkpoint_core::source::Source::wait) wake at once; other processes'
    /// within their poll interval.
    ///
    /// The appends of this source (and its clones) that wait at the same moment are committed
    /// together, by one task, in one `BEGIN IMMEDIATE` transaction: one write lock and one
    /// `fsync` for all of them instead of one each, one after another (group commit; see
    /// `writer.rs`). Each still fails only for its own reason: a batch that fails is tried
    /// again one append at a time. An append whose caller is cancelled may still be committed,
    /// as one in a transaction of its own may be.
    ///
    /// # Errors
    ///
    /// [`SourceError::PartitionOutOfRange`], [`SourceError::Setup`] when the table is not set
    /// up, [`SourceError::Backend`] when SQLite fails (retryable when the write lock was held
    /// past the busy timeout).
    pub async fn append(
        &self,
        partition: u32,
        key: Option<&str>,
        payload: &[u8],
    ) -> Result<u64, SourceError> {
        SourceError::check_partition(partition, self.count())?;
        self.ensure_setup().await?;
        let (reply, committed) = oneshot::channel();
        let request = Request {
            partition,
            key: key.map(str::to_owned),
            payload: payload.to_vec(),
            reply,
        };
        let gone = || SourceError::Backend {
            backend: crate::BACKEND,
            operation: "append",
            retryable: true,
            source: "the source's writer task ended (its runtime is shutting down)".into(),
        };
        self.appends().send(request).map_err(|_| gone())?;
        committed.await.map_err(|_| gone())?
    }

    /// The writer task's queue, starting the task at the first append.
    fn appends(&self) -> &mpsc::UnboundedSender<Request> {
        self.shared.appends.get_or_init(|| {
            let (sender, requests) = mpsc::unbounded_channel();
            let writer = Writer {
                pool: self.pool.clone(),
                statements: Arc::clone(&self.statements),
                changes: self.shared.changes.clone(),
            };
            tokio::spawn(writer.run(requests));
            sender
        })
    }

    /// Appends `payload` (under `key`) to `partition` on the caller's connection, normally
    /// inside the caller's transaction, so the entry commits with whatever else it writes; and
    /// returns its position. Begin that transaction with `BEGIN IMMEDIATE`
    /// (`connection.begin_with("BEGIN IMMEDIATE")`), so it takes the write lock at once rather
    /// than failing to upgrade a read. After the commit, call
    /// [`notify_appended`](Self::notify_appended) to wake this process's readers at once
    /// (otherwise they see it within their poll interval).
    ///
    /// # Errors
    ///
    /// As [`append`](Self::append). After an error, roll the transaction back.
    pub async fn append_in(
        &self,
        connection: &mut SqliteConnection,
        partition: u32,
        key: Option<&str>,
        payload: &[u8],
    ) -> Result<u64, SourceError> {
        SourceError::check_partition(partition, self.count())?;
        self.ensure_setup().await?;
        insert(connection, &self.statements, partition, key, payload).await
    }

    /// Wakes every reader of this process waiting on this source (or a clone): call it after
    /// committing a transaction that used [`append_in`](Self::append_in).
    pub fn notify_appended(&self) {
        self.shared.changes.send_modify(|changes| *changes += 1);
    }
}
