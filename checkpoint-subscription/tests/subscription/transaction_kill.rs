//! A worker killed while its handler is inside the batch's transaction, on PostgreSQL and on
//! MySQL: the transaction (rows written, not committed) must not outlive the worker, or the
//! next owner's writes to the same rows wait on its locks until the store's timeout (on MySQL,
//! InnoDB's lock wait timeout, 50 s by default).
//!
//! Deterministic: the first worker's handler writes its batch and then never returns, so the
//! crash always lands inside an open transaction that holds row locks.

use std::sync::Arc;
use std::time::{Duration, Instant};

use checkpoint_core::source::{Entry, InMemorySource};
use checkpoint_core::transactional::TransactionalStore;
use checkpoint_core::{CheckpointStore, Fingerprint, Query, QueryItem, fingerprint};
use checkpoint_mysql::MysqlCheckpointStore;
use checkpoint_postgres::PostgresCheckpointStore;
use checkpoint_subscription::{HandlerResult, Subscription, TransactionalHandler};
use checkpoint_worker::WorkerStore;
use futures_util::future::BoxFuture;
// The table name is the test's own (a process id and a random number).
use sqlx::{AssertSqlSafe, MySql, Postgres, Transaction};
use tokio::sync::Notify;

const ENTRIES: u64 = 20;

/// Writes one row per entry in the transaction; if `hang` is set, then tells `inside` and
/// waits for ever (the transaction stays open until the future is dropped).
struct Rows {
    table: String,
    hang: bool,
    inside: Arc<Notify>,
}

impl TransactionalHandler<Transaction<'static, Postgres>> for Rows {
    fn handle<'a>(
        &'a self,
        transaction: &'a mut Transaction<'static, Postgres>,
        entries: &'a [Entry],
    ) -> BoxFuture<'a, HandlerResult> {
        Box::pin(async move {
            for entry in entries {
                sqlx::query(AssertSqlSafe(format!(
                    "INSERT INTO {} (position) VALUES ($1)",
                    self.table
                )))
                .bind(i64::try_from(entry.position)?)
                .execute(&mut **transaction)
                .await?;
            }
            if self.hang {
                self.inside.notify_one();
                std::future::pending::<()>().await;
            }
            Ok(())
        })
    }
}

fn start<S, H>(
    store: &Arc<S>,
    source: &Arc<InMemorySource>,
    group: &str,
    query: Fingerprint,
    handler: H,
    id: &str,
) -> Subscription
where
    S: TransactionalStore + WorkerStore + 'static,
    H: TransactionalHandler<S::Transaction>,
{
    let id = id.to_owned();
    Subscription::transactional(
        Arc::clone(store),
        source.clone(),
        group.to_owned(),
        "rows",
        query,
    )
    .handler(handler)
    .batch_size(ENTRIES as usize)
    .worker(move |w| {
        w.worker_id(id)
            .lease_duration(Duration::from_millis(800))
            .renew_interval(Duration::from_millis(100))
    })
    .start()
    .expect("valid settings")
}

/// Whether the rows the killed worker wrote are free: an insert of the same key, under a
/// short `lock_timeout`, either conflicts at once (they were committed: a bug of its own,
/// caught by the row count below) or goes through (rolled back); it times out while the
/// killed worker's transaction still holds them.
async fn rows_free(pool: &sqlx::PgPool, table: &str) -> bool {
    let mut probe = pool.begin().await.expect("a connection");
    sqlx::query("SET LOCAL lock_timeout = '200ms'")
        .execute(&mut *probe)
        .await
        .expect("lock_timeout");
    let insert = sqlx::query(AssertSqlSafe(format!(
        "INSERT INTO {table} (position) VALUES (1) ON CONFLICT DO NOTHING"
    )))
    .execute(&mut *probe)
    .await;
    // Never committed: the probe leaves nothing behind.
    probe.rollback().await.expect("rollback");
    insert.is_ok()
}

