//! The source and store pairs the rows run on, each connected once, with the store on a table
//! or key prefix of its own.

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream;
use checkpoint_postgres::PostgresCheckpointStore;
use checkpoint_redis::RedisCheckpointStore;
use checkpoint_sqlite::SqliteCheckpointStore;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

use super::log::Log;
use super::log_nats::NatsLog;
use super::log_postgres::PostgresLog;
use super::log_sqlite::SqliteLog;
use crate::subject::{BenchError, BenchStore, context};

/// The PostgreSQL store's table (groups are new every run, so it is never emptied).
const TABLE: &str = "checkpoint_bench_subscriptions";
/// The Redis store's key prefix.
const PREFIX: &str = "checkpoint-bench-subscriptions";
/// Connections of the sources' pool: a reader per partition, writers, and the hand loop.
const SOURCE_CONNECTIONS: u32 = 24;

/// Where a pair's logs live.
enum Logs {
    Postgres(PgPool),
    Nats(jetstream::Context),
    Sqlite(PathBuf),
}

/// A source and a store.
pub(super) struct Pair {
    /// As the tables print it: source → store.
    pub name: &'static str,
    /// The store of checkpoints and leases.
    pub store: Arc<dyn BenchStore>,
    logs: Logs,
}

impl Pair {
    /// PostgreSQL source + PostgreSQL store, on DATABASE_URL.
    pub(super) async fn postgres() -> Result<Self, BenchError> {
        let url = std::env::var("DATABASE_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
        let options = PgConnectOptions::from_str(&url).map_err(context("DATABASE_URL"))?;
        let unreachable = "PostgreSQL is not reachable at DATABASE_URL (default \
            postgres://postgres@127.0.0.1:5432/test); start it with `bash scripts/services/machine.sh up` \
            or set DATABASE_URL";
        let pool = |connections| {
            PgPoolOptions::new()
                .max_connections(connections)
                .acquire_timeout(Duration::from_secs(30))
                .connect_with(options.clone())
        };
        let store_pool = pool(8).await.map_err(context(unreachable))?;
        let source_pool = pool(SOURCE_CONNECTIONS)
            .await
            .map_err(context(unreachable))?;
        let store = PostgresCheckpointStore::new(store_pool).with_table(TABLE)?;
        store.migrate().await?;
        Ok(Self {
            name: "postgres → postgres",
            store: Arc::new(store),
            logs: Logs::Postgres(source_pool),
        })
    }

    /// NATS JetStream source + Redis store, on NATS_URL and REDIS_URL.
    pub(super) async fn nats_redis() -> Result<Self, BenchError> {
        let nats_url =
            std::env::var("NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".to_owned());
        let nats_unreachable = "NATS is not reachable at NATS_URL (default \
            nats://127.0.0.1:4222); start it with `bash scripts/services/machine.sh up` or set NATS_URL";
        let client = tokio::time::timeout(Duration::from_secs(10), async_nats::connect(&nats_url))
            .await
            .map_err(context(nats_unreachable))?
            .map_err(context(nats_unreachable))?;
        let redis_url =
            std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
        let redis_unreachable = "Redis is not reachable at REDIS_URL (default \
            redis://127.0.0.1:6379); start it with `bash scripts/services/machine.sh up` or set REDIS_URL";
        let manager = redis::Client::open(redis_url.as_str())
            .map_err(context("REDIS_URL"))?
            .get_connection_manager()
            .await
            .map_err(context(redis_unreachable))?;
        let store = RedisCheckpointStore::new(manager).with_key_prefix(PREFIX)?;
        Ok(Self {
            name: "nats → redis",
            store: Arc::new(store),
            logs: Logs::Nats(jetstream::new(client)),
        })
    }

    /// SQLite source + SQLite store, in one temporary database file (removed by
    /// [`close`](Self::close)).
    pub(super) async fn sqlite() -> Result<Self, BenchError> {
        let path = crate::sqlite::database_path();
        let store = SqliteCheckpointStore::open(&path)
            .await
            .map_err(context(format!("opening {}", path.display())))?;
        store.migrate().await?;
        Ok(Self {
            name: "sqlite → sqlite",
            store: Arc::new(store),
            logs: Logs::Sqlite(path),
        })
    }

    /// A new log of `partitions` partitions for one row.
    pub(super) async fn create_log(
        &self,
        what: &str,
        partitions: u32,
    ) -> Result<Arc<dyn Log>, BenchError> {
        let name = super::unique(what);
        Ok(match &self.logs {
            Logs::Postgres(pool) => {
                Arc::new(PostgresLog::create(pool.clone(), &name, partitions).await?)
            }
            Logs::Nats(nats) => Arc::new(NatsLog::create(nats.clone(), &name, partitions).await?),
            Logs::Sqlite(path) => Arc::new(SqliteLog::create(path, &name, partitions).await?),
        })
    }

    /// Closes the pools; removes the SQLite file.
    pub(super) async fn close(&self) {
        match &self.logs {
            Logs::Postgres(pool) => pool.close().await,
            Logs::Nats(_) => {}
            Logs::Sqlite(path) => crate::sqlite::remove(path),
        }
    }
}
