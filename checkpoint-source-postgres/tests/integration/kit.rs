//! The source kit of `checkpoint-conformance` (`source_tests!`) on a fresh table per case: its
//! transactions are PostgreSQL transactions, each append an `append_in`.
//!
//! The kit's cases read right after they commit and expect what they committed. Here an entry
//! is readable once every older transaction *of the cluster* has ended, and other sessions (a
//! load on another database, another test binary) may keep one open for a while. So the
//! seam's commit returns once the horizon has passed its transaction (at most
//! [`SETTLE`] later, so a case that keeps an older transaction open while it commits a newer
//! one only waits): the entries are then readable, as the seam promises. Readers never wait
//! for that; only the writer's next step does.

use async_trait::async_trait;
use checkpoint_conformance::sources::{LogTransaction, SourceLog};
use checkpoint_core::source::SourceError;
use checkpoint_source_postgres::PostgresSource;
use sqlx::{Postgres, Transaction};

use checkpoint_conformance::CaseResult;

use crate::support::{exclusive, source};

/// How long a commit waits for the horizon to pass its transaction.
const SETTLE: std::time::Duration = std::time::Duration::from_secs(10);

/// A fresh table of 4 partitions and its source.
pub struct PostgresLog {
    source: PostgresSource,
}

#[async_trait]
impl SourceLog for PostgresLog {
    type Source = PostgresSource;

    fn source(&self) -> &PostgresSource {
        &self.source
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
            xid: None,
        }))
    }
}

struct Writes<'a> {
    source: &'a PostgresSource,
    transaction: Transaction<'static, Postgres>,
    /// The transaction's id, once an append gave it one.
    xid: Option<u64>,
}

/// Waits until no transaction at or below `xid` runs (at most [`SETTLE`]).
async fn settle(source: &PostgresSource, xid: u64) -> Result<(), SourceError> {
    let deadline = std::time::Instant::now() + SETTLE;
    loop {
        let passed: bool = sqlx::query_scalar(
            "SELECT pg_snapshot_xmin(pg_current_snapshot()) > $1::int8::text::xid8",
        )
        .bind(i64::try_from(xid).unwrap_or(i64::MAX))
        .fetch_one(source.pool())
        .await
        .map_err(|error| backend("settle", error))?;
        if passed || std::time::Instant::now() > deadline {
            return Ok(());
        }
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
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
        let position = self
            .source
            .append_in(&mut self.transaction, partition, Some(key), payload)
            .await?;
        self.xid = Some(checkpoint_source_postgres::position::decode(position).0);
        Ok(())
    }

    async fn commit(self: Box<Self>) -> Result<(), SourceError> {
        self.transaction
            .commit()
            .await
            .map_err(|error| backend("commit", error))?;
        match self.xid {
            Some(xid) => settle(self.source, xid).await,
            None => Ok(()),
        }
    }

    async fn rollback(self: Box<Self>) -> Result<(), SourceError> {
        self.transaction
            .rollback()
            .await
            .map_err(|error| backend("rollback", error))
    }
}

async fn postgres_log() -> PostgresLog {
    PostgresLog {
        source: source("kit", 4).await,
    }
}

/// Runs one case of the kit alone: with the other tests of this binary paused, since any open
/// transaction of the cluster holds back what a read returns and the cases read right after
/// their commits.
fn run(name: &str, case: impl AsyncFnOnce(&PostgresLog) -> CaseResult) {
    checkpoint_conformance::sources::__run_case(name, "PostgresSource", async {
        let _alone = exclusive().await;
        let log = postgres_log().await;
        case(&log).await
    });
}

/// The kit's cases, each a test of its own, as `source_tests!` would expand them, except
/// `sparse_positions_are_read_in_order`: it reads from every position of every gap, and the
/// gap between two transactions here is at least 2^20 positions (see [`super::reads`] for the
/// sampled version).
mod postgres_source {
    use checkpoint_conformance::sources::cases;

    use super::run;

    #[test]
    fn no_late_arrivals_under_concurrent_writers() {
        run("no_late_arrivals_under_concurrent_writers", async |log| {
            cases::no_late_arrivals_under_concurrent_writers(log).await
        });
    }

    #[test]
    fn reads_from_every_position_agree() {
        run("reads_from_every_position_agree", async |log| {
            cases::reads_from_every_position_agree(log).await
        });
    }

    #[test]
    fn empty_partitions_read_empty() {
        run("empty_partitions_read_empty", async |log| {
            cases::empty_partitions_read_empty(log).await
        });
    }

    #[test]
    fn pages_respect_max_and_keep_their_last_entry() {
        run("pages_respect_max_and_keep_their_last_entry", async |log| {
            cases::pages_respect_max_and_keep_their_last_entry(log).await
        });
    }

    #[test]
    fn wait_wakes_after_a_commit() {
        run("wait_wakes_after_a_commit", async |log| {
            cases::wait_wakes_after_a_commit(log).await
        });
    }

    #[test]
    fn head_follows_the_readable_end() {
        run("head_follows_the_readable_end", async |log| {
            cases::head_follows_the_readable_end(log).await
        });
    }

    #[test]
    fn source_invalid_inputs_are_rejected() {
        run("source_invalid_inputs_are_rejected", async |log| {
            cases::source_invalid_inputs_are_rejected(log).await
        });
    }
}