/// Waits (30 s at most) until `table` holds `rows` rows; returns how many it holds.
async fn rows_written(pool: &sqlx::PgPool, table: &str, rows: i64) -> i64 {
    let mut written = 0;
    for _ in 0..600 {
        written =
            sqlx::query_scalar::<_, i64>(AssertSqlSafe(format!("SELECT count(*) FROM {table}")))
                .fetch_one(pool)
                .await
                .expect("count");
        if written == rows {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    written
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_a_worker_killed_inside_its_transaction_leaves_no_lock_behind() {
    let url = std::env::var("DATABASE_URL")
        .expect("DATABASE_URL must name a PostgreSQL server (scripts/test.sh sets it)");
    let store = Arc::new(
        PostgresCheckpointStore::connect(&url)
            .await
            .expect("PostgreSQL"),
    );
    store.migrate().await.expect("migrate");
    let table = format!("tx_kill_{}_{}", std::process::id(), fastrand::u32(..));
    let pool = store.pool().clone();
    sqlx::query(AssertSqlSafe(format!(
        "CREATE TABLE {table} (position BIGINT PRIMARY KEY)"
    )))
    .execute(&pool)
    .await
    .expect("the read model's table");
    let group = format!("tx-kill-{}-{}", std::process::id(), fastrand::u64(..));
    let query = fingerprint(Some(&Query::new([QueryItem::new(["Row"], ["rows"])])));
    let source = Arc::new(InMemorySource::new(1));
    for position in 1..=ENTRIES {
        source
            .append_entry(0, Entry::new(position, b"x".to_vec()))
            .expect("ahead");
    }
    let inside = Arc::new(Notify::new());
    let rows = |hang| Rows {
        table: table.clone(),
        hang,
        inside: Arc::clone(&inside),
    };

    let killed = start(&store, &source, &group, query, rows(true), "killed");
    tokio::time::timeout(Duration::from_secs(30), inside.notified())
        .await
        .expect("the first worker's handler ran its batch");
    assert!(
        !rows_free(&pool, &table).await,
        "the probe must see the open transaction's locks (else it proves nothing)"
    );
    killed.worker().crash(); // no handover, no release: the lease expires
    drop(killed);
    // The crash drops the reader, and with it the transaction; the rollback is sent when its
    // connection goes back to the pool. Well before the lease expires, the rows are free.
    let crashed = Instant::now();
    let mut freed = None;
    while crashed.elapsed() < Duration::from_millis(800) {
        if rows_free(&pool, &table).await {
            freed = Some(crashed.elapsed());
            break;
        }
    }
    assert!(
        freed.is_some(),
        "the killed worker's transaction still held its rows a lease after the crash"
    );

    let next = start(&store, &source, &group, query, rows(false), "next");
    let written = rows_written(&pool, &table, ENTRIES as i64).await;
    assert_eq!(
        written, ENTRIES as i64,
        "the next owner wrote every row once"
    );
    next.shutdown().await.expect("a clean shutdown");
    sqlx::query(AssertSqlSafe(format!("DROP TABLE {table}")))
        .execute(&pool)
        .await
        .expect("drop");
    eprintln!("the killed worker's rows were free {freed:?} after the crash");
}

/// [`Rows`] on MySQL: one row per entry in the transaction; if `hang` is set, tells `inside`
/// and waits for ever.
struct MysqlRows {
    table: String,
    hang: bool,
    inside: Arc<Notify>,
}

impl TransactionalHandler<Transaction<'static, MySql>> for MysqlRows {
    fn handle<'a>(
        &'a self,
        transaction: &'a mut Transaction<'static, MySql>,
        entries: &'a [Entry],
    ) -> BoxFuture<'a, HandlerResult> {
        Box::pin(async move {
            for entry in entries {
                sqlx::query(AssertSqlSafe(format!(
                    "INSERT INTO {} (position) VALUES (?)",
                    self.table
                )))
                .bind(i64::try_from(entry.position)?)
                .execute(&mut **transaction)
                .await?;
            }
            if self.hang {
                self.inside.notify_one();
                std::future::pending::<()>().await;
            }
            Ok(())
        })
    }
}

