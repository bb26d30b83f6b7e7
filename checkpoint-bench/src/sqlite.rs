//! SQLite (embedded, a temporary file): the store on a sqlx pool with the store's recommended
//! settings (WAL, `synchronous = FULL`), and the same pool running `SELECT 1`, the store's own
//! upsert, and a hand-written read-compare-write transaction.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use checkpoint_sqlite::SqliteCheckpointStore;
use sqlx::sqlite::{SqlitePool, SqlitePoolOptions};

use crate::sql::{self, HandWritten, Requests};
use crate::subject::{Backend, BenchError, Documented, Subject, context};

/// The database file of this run (removed by [`remove`]).
pub fn database_path() -> PathBuf {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.as_nanos())
        .unwrap_or(0);
    std::env::temp_dir().join(format!(
        "checkpoint-bench-{}-{nanos}.db",
        std::process::id()
    ))
}

/// Removes the database file and its WAL companions.
pub fn remove(path: &std::path::Path) {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

/// Opens a fresh database file and builds the subject. No counted subject: an embedded
/// database has no wire to count round trips on.
pub async fn setup(path: &std::path::Path, max_concurrency: u32) -> Result<Backend, BenchError> {
    // The store's recommended settings, in a pool as large as the highest concurrency (the
    // store's own `open` uses 8); writers still take turns on SQLite's single write lock. At
    // 64 writers on a busy 2-core machine a turn can take longer than the 5 s busy timeout and
    // store timeout: the bench measures, it does not bound, so both wait a minute here.
    let pool = SqlitePoolOptions::new()
        .max_connections(max_concurrency + 2)
        .connect_with(
            SqliteCheckpointStore::connect_options(path).busy_timeout(Duration::from_secs(60)),
        )
        .await
        .map_err(context(format!("opening {}", path.display())))?;
    let store = SqliteCheckpointStore::new(pool.clone()).with_timeout(Duration::from_secs(60))?;
    store.migrate().await?;
    // A fresh file every run: the groups table starts empty.
    let groups_store = SqliteCheckpointStore::new(pool.clone())
        .with_table("checkpoints_groups")?
        .with_timeout(Duration::from_secs(60))?;
    groups_store.migrate().await?;
    let version: String = sqlx::query_scalar("SELECT sqlite_version()")
        .fetch_one(&pool)
        .await
        .map_err(context("sqlite_version()"))?;
    Ok(Backend {
        name: "sqlite",
        server: format!("SQLite {version} (embedded; WAL, synchronous = FULL, a temporary file)"),
        direct: subject(pool, store),
        counted: None,
        groups_store: Arc::new(groups_store),
        documented: Documented {
            save: 1,
            load: 1,
            save_all: |_| 1..=1,
            list: Some(|_| 1),
        },
        batch_sizes: [1_000, 10_000],
        note: "embedded: no round trips; its floor is `SELECT 1` on the same pool",
        slow: false,
        release_exchanges: 0,
    })
}

fn subject(pool: SqlitePool, store: SqliteCheckpointStore) -> Subject {
    // The very statements the store sends, as the store renders them for its table.
    let (save, list) = (store.save_sql().into(), store.list_sql().into());
    let bulk = crate::bulk::sqlite(pool.clone());
    let acquire_floor = crate::lease_floor::sqlite(pool.clone(), "checkpoints");
    let mut subject = sql::subject(
        pool,
        Arc::new(store),
        Requests {
            save,
            list,
            commit_floor: None,
            hand_written: HAND_WRITTEN,
        },
    );
    subject.raw_save_all = Some(bulk);
    subject.acquire_floor = Some(acquire_floor);
    subject
}

/// What a user writes without an upsert: a write transaction (`BEGIN IMMEDIATE`, so two of
/// them cannot both read and then fail to upgrade), read, compare in the client, write, commit.
const HAND_WRITTEN: HandWritten = HandWritten {
    begin: "BEGIN IMMEDIATE",
    select: "SELECT position FROM checkpoints \
             WHERE group_name = ?1 AND subscription = ?2 AND partition_id = ?3",
    insert: "INSERT INTO checkpoints (group_name, subscription, partition_id, position) \
             VALUES (?1, ?2, ?3, ?4)",
    update: "UPDATE checkpoints SET position = ?4, \
             updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') \
             WHERE group_name = ?1 AND subscription = ?2 AND partition_id = ?3",
};
