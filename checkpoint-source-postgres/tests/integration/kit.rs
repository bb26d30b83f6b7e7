//! The source kit of `checkpoint-conformance` (`source_tests!`) on a fresh table per case: its
//! transactions are PostgreSQL transactions, each append an `append_in`.
//!
//! An entry here is readable once every older transaction *of the cluster* has ended; the kit
//! waits for what it committed (`CHECKPOINT_SOURCE_CATCH_UP_MS`, default 10 s), so its cases
//! share the server with this binary's other tests and other sessions. Only the stress test
//! runs alone (see [`crate::support::exclusive`]): its transactions stay open for seconds.

use async_trait::async_trait;
use checkpoint_conformance::sources::{LogTransaction, SourceLog};
use checkpoint_core::source::SourceError;
use checkpoint_source_postgres::PostgresSource;
use sqlx::{Postgres, Transaction};

use crate::support::{named_source, shared};

/// A fresh table of 4 partitions and its source, holding the server shared (not while the
/// stress test runs) for the case.
pub struct PostgresLog {
    source: PostgresSource,
    table: String,
    _shared: tokio::sync::RwLockReadGuard<'static, ()>,
}

#[async_trait]
impl SourceLog for PostgresLog {
    type Source = PostgresSource;

    fn source(&self) -> &PostgresSource {
        &self.source
    }

    fn grows(&self) -> bool {
        true
    }

    /// Through a source of its own on the same table, as another process would: the source
    /// under test must find the new count itself.
    async fn grow(&self, partitions: u32) -> Result<(), SourceError> {
        PostgresSource::new(self.source.pool().clone(), 1)
            .with_table(&self.table)?
            .grow_to(partitions)
            .await
            .map(drop)
    }

    async fn begin(&self) -> Result<Box<dyn LogTransaction + '_>, SourceError> {
        let transaction =
            self.source
                .pool()
                .begin()
                .await
                .map_err(|error| SourceError::Backend {
                    backend: "postgres",
                    operation: "begin",
                    retryable: true,
                    source: Box::new(error),
                })?;
        Ok(Box::new(Writes {
            source: &self.source,
            transaction,
        }))
    }
}

struct Writes<'a> {
    source: &'a PostgresSource,
    transaction: Transaction<'static, Postgres>,
}

fn backend(operation: &'static str, error: sqlx::Error) -> SourceError {
    SourceError::Backend {
        backend: "postgres",
        operation,
        retryable: false,
        source: Box::new(error),
    }
}

#[async_trait]
impl LogTransaction for Writes<'_> {
    async fn append(
        &mut self,
        partition: u32,
        key: &str,
        payload: &[u8],
    ) -> Result<(), SourceError> {
        self.source
            .append_in(&mut self.transaction, partition, Some(key), payload)
            .await
            .map(drop)
    }

    async fn commit(self: Box<Self>) -> Result<(), SourceError> {
        self.transaction
            .commit()
            .await
            .map_err(|error| backend("commit", error))
    }

    async fn rollback(self: Box<Self>) -> Result<(), SourceError> {
        self.transaction
            .rollback()
            .await
            .map_err(|error| backend("rollback", error))
    }
}

async fn postgres_log() -> PostgresLog {
    let shared = shared().await;
    let (source, table) = named_source("kit", 4).await;
    PostgresLog {
        source,
        table,
        _shared: shared,
    }
}

mod postgres_source {
    checkpoint_conformance::source_tests!(super::postgres_log);
}