/// Whether the rows the killed worker wrote are free on MySQL: a locking read of one of them
/// with `NOWAIT` fails at once while an open transaction holds it (an uncommitted insert locks
/// its row), and succeeds once that transaction is rolled back.
async fn mysql_rows_free(pool: &sqlx::MySqlPool, table: &str) -> bool {
    let mut probe = pool.begin().await.expect("a connection");
    let read = sqlx::query(AssertSqlSafe(format!(
        "SELECT position FROM {table} WHERE position = 1 FOR UPDATE NOWAIT"
    )))
    .fetch_optional(&mut *probe)
    .await;
    probe.rollback().await.expect("rollback");
    read.is_ok()
}

/// Waits (30 s at most) until `table` holds `rows` rows; returns how many it holds.
async fn mysql_rows_written(pool: &sqlx::MySqlPool, table: &str, rows: i64) -> i64 {
    let mut written = 0;
    for _ in 0..600 {
        written =
            sqlx::query_scalar::<_, i64>(AssertSqlSafe(format!("SELECT count(*) FROM {table}")))
                .fetch_one(pool)
                .await
                .expect("count");
        if written == rows {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    written
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_mysql_a_worker_killed_inside_its_transaction_leaves_no_lock_behind() {
    let url = std::env::var("MYSQL_URL")
        .expect("MYSQL_URL must name a MySQL or MariaDB server (scripts/test.sh sets it)");
    let store = Arc::new(MysqlCheckpointStore::connect(&url).await.expect("MySQL"));
    store.migrate().await.expect("migrate");
    let table = format!("tx_kill_{}_{}", std::process::id(), fastrand::u32(..));
    let pool = store.pool().clone();
    sqlx::query(AssertSqlSafe(format!(
        "CREATE TABLE {table} (position BIGINT PRIMARY KEY) ENGINE = InnoDB"
    )))
    .execute(&pool)
    .await
    .expect("the read model's table");
    let group = format!("tx-kill-{}-{}", std::process::id(), fastrand::u64(..));
    let query = fingerprint(Some(&Query::new([QueryItem::new(["Row"], ["rows"])])));
    let source = Arc::new(InMemorySource::new(1));
    for position in 1..=ENTRIES {
        source
            .append_entry(0, Entry::new(position, b"x".to_vec()))
            .expect("ahead");
    }
    let inside = Arc::new(Notify::new());
    let rows = |hang| MysqlRows {
        table: table.clone(),
        hang,
        inside: Arc::clone(&inside),
    };

    let killed = start(&store, &source, &group, query, rows(true), "killed");
    tokio::time::timeout(Duration::from_secs(30), inside.notified())
        .await
        .expect("the first worker's handler ran its batch");
    assert!(
        !mysql_rows_free(&pool, &table).await,
        "the probe must see the open transaction's locks (else it proves nothing)"
    );
    killed.worker().crash(); // no handover, no release: the lease expires
    drop(killed);
    let crashed = Instant::now();
    let mut freed = None;
    while crashed.elapsed() < Duration::from_millis(800) {
        if mysql_rows_free(&pool, &table).await {
            freed = Some(crashed.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        freed.is_some(),
        "the killed worker's transaction still held its rows a lease after the crash"
    );

    let next = start(&store, &source, &group, query, rows(false), "next");
    let written = mysql_rows_written(&pool, &table, ENTRIES as i64).await;
    assert_eq!(
        written, ENTRIES as i64,
        "the next owner wrote every row once"
    );
    next.shutdown().await.expect("a clean shutdown");
    // Past the last entry: the next owner's batch committed, so none of its inserts met a row
    // the killed worker had left behind.
    assert_eq!(
        store.load(&group, "rows", 0).await.expect("load"),
        Some(ENTRIES + 1),
        "the checkpoint after the next owner's batch"
    );
    sqlx::query(AssertSqlSafe(format!("DROP TABLE {table}")))
        .execute(&pool)
        .await
        .expect("drop");
    eprintln!("the killed worker's rows were free {freed:?} after the crash (MySQL)");
}
