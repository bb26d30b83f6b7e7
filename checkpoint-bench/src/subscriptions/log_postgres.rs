//! The PostgreSQL log: an event table of `checkpoint-source-postgres`, made by its `migrate`.

use std::sync::Arc;

use async_trait::async_trait;
use checkpoint_core::source::Source;
use checkpoint_source_postgres::PostgresSource;
use sqlx::AssertSqlSafe;
use sqlx::postgres::PgPool;

use super::log::{FILL_PAYLOAD, Log};
use crate::subject::{BenchError, context};

/// Entries per transaction of the fill: each transaction's entries share its id, so a page
/// of the reader stops inside transactions too, as it does on a busy log.
const FILL_TRANSACTION: u64 = 1_000;

/// An event table of its own.
pub(super) struct PostgresLog {
    source: Arc<PostgresSource>,
    pool: PgPool,
    table: String,
}

impl PostgresLog {
    /// Creates the table `name` of `partitions` partitions on `pool`.
    pub(super) async fn create(
        pool: PgPool,
        name: &str,
        partitions: u32,
    ) -> Result<Self, BenchError> {
        let source = PostgresSource::new(pool.clone(), partitions).with_table(name)?;
        source
            .migrate()
            .await
            .map_err(context(format!("creating the event table {name}")))?;
        Ok(Self {
            source: Arc::new(source),
            pool,
            table: name.to_owned(),
        })
    }
}

#[async_trait]
impl Log for PostgresLog {
    fn source(&self) -> Arc<dyn Source> {
        Arc::clone(&self.source) as Arc<dyn Source>
    }

    async fn append(&self, partition: u32, payload: Vec<u8>) -> Result<(), BenchError> {
        self.source.append(partition, None, &payload).await?;
        Ok(())
    }

    /// One `INSERT … SELECT` of [`FILL_TRANSACTION`] rows per transaction: the columns the
    /// source's own append fills (the transaction id and the time by their defaults).
    async fn fill(&self, per_partition: u64) -> Result<(), BenchError> {
        let table = &self.table;
        let insert = format!(
            "INSERT INTO \"{table}\" (\"partition\", payload) \
             SELECT $1, $2 FROM generate_series(1, $3)"
        );
        for partition in 0..self.source.partitions() {
            let mut left = per_partition;
            while left > 0 {
                let rows = left.min(FILL_TRANSACTION);
                sqlx::query(AssertSqlSafe(insert.as_str()))
                    .bind(i32::try_from(partition)?)
                    .bind(FILL_PAYLOAD.as_slice())
                    .bind(i64::try_from(rows)?)
                    .execute(&self.pool)
                    .await
                    .map_err(context(format!("filling the event table {table}")))?;
                left -= rows;
            }
        }
        Ok(())
    }

    /// What `migrate` made: the table, its partition count's table and the notifying function.
    async fn remove(&self) -> Result<(), BenchError> {
        let table = &self.table;
        sqlx::raw_sql(AssertSqlSafe(format!(
            "DROP TABLE IF EXISTS \"{table}\", \"{table}_source\"; \
             DROP FUNCTION IF EXISTS \"{table}_notify\"()"
        )))
        .execute(&self.pool)
        .await
        .map_err(context(format!("dropping the event table {table}")))?;
        Ok(())
    }
}
