//! The source and store pairs the rows run on, each connected once, with the store on a table
//! or key prefix of its own.

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream;
use checkpoint_postgres::PostgresCheckpointStore;
use checkpoint_redis::RedisCheckpointStore;
use checkpoint_source_kafka::{DEFAULT_WAIT_MAX, KafkaSourceConfig};
use checkpoint_sqlite::SqliteCheckpointStore;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use tokio::net::TcpStream;

use super::log::Log;
use super::log_kafka::KafkaLog;
use super::log_nats::NatsLog;
use super::log_postgres::PostgresLog;
use super::log_sqlite::SqliteLog;
use crate::subject::{BenchError, BenchStore, context};

/// The PostgreSQL store's table (groups are new every run, so it is never emptied).
const TABLE: &str = "checkpoint_bench_subscriptions";
/// The Redis store's key prefix.
const PREFIX: &str = "checkpoint-bench-subscriptions";
/// The Kafka pair's throughput log: the source appends one record per request (no batch
/// append), so the fill of the plan's log would take most of the run; this many still read for
/// seconds (the figure's setting says how many entries it read, and that they were sized down).
const KAFKA_ENTRIES: u64 = 20_000;
/// Connections of the sources' pool: a reader per partition, writers, and the hand loop.
const SOURCE_CONNECTIONS: u32 = 24;

/// Where a pair's logs live.
enum Logs {
    Postgres(PgPool),
    Nats(jetstream::Context),
    Sqlite(PathBuf),
    /// KAFKA_URL (the brokers, without a topic), and how long the broker may hold the source's
    /// fetch of a wait.
    Kafka {
        url: String,
        wait_max: Duration,
    },
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
        let options = database_options()?;
        let source_pool = postgres_pool(&options, SOURCE_CONNECTIONS).await?;
        Ok(Self {
            name: "postgres → postgres",
            store: postgres_store(&options).await?,
            logs: Logs::Postgres(source_pool),
        })
    }

    /// Kafka source + PostgreSQL store, on KAFKA_URL and DATABASE_URL, the source's waits
    /// held by the broker up to `wait_max` (`None`: the source's default). A broker that does
    /// not accept a connection fails here, before any row, rather than at the first topic's
    /// creation after the source's retries.
    pub(super) async fn kafka_postgres(wait_max: Option<Duration>) -> Result<Self, BenchError> {
        let url =
            std::env::var("KAFKA_URL").unwrap_or_else(|_| "kafka://127.0.0.1:9092".to_owned());
        let unreachable = "Kafka is not reachable at KAFKA_URL (default kafka://127.0.0.1:9092); \
            start a broker with `eval \"$(bash scripts/services/kafka.sh up)\"` or set KAFKA_URL";
        // The brokers as the source reads them (the topic is only there to make a whole URL).
        let config = KafkaSourceConfig::from_url(&format!(
            "{}/probe?partitions=1",
            url.trim_end_matches('/')
        ))
        .map_err(context("KAFKA_URL"))?;
        let broker = config
            .bootstrap()
            .first()
            .ok_or("KAFKA_URL names no broker")?;
        tokio::time::timeout(Duration::from_secs(10), TcpStream::connect(broker.as_str()))
            .await
            .map_err(context(unreachable))?
            .map_err(context(unreachable))?;
        let options = database_options()?;
        Ok(Self {
            name: if wait_max.is_some() {
                "kafka (short waits) → postgres"
            } else {
                "kafka → postgres"
            },
            store: postgres_store(&options).await?,
            logs: Logs::Kafka {
                url,
                wait_max: wait_max.unwrap_or(DEFAULT_WAIT_MAX),
            },
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
            Logs::Kafka { url, wait_max } => {
                Arc::new(KafkaLog::create(url, &name, partitions, *wait_max).await?)
            }
        })
    }

    /// At most this many entries in the throughput log (`None`: the plan's).
    pub(super) fn entries_cap(&self) -> Option<u64> {
        matches!(self.logs, Logs::Kafka { .. }).then_some(KAFKA_ENTRIES)
    }

    /// What the latency rows' settings must say of this pair's source.
    pub(super) fn latency_caveat(&self) -> Option<String> {
        let Logs::Kafka { wait_max, .. } = &self.logs else {
            return None;
        };
        // Seen in tansu 0.6's fetch: it reads the partition, sleeps half of what is left of
        // the wait, and answers what it read unless a first read found enough; it never wakes
        // at a produce. On such a broker the wait bounds the latency, not the subscription.
        Some(format!(
            "the source's waits held up to {wait_max:?} (`with_wait_max`); tansu 0.6 \
             (`kafka.sh`) answers a held fetch after half its wait with what it had when the \
             fetch came, never at a produce: there an entry also waits for up to a whole wait"
        ))
    }

    /// Closes the pools; removes the SQLite file.
    pub(super) async fn close(&self) {
        match &self.logs {
            Logs::Postgres(pool) => pool.close().await,
            Logs::Nats(_) | Logs::Kafka { .. } => {}
            Logs::Sqlite(path) => crate::sqlite::remove(path),
        }
    }
}

/// DATABASE_URL's options (default postgres://postgres@127.0.0.1:5432/test).
fn database_options() -> Result<PgConnectOptions, BenchError> {
    let url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    PgConnectOptions::from_str(&url).map_err(context("DATABASE_URL"))
}

/// A pool of `connections` on `options`; a server that cannot be reached says how to start it.
async fn postgres_pool(options: &PgConnectOptions, connections: u32) -> Result<PgPool, BenchError> {
    let unreachable = "PostgreSQL is not reachable at DATABASE_URL (default \
        postgres://postgres@127.0.0.1:5432/test); start it with \
        `bash scripts/services/machine.sh up` or set DATABASE_URL";
    PgPoolOptions::new()
        .max_connections(connections)
        .acquire_timeout(Duration::from_secs(30))
        .connect_with(options.clone())
        .await
        .map_err(context(unreachable))
}

/// The PostgreSQL store on a pool of its own, its table migrated.
async fn postgres_store(options: &PgConnectOptions) -> Result<Arc<dyn BenchStore>, BenchError> {
    let store = PostgresCheckpointStore::new(postgres_pool(options, 8).await?).with_table(TABLE)?;
    store.migrate().await?;
    Ok(Arc::new(store))
}
