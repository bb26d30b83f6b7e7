//! Opening the log a [`SourceSpec`] names, through each source crate's own constructor, with
//! the partition count the log stores (SQLite's `{table}_meta`, PostgreSQL's `{table}_source`,
//! the `checkpoint-partitions=N` of a NATS stream's description, a Kafka topic's own count),
//! or the fallback when it stores none. A log that is not set up is reported in its source
//! crate's words.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use checkpoint_core::source::{Source, SourceError};
use checkpoint_source_postgres::PostgresSource;
use checkpoint_source_sqlite::SqliteSource;
use sqlx::AssertSqlSafe;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions};

use super::{SourceTarget, seconds, source_name};
use crate::connect::{check_sqlite_file, probe_postgres};
use crate::error::{CliError, chain};

/// What to do about a log's SQLite file that does not exist.
const LOG_NEVER_CREATED: &str = "the checkpoint command never creates a log: check the path, \
     or let the application create it (SqliteSource::open, then migrate)";

/// A log to read heads from: its URL and settings, checked before any request.
pub struct SourceSpec {
    target: SourceTarget,
    /// The event table's name (SQLite, PostgreSQL), the stream's (NATS) or the topic's
    /// (Kafka, as its URL names it).
    name: String,
    timeout: Duration,
    pools: Pools,
}

/// The connection pools, made lazily: nothing is sent before [`SourceSpec::open`].
enum Pools {
    Sqlite(PathBuf, SqlitePool),
    Postgres(PgPool),
    #[cfg(feature = "source-nats")]
    Nats(String),
    #[cfg(feature = "source-kafka")]
    Kafka(String),
}

impl SourceSpec {
    /// The log `url` names, with `--source-table` or `--source-stream`, each request bounded
    /// by `timeout`. The name is checked as the source crate checks it; nothing is sent. Call
    /// it inside the runtime (it makes the pools).
    ///
    /// # Errors
    ///
    /// A usage error for a bad URL, a setting the log does not have, or a name the source
    /// refuses.
    pub fn new(
        url: &str,
        table: Option<&str>,
        stream: Option<&str>,
        timeout: Duration,
    ) -> Result<Self, CliError> {
        let target = SourceTarget::parse(url)?;
        let name = source_name(&target, table, stream)?;
        let context = context(&target);
        let invalid = |error: SourceError| CliError::source(&context, &error);
        let pools = match &target {
            SourceTarget::Sqlite(path) => {
                let options = SqliteConnectOptions::new()
                    .filename(path)
                    .create_if_missing(false)
                    .busy_timeout(checkpoint_source_sqlite::DEFAULT_BUSY_TIMEOUT);
                let pool = SqlitePoolOptions::new()
                    .max_connections(1)
                    .acquire_timeout(timeout)
                    .connect_lazy_with(options);
                SqliteSource::new(pool.clone(), 1)
                    .with_table(&name)
                    .map_err(invalid)?;
                Pools::Sqlite(path.clone(), pool)
            }
            SourceTarget::Postgres(url) => {
                let options = PgConnectOptions::from_str(url).map_err(|error| {
                    CliError::usage(format!("malformed postgres:// source URL: {error}"))
                })?;
                // No ping before each use (sqlx's `test_before_acquire`): the live views read
                // the heads every refresh, and a connection that died fails one refresh, which
                // the next one repeats on a new connection (as the store's pool does).
                let pool = PgPoolOptions::new()
                    .max_connections(1)
                    .acquire_timeout(timeout)
                    .test_before_acquire(false)
                    .connect_lazy_with(options);
                PostgresSource::new(pool.clone(), 1)
                    .with_table(&name)
                    .map_err(invalid)?;
                Pools::Postgres(pool)
            }
            #[cfg(feature = "source-nats")]
            SourceTarget::Nats(url) => {
                super::nats::check_stream_name(&name).map_err(invalid)?;
                Pools::Nats(url.clone())
            }
            #[cfg(not(feature = "source-nats"))]
            SourceTarget::Nats(_) => unreachable_nats()?,
            #[cfg(feature = "source-kafka")]
            SourceTarget::Kafka(url) => {
                super::kafka::source_config(url).map_err(invalid)?;
                Pools::Kafka(url.clone())
            }
            #[cfg(not(feature = "source-kafka"))]
            SourceTarget::Kafka(_) => Err(CliError::usage(super::KAFKA_NOT_BUILT))?,
        };
        Ok(Self {
            target,
            name,
            timeout,
            pools,
        })
    }

