//! The naive readers of a plain `bigserial` table: `id > checkpoint`, the reader that loses
//! entries committed out of sequence order; and the same reading only rows of transactions
//! below the horizon (`tx < pg_snapshot_xmin(...)`) but still ordered by `id`, which loses
//! fewer: a transaction that took its id early can have a higher transaction id than one that
//! took a later id and was read.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use sqlx::{AssertSqlSafe, PgPool};
use tokio::task::JoinHandle;

use super::truth::Truth;

/// What the naive reader read, and how many committed entries it skipped.
pub struct Skips {
    pub read: usize,
    pub skipped: usize,
}

fn name(table: &str) -> String {
    format!("\"{table}_naive\"")
}

/// Creates the plain table beside `table`; its quoted name.
pub async fn create(pool: &PgPool, table: &str) -> String {
    let naive = name(table);
    let create = format!(
        "CREATE TABLE {naive} (id bigserial PRIMARY KEY, partition int NOT NULL, \
         payload bytea NOT NULL, tx xid8 NOT NULL DEFAULT pg_current_xact_id())"
    );
    sqlx::query(AssertSqlSafe(create))
        .execute(pool)
        .await
        .unwrap();
    naive
}

/// The insert the writers run beside each append (`$1` partition, `$2` payload).
pub fn insert_sql(table: &str) -> String {
    format!(
        "INSERT INTO {} (partition, payload) VALUES ($1, $2)",
        name(table)
    )
}

/// Polls every partition with `id > checkpoint` (and `tx` below the horizon when
/// `below_horizon`) until the writers are done and one last pass finds nothing new; then counts
/// the committed entries it never read.
pub fn spawn(
    pool: PgPool,
    naive: String,
    partitions: u32,
    below_horizon: bool,
    truth: Arc<Truth>,
) -> JoinHandle<Skips> {
    tokio::spawn(async move {
        let horizon = if below_horizon {
            "AND tx < pg_snapshot_xmin(pg_current_snapshot())"
        } else {
            ""
        };
        let select = format!(
            "SELECT id, payload FROM {naive} WHERE partition = $1 AND id > $2 {horizon} \
             ORDER BY id LIMIT 100"
        );
        let mut checkpoints = vec![0i64; partitions as usize];
        let mut read = HashSet::new();
        loop {
            let finished = truth.expected().is_some();
            let mut found = false;
            for (partition, checkpoint) in checkpoints.iter_mut().enumerate() {
                let rows: Vec<(i64, Vec<u8>)> = sqlx::query_as(AssertSqlSafe(select.clone()))
                    .bind(partition as i64)
                    .bind(*checkpoint)
                    .fetch_all(&pool)
                    .await
                    .unwrap();
                found |= !rows.is_empty();
                for (id, payload) in rows {
                    *checkpoint = id;
                    read.insert(u64::from_be_bytes(payload[..].try_into().unwrap()));
                }
            }
            if finished && !found {
                break;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let committed = truth.committed_ids();
        Skips {
            read: read.len(),
            skipped: committed.difference(&read).count(),
        }
    })
}
