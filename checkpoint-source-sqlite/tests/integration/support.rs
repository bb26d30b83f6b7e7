//! A source on a fresh temporary database file, and its writer for the source kit.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use checkpoint_conformance::sources::{LogTransaction, SourceLog};
use checkpoint_core::source::SourceError;
use checkpoint_source_sqlite::SqliteSource;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};
use sqlx::{Sqlite, Transaction};

/// A database file path under the system's temporary directory, unique to this process and
/// call, removed (with its `-wal` and `-shm` files) on drop.
#[derive(Debug)]
pub struct TempDb {
    path: PathBuf,
}

impl TempDb {
    pub fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|elapsed| elapsed.as_nanos())
            .unwrap_or_default();
        let path = std::env::temp_dir().join(format!(
            "checkpoint-source-sqlite-test-{}-{}-{nanos}.db",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed),
        ));
        Self { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut path = self.path.clone().into_os_string();
            path.push(suffix);
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A pool on the file at `path` as a service would open it: WAL, a busy timeout long enough
/// for the kit's longest transaction, enough connections for its writers and readers.
pub async fn pool(path: &Path) -> SqlitePool {
    let options = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .busy_timeout(Duration::from_secs(10));
    SqlitePoolOptions::new()
        .max_connections(16)
        .connect_with(options)
        .await
        .expect("opening a temporary SQLite database")
}

/// A migrated source of `partitions` partitions on `path`.
pub async fn source(path: &Path, partitions: u32) -> SqliteSource {
    let source = SqliteSource::new(pool(path).await, partitions);
    source.migrate().await.expect("creating the event table");
    source
}

/// The source kit's log: a migrated source on a file of its own, written through
/// `append_in` in `BEGIN IMMEDIATE` transactions.
pub struct SqliteLog {
    source: SqliteSource,
    _db: TempDb,
}

pub async fn log() -> SqliteLog {
    let db = TempDb::new();
    SqliteLog {
        source: source(db.path(), 3).await,
        _db: db,
    }
}

struct SqliteTransaction {
    source: SqliteSource,
    tx: Transaction<'static, Sqlite>,
}

fn failed(error: sqlx::Error) -> SourceError {
    SourceError::Backend {
        backend: "sqlite",
        operation: "append",
        retryable: false,
        source: Box::new(error),
    }
}

#[async_trait]
impl SourceLog for SqliteLog {
    type Source = SqliteSource;

    fn source(&self) -> &SqliteSource {
        &self.source
    }

    fn grows(&self) -> bool {
        true
    }

    /// Through a source of its own on the same file, as another process would: the source
    /// under test must find the new count itself.
    async fn grow(&self, partitions: u32) -> Result<(), SourceError> {
        SqliteSource::new(self.source.pool().clone(), 1)
            .grow_to(partitions)
            .await
            .map(drop)
    }

    async fn begin(&self) -> Result<Box<dyn LogTransaction + '_>, SourceError> {
        let tx = self
            .source
            .pool()
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(failed)?;
        Ok(Box::new(SqliteTransaction {
            source: self.source.clone(),
            tx,
        }))
    }
}

#[async_trait]
impl LogTransaction for SqliteTransaction {
    async fn append(
        &mut self,
        partition: u32,
        key: &str,
        payload: &[u8],
    ) -> Result<(), SourceError> {
        self.source
            .append_in(&mut self.tx, partition, Some(key), payload)
            .await
            .map(drop)
    }

    async fn commit(self: Box<Self>) -> Result<(), SourceError> {
        self.tx.commit().await.map_err(failed)?;
        self.source.notify_appended();
        Ok(())
    }

    async fn rollback(self: Box<Self>) -> Result<(), SourceError> {
        self.tx.rollback().await.map_err(failed)
    }
}