    /// The log.
    pub fn target(&self) -> &SourceTarget {
        &self.target
    }

    /// How long each request may take.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// What every error of the log starts with: `cannot read the source URL` (no credential).
    pub fn context(&self) -> String {
        context(&self.target)
    }

    /// Opens the log with the partition count it stores, or `fallback` (at least 1) when it
    /// stores none; within the timeout.
    ///
    /// # Errors
    ///
    /// A failure when the log cannot be reached, does not exist or is not set up as its
    /// source expects, or gives no answer in time.
    pub async fn open(&self, fallback: u32) -> Result<Box<dyn Source>, CliError> {
        let context = self.context();
        let opening = async {
            match &self.pools {
                Pools::Sqlite(path, pool) => {
                    open_sqlite(path, pool, &self.name, fallback, &context).await
                }
                Pools::Postgres(pool) => self.open_postgres(pool, fallback, &context).await,
                #[cfg(feature = "source-nats")]
                Pools::Nats(url) => {
                    let fallback = fallback.max(1);
                    super::nats::open(url, &self.name, fallback, self.timeout, &context).await
                }
                // The topic's own partition count, from the cluster: no fallback.
                #[cfg(feature = "source-kafka")]
                Pools::Kafka(url) => super::kafka::open(url, self.timeout, &context).await,
            }
        };
        match tokio::time::timeout(self.timeout, opening).await {
            Ok(opened) => opened,
            Err(_) => Err(CliError::failure(format!(
                "{context}: no answer within {}",
                seconds(self.timeout)
            ))),
        }
    }

    async fn open_postgres(
        &self,
        pool: &PgPool,
        fallback: u32,
        context: &str,
    ) -> Result<Box<dyn Source>, CliError> {
        probe_postgres(&pool.connect_options())
            .await
            .map_err(|error| CliError::store(Some(context), &error))?;
        let statement = format!("SELECT partitions FROM {}", beside(&self.name, "_source"));
        let stored = match sqlx::query_scalar::<_, i32>(AssertSqlSafe(statement))
            .fetch_all(pool)
            .await
        {
            Ok(rows) => match rows.as_slice() {
                [count] => u32::try_from(*count).ok(),
                _ => None,
            },
            // No count: `verify` below says what is missing.
            Err(error) if is_undefined_table(&error) => None,
            Err(error) => return Err(sql_failed(context, &error)),
        };
        let failed = |error: SourceError| CliError::source(context, &error);
        let source = PostgresSource::new(pool.clone(), stored.unwrap_or(fallback).max(1))
            .with_table(&self.name)
            .map_err(failed)?
            .with_timeout(Some(self.timeout));
        if stored.is_none() {
            source.verify().await.map_err(failed)?;
        }
        Ok(Box::new(source))
    }
}

/// `cannot read the source URL`, without credentials.
fn context(target: &SourceTarget) -> String {
    format!("cannot read the source {}", target.display())
}

