//! A store on a fresh temporary database file, and helpers shared by the tests.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use checkpoint_core::{Checkpoint, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint};
use checkpoint_sqlite::SqliteCheckpointStore;

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
            "checkpoint-sqlite-test-{}-{}-{nanos}.db",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed),
        ));
        Self { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A store on this file, opened with the recommended settings and migrated.
    pub async fn store(&self) -> SqliteCheckpointStore {
        let store = SqliteCheckpointStore::open(&self.path)
            .await
            .expect("opening a temporary SQLite database");
        store.migrate().await.expect("creating the table");
        store
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

/// A migrated store on a database file of its own, which it deletes when dropped.
#[derive(Debug)]
pub struct TempStore {
    pub store: SqliteCheckpointStore,
    // Dropped after `store`: the files go once nothing uses them any more.
    _db: TempDb,
}

/// The factory of the conformance tests: a fresh database file per test.
pub async fn store() -> TempStore {
    let db = TempDb::new();
    let store = db.store().await;
    TempStore { store, _db: db }
}

#[async_trait]
impl CheckpointStore for TempStore {
    async fn list(&self, group: &str) -> Result<Vec<Checkpoint>, Error> {
        self.store.list(group).await
    }
    async fn load(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> Result<Option<u64>, Error> {
        self.store.load(group, subscription, partition).await
    }
    async fn save(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<(), Error> {
        self.store
            .save(group, subscription, partition, position)
            .await
    }
    async fn save_all(&self, group: &str, checkpoints: &[Checkpoint]) -> Result<(), Error> {
        self.store.save_all(group, checkpoints).await
    }
}

#[async_trait]
impl ExclusiveCheckpointStore for TempStore {
    async fn claim(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        fingerprint: Fingerprint,
        initial_position: u64,
    ) -> Result<u64, Error> {
        self.store
            .claim(
                group,
                subscription,
                partition,
                fingerprint,
                initial_position,
            )
            .await
    }
    async fn advance(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
    ) -> Result<(), Error> {
        self.store
            .advance(group, subscription, partition, from, to)
            .await
    }
}

/// The sqlx error an error of this store carries as its source.
pub fn sqlx_source(error: &Error) -> &sqlx::Error {
    std::error::Error::source(error)
        .and_then(|source| source.downcast_ref::<sqlx::Error>())
        .unwrap_or_else(|| panic!("no sqlx source in {error:?}"))
}
