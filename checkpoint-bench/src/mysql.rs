//! MySQL or MariaDB: the store on a sqlx pool, and the same pool running `SELECT 1`, the store's own
//! upsert, and a hand-written read-compare-write transaction.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use checkpoint_conformance::round_trips::CountingProxy;
use checkpoint_mysql::MysqlCheckpointStore;
use sqlx::AssertSqlSafe;
use sqlx::mysql::{MySqlConnectOptions, MySqlPool, MySqlPoolOptions};

use crate::sql::{self, HandWritten, Requests};
use crate::subject::{Backend, BenchError, Documented, Subject, context};

/// The bench's own table, emptied at the start of every run (it holds nothing else).
const TABLE: &str = "checkpoint_bench";

/// The table of the `groups` rows, emptied at the start of every run.
const GROUPS_TABLE: &str = "checkpoint_bench_groups";

/// The commit floor's table and statement (see `subject`).
const COMMIT_FLOOR_TABLE: [&str; 2] = [
    "CREATE TABLE IF NOT EXISTS checkpoint_bench_commit (id INT PRIMARY KEY, n BIGINT NOT NULL) \
     ENGINE = InnoDB",
    "INSERT IGNORE INTO checkpoint_bench_commit VALUES (0, 0)",
];
const COMMIT_FLOOR_SQL: &str = "UPDATE checkpoint_bench_commit SET n = n + 1 WHERE id = 0";

/// Connects, empties the bench table and builds the direct and the counted subjects.
pub async fn setup(max_concurrency: u32) -> Result<Backend, BenchError> {
    let url = std::env::var("MYSQL_URL")
        .unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/test".to_owned());
    let options = MySqlConnectOptions::from_str(&url).map_err(context("MYSQL_URL"))?;
    let unreachable = "MySQL is not reachable at MYSQL_URL (default \
        mysql://root@127.0.0.1:3306/test); start it with `bash scripts/services/machine.sh up` \
        or set MYSQL_URL";
    // A pool at least as large as the highest concurrency, so no worker waits for a
    // connection; no ping before each use (sqlx's default), which would double every round
    // trip of store and raw client alike.
    let pool = MySqlPoolOptions::new()
        .max_connections(max_concurrency + 2)
        .test_before_acquire(false)
        .acquire_timeout(Duration::from_secs(30))
        .connect_with(options.clone())
        .await
        .map_err(context(unreachable))?;
    let store = MysqlCheckpointStore::new(pool.clone()).with_table(TABLE)?;
    store.migrate().await?;
    sqlx::query(AssertSqlSafe(format!("TRUNCATE `{TABLE}`")))
        .execute(&pool)
        .await
        .map_err(context("emptying the bench table"))?;
    let groups_store = MysqlCheckpointStore::new(pool.clone()).with_table(GROUPS_TABLE)?;
    groups_store.migrate().await?;
    sqlx::query(AssertSqlSafe(format!("TRUNCATE `{GROUPS_TABLE}`")))
        .execute(&pool)
        .await
        .map_err(context("emptying the groups table"))?;
    for statement in COMMIT_FLOOR_TABLE {
        sqlx::raw_sql(statement)
            .execute(&pool)
            .await
            .map_err(context("creating the commit floor's table"))?;
    }
    let server = describe(&pool).await?;

    let upstream = format!("{}:{}", options.get_host(), options.get_port());
    let proxy = CountingProxy::start(upstream.as_str())
        .await
        .map_err(context(unreachable))?;
    // One connection: the counted operations run one at a time, and one connection keeps the
    // prepared statements of the warm-up call for the counted one.
    let counted_pool = MySqlPoolOptions::new()
        .max_connections(1)
        .test_before_acquire(false)
        .connect_with(
            options
                .clone()
                .host(&proxy.local_addr().ip().to_string())
                .port(proxy.local_addr().port()),
        )
        .await
        .map_err(context("MySQL through the counting proxy"))?;

    Ok(Backend {
        name: "mysql",
        server,
        direct: subject(pool)?,
        counted: Some((subject(counted_pool)?, proxy)),
        groups_store: Arc::new(groups_store),
        documented: Documented {
            save: 1,
            load: 1,
            save_all: |_| 1..=1,
            // The crate documents 1; the counting shows what sqlx does for a large result, the
            // same for the raw query (see the table), so it is reported, not checked.
            list: None,
        },
        batch_sizes: [1_000, 10_000],
        note: "",
        slow: false,
        release_exchanges: 1,
    })
}

/// The server's version and the settings a commit's cost depends on.
async fn describe(pool: &MySqlPool) -> Result<String, BenchError> {
    let version = show(pool, "SELECT VERSION()").await?;
    let flush = show(
        pool,
        "SELECT CAST(@@innodb_flush_log_at_trx_commit AS CHAR)",
    )
    .await?;
    let binlog = show(pool, "SELECT CAST(@@log_bin AS CHAR)").await?;
    Ok(format!(
        "MySQL-protocol server {version} (innodb_flush_log_at_trx_commit = {flush}, log_bin = {binlog})"
    ))
}

/// A server setting, as a one-value `SELECT` reports it.
async fn show(pool: &MySqlPool, statement: &'static str) -> Result<String, BenchError> {
    sqlx::query_scalar(statement)
        .fetch_one(pool)
        .await
        .map_err(context(statement))
}

fn subject(pool: MySqlPool) -> Result<Subject, BenchError> {
    let store = MysqlCheckpointStore::new(pool.clone()).with_table(TABLE)?;
    // The very statements the store sends, as the store renders them for the bench table.
    let (save, list) = (store.save_sql().into(), store.list_sql().into());
    let bulk = crate::bulk::mysql(pool.clone());
    let pool_for_floor = pool.clone();
    let mut subject = sql::subject(
        pool,
        Arc::new(store),
        Requests {
            save,
            list,
            // The cheapest durable write: one row of a one-row table updated in place, so the
            // commit waits for its redo log flush (innodb_flush_log_at_trx_commit), as every save that moves a
            // checkpoint does.
            commit_floor: Some(COMMIT_FLOOR_SQL),
            hand_written: HAND_WRITTEN,
        },
    );
    subject.raw_save_all = Some(bulk);
    subject.acquire_floor = Some(crate::lease_floor::mysql(pool_for_floor, TABLE));
    Ok(subject)
}

/// What a user writes without an upsert: lock the row, compare in the client, then update (or
/// insert) and commit. Four round trips: `BEGIN`, `SELECT ... FOR UPDATE`, the write, `COMMIT`.
/// MySQL's placeholders are positional: the bench binds group, subscription, partition
/// (and position) in that order, so the update names the position first through a derived
/// table.
const HAND_WRITTEN: HandWritten = HandWritten {
    begin: "BEGIN",
    select: "SELECT position FROM checkpoint_bench \
             WHERE group_name = ? AND subscription = ? AND partition_id = ? FOR UPDATE",
    insert: "INSERT INTO checkpoint_bench (group_name, subscription, partition_id, position) \
             VALUES (?, ?, ?, ?)",
    update: "UPDATE checkpoint_bench AS t \
             JOIN (SELECT ? AS g, ? AS s, ? AS p, ? AS pos) AS v \
                 ON t.group_name = v.g AND t.subscription = v.s AND t.partition_id = v.p \
             SET t.position = v.pos, t.updated_at = CURRENT_TIMESTAMP(6)",
};