async fn open_sqlite(
    path: &Path,
    pool: &SqlitePool,
    table: &str,
    fallback: u32,
    context: &str,
) -> Result<Box<dyn Source>, CliError> {
    check_sqlite_file(path, context, LOG_NEVER_CREATED)?;
    // The crate doc's schema: the count is the row `partitions` of `{table}_meta`; the name
    // was checked as an identifier by `with_table`, so quoting it is enough.
    let statement = format!("SELECT value FROM \"{table}_meta\" WHERE name = 'partitions'");
    let stored = match sqlx::query_scalar::<_, i64>(AssertSqlSafe(statement))
        .fetch_optional(pool)
        .await
    {
        Ok(count) => count.and_then(|count| u32::try_from(count).ok()),
        // No meta table: the source's first request below says what is missing.
        Err(sqlx::Error::Database(error)) if error.message().contains("no such table") => None,
        Err(error) => return Err(sql_failed(context, &error)),
    };
    let failed = |error: SourceError| CliError::source(context, &error);
    let source = SqliteSource::new(pool.clone(), stored.unwrap_or(fallback).max(1))
        .with_table(table)
        .map_err(failed)?;
    if stored.is_none() {
        // Fails, in the source's words, unless the log was set up meanwhile.
        source.head(0).await.map_err(failed)?;
    }
    Ok(Box::new(source))
}

/// `"table_source"` or `"schema"."table_source"` for `table` or `schema.table`, each part
/// already checked as an identifier by `PostgresSource::with_table`.
fn beside(table: &str, suffix: &str) -> String {
    match table.split_once('.') {
        Some((schema, table)) => format!("\"{schema}\".\"{table}{suffix}\""),
        None => format!("\"{table}{suffix}\""),
    }
}

/// PostgreSQL's SQLSTATE 42P01 (undefined_table).
fn is_undefined_table(error: &sqlx::Error) -> bool {
    error
        .as_database_error()
        .and_then(|database| database.code())
        .is_some_and(|code| code == "42P01")
}

fn sql_failed(context: &str, error: &sqlx::Error) -> CliError {
    CliError::failure(format!("{context}: {}", chain(error)))
}

/// A NATS target without a NATS build: `SourceTarget::parse` refuses it first.
#[cfg(not(feature = "source-nats"))]
fn unreachable_nats<T>() -> Result<T, CliError> {
    Err(CliError::usage(super::NATS_NOT_BUILT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_count_table_is_beside_the_event_table() {
        assert_eq!(beside("events", "_source"), "\"events_source\"");
        assert_eq!(beside("app.log", "_source"), "\"app\".\"log_source\"");
    }

    #[tokio::test]
    async fn names_are_checked_as_the_source_crates_check_them() {
        let timeout = Duration::from_secs(1);
        for (url, table) in [
            ("sqlite:/tmp/x.db", "bad-name"),
            ("sqlite:/tmp/x.db", "sqlite_master"),
            ("postgres://u:hunter2@h/db", "a.b.c"),
            ("postgres://u:hunter2@h/db", "drop table x;"),
        ] {
            let error = SourceSpec::new(url, Some(table), None, timeout)
                .err()
                .unwrap();
            assert_eq!(error.exit().code(), 2, "{}", error.message());
            assert!(!error.message().contains("hunter2"), "{}", error.message());
        }
        let spec =
            SourceSpec::new("postgres://u:hunter2@h/db", Some("app.log"), None, timeout).unwrap();
        assert_eq!(spec.context(), "cannot read the source postgres://u@h/db");
    }

    #[tokio::test]
    async fn a_missing_sqlite_log_is_never_created() {
        let path = std::env::temp_dir().join(format!(
            "checkpoint-store-cli-missing-log-{}.db",
            std::process::id()
        ));
        let url = format!("sqlite:{}", path.display());
        let spec = SourceSpec::new(&url, None, None, Duration::from_secs(1)).unwrap();
        let error = spec.open(1).await.err().unwrap();
        assert_eq!(error.exit().code(), 1, "{}", error.message());
        assert!(
            error.message().contains(
                "the file does not exist, and the checkpoint command never creates a log"
            ),
            "{}",
            error.message()
        );
        assert!(!path.exists());
    }
}
