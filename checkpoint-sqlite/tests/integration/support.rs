//! A store on a fresh temporary database file, and helpers shared by the tests.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use checkpoint_conformance::harness::Guarded;
use checkpoint_core::Error;
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
pub type TempStore = Guarded<SqliteCheckpointStore, TempDb>;

/// The factory of the conformance tests: a fresh database file per test.
pub async fn store() -> TempStore {
    let db = TempDb::new();
    let store = db.store().await;
    Guarded::new(store, db)
}

/// The sqlx error an error of this store carries as its source.
pub fn sqlx_source(error: &Error) -> &sqlx::Error {
    std::error::Error::source(error)
        .and_then(|source| source.downcast_ref::<sqlx::Error>())
        .unwrap_or_else(|| panic!("no sqlx source in {error:?}"))
}
