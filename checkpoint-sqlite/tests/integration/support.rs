//! A store on a fresh temporary database file, and helpers shared by the tests.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{SystemTime, UNIX_EPOCH};

use checkpoint_conformance::harness::{Guarded, guarded};
use checkpoint_conformance::sql_family::SqlServer;
use checkpoint_core::Error;
use checkpoint_sqlite::{SqliteCheckpointStore, SqliteEngine};
use sqlx::AssertSqlSafe;

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

/// A temporary database is the server of the kit's SQL-family cases
/// (`checkpoint_conformance::sql_family`): each store opens the same file.
impl SqlServer<SqliteEngine> for TempDb {
    async fn store(&self) -> SqliteCheckpointStore {
        TempDb::store(self).await
    }

    async fn rows_of(&self, store: &SqliteCheckpointStore, group: &str) -> i64 {
        sqlx::query_scalar(AssertSqlSafe(format!(
            "SELECT count(*) FROM \"{}\" WHERE group_name = ?1",
            store.table()
        )))
        .bind(group)
        .fetch_one(store.pool())
        .await
        .expect("counting the group's rows")
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
    guarded(store, db)
}

/// A client of a database file shared with the other clients of the same test: its own pool,
/// as another process would have, and a share of the file, deleted after the last client.
pub type LeaseClient = Guarded<SqliteCheckpointStore, Arc<TempDb>>;

thread_local! {
    /// The file of the test running on this thread, while one of its clients is alive.
    static SHARED: RefCell<Weak<TempDb>> = const { RefCell::new(Weak::new()) };
}

/// The factory of the lease conformance tests, which call it twice per test for two clients
/// of one store: each call opens a pool of its own on the file of the test running on this
/// thread (the kit calls it from the test's own thread), a fresh migrated file when no client
/// of one is alive.
pub async fn lease_store() -> LeaseClient {
    let shared = SHARED.with(|shared| shared.borrow().upgrade());
    let db = match shared {
        Some(db) => db,
        None => {
            let db = Arc::new(TempDb::new());
            SHARED.with(|shared| *shared.borrow_mut() = Arc::downgrade(&db));
            db
        }
    };
    let store = db.store().await;
    guarded(store, db)
}

/// The sqlx error an error of this store carries as its source.
pub fn sqlx_source(error: &Error) -> &sqlx::Error {
    std::error::Error::source(error)
        .and_then(|source| source.downcast_ref::<sqlx::Error>())
        .unwrap_or_else(|| panic!("no sqlx source in {error:?}"))
}
