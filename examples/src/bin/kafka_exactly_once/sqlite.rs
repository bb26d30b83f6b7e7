//! The read model on SQLite: its table, the transactional handler that writes a row per
//! record in the batch's transaction, and the queries of the supervisor.

use checkpoint_core::source::Entry;
use checkpoint_sqlite::SqliteCheckpointStore;
use checkpoint_subscription::{BoxFuture, HandlerResult, TransactionalHandler};
use sqlx::{Sqlite, Transaction};

use crate::BoxError;
use crate::record::{Record, Row};

/// The read model; `n` counts applications, `child` names the process that committed it.
pub const CREATE: &str = "CREATE TABLE IF NOT EXISTS kafka_exactly_once_rows \
    (run TEXT NOT NULL, topic_partition INTEGER NOT NULL, record_offset INTEGER NOT NULL, \
     payload TEXT NOT NULL, n INTEGER NOT NULL, child TEXT NOT NULL, \
     PRIMARY KEY (run, topic_partition, record_offset))";

/// A row per record, in the transaction the subscription then advances the checkpoint in and
/// commits: a record applied again would add 1 to its `n`.
pub struct Rows {
    pub run: String,
    pub child: String,
}

impl TransactionalHandler<Transaction<'static, Sqlite>> for Rows {
    fn handle<'a>(
        &'a self,
        transaction: &'a mut Transaction<'static, Sqlite>,
        entries: &'a [Entry],
    ) -> BoxFuture<'a, HandlerResult> {
        Box::pin(async move {
            for entry in entries {
                let record = Record::of(entry)?;
                sqlx::query(
                    "INSERT INTO kafka_exactly_once_rows \
                     (run, topic_partition, record_offset, payload, n, child) \
                     VALUES (?, ?, ?, ?, 1, ?) \
                     ON CONFLICT (run, topic_partition, record_offset) \
                     DO UPDATE SET n = n + 1, child = excluded.child",
                )
                .bind(&self.run)
                .bind(record.partition)
                .bind(record.offset)
                .bind(&record.payload)
                .bind(&self.child)
                .execute(&mut **transaction)
                .await?;
            }
            crate::engine::work().await;
            Ok(())
        })
    }
}

/// The run's rows.
pub async fn rows(store: &SqliteCheckpointStore, run: &str) -> Result<Vec<Row>, BoxError> {
    let columns: Vec<(i64, i64, String, i64)> = sqlx::query_as(
        "SELECT topic_partition, record_offset, payload, n FROM kafka_exactly_once_rows \
         WHERE run = ?",
    )
    .bind(run)
    .fetch_all(store.pool())
    .await?;
    columns.into_iter().map(Row::from_columns).collect()
}

/// How many of the run's rows `child` committed (all of them with `None`).
pub async fn count(
    store: &SqliteCheckpointStore,
    run: &str,
    child: Option<&str>,
) -> Result<u64, BoxError> {
    let (count,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM kafka_exactly_once_rows \
         WHERE run = ? AND (? IS NULL OR child = ?)",
    )
    .bind(run)
    .bind(child)
    .bind(child)
    .fetch_one(store.pool())
    .await?;
    Ok(u64::try_from(count)?)
}

/// Removes the run's rows.
pub async fn delete(store: &SqliteCheckpointStore, run: &str) -> Result<(), BoxError> {
    sqlx::query("DELETE FROM kafka_exactly_once_rows WHERE run = ?")
        .bind(run)
        .execute(store.pool())
        .await?;
    Ok(())
}
