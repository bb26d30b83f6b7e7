//! The writers: tasks of the supervisor that append entries to the log while the children
//! read it. On PostgreSQL each holds its transaction open a random 0-20 ms after inserting,
//! so that sixteen of them commit out of position order (the source must never let a reader
//! pass an entry that commits late).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use checkpoint_source_sqlite::SqliteSource;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::{BoxError, PARTITIONS, payload};

/// An entry a writer committed: its id, partition and position, when its commit returned
/// among all the writers' (0, 1, 2, …), and how long after the writers started.
#[derive(Debug, Clone, Copy)]
pub struct Committed {
    pub id: u64,
    pub partition: u32,
    pub position: u64,
    pub order: u64,
    pub at: Duration,
}

/// The longest time between two commits of the writers (any of them): a few milliseconds
/// while the file takes writes, the freeze's length when a frozen process held its lock.
pub fn longest_stall(committed: &[Committed]) -> Duration {
    let mut times: Vec<Duration> = committed.iter().map(|entry| entry.at).collect();
    times.sort();
    times
        .windows(2)
        .map(|pair| pair[1] - pair[0])
        .max()
        .unwrap_or_default()
}

/// Entries whose commit returned after that of a later position of their partition: how
/// far out of position order the writers committed.
pub fn out_of_order(committed: &[Committed]) -> u64 {
    let mut by_order = committed.to_vec();
    by_order.sort_by_key(|entry| entry.order);
    let mut highest: BTreeMap<u32, u64> = BTreeMap::new();
    let mut late = 0;
    for entry in by_order {
        let seen = highest.entry(entry.partition).or_insert(entry.position);
        if entry.position < *seen {
            late += 1;
        }
        *seen = (*seen).max(entry.position);
    }
    late
}

/// The log, opened for writing by its own type. One per run, behind an `Arc`: the variants'
/// sizes do not matter.
#[allow(clippy::large_enum_variant)]
pub enum Log {
    Sqlite(SqliteSource),
    #[cfg(feature = "source-postgres")]
    Postgres(checkpoint_source_postgres::PostgresSource),
    #[cfg(feature = "source-nats")]
    Nats(checkpoint_source_nats::NatsSource),
    #[cfg(feature = "source-kafka")]
    Kafka(checkpoint_source_kafka::KafkaSource),
}

impl Log {
    /// Creates the log `name` in the source `spec` names and opens it for writing.
    pub async fn create(spec: &str, name: &str) -> Result<Self, BoxError> {
        let empty = vec![Vec::new(); PARTITIONS as usize];
        checkpoint_examples::log::create_log(spec, name, PARTITIONS, &empty).await?;
        if let Some(path) = spec.strip_prefix("sqlite:") {
            let source = SqliteSource::open(path, PARTITIONS).await?;
            return Ok(Self::Sqlite(source.with_table(name)?));
        }
        #[cfg(feature = "source-postgres")]
        if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
            // A connection per writer, each holding its transaction open.
            let pool = sqlx::postgres::PgPoolOptions::new()
                .max_connections(WRITERS_POSTGRES as u32 + 2)
                .connect(spec)
                .await?;
            let source = checkpoint_source_postgres::PostgresSource::new(pool, PARTITIONS);
            return Ok(Self::Postgres(source.with_table(name)?));
        }
        #[cfg(feature = "source-nats")]
        if spec.starts_with("nats://") {
            let config = checkpoint_source_nats::NatsSourceConfig::new(name, PARTITIONS)?;
            let source = checkpoint_source_nats::NatsSource::connect(spec, config).await?;
            return Ok(Self::Nats(source));
        }
        #[cfg(feature = "source-kafka")]
        if spec.starts_with("kafka://") {
            // The same source the children read, opened as `create_log` just made it.
            let source = checkpoint_examples::log::open_kafka(spec, name, PARTITIONS).await?;
            return Ok(Self::Kafka(source));
        }
        Err("no writer for this source".into())
    }

    /// How many writers append at once: sixteen on PostgreSQL (commits out of order), a few
    /// elsewhere.
    pub fn writers(&self) -> usize {
        match self {
            Self::Sqlite(_) => 3,
            #[cfg(feature = "source-postgres")]
            Self::Postgres(_) => WRITERS_POSTGRES,
            #[cfg(feature = "source-nats")]
            Self::Nats(_) => 4,
            #[cfg(feature = "source-kafka")]
            Self::Kafka(_) => 4,
        }
    }

    /// Appends `payload` to `partition` and returns its position once committed.
    async fn append(
        &self,
        partition: u32,
        key: &str,
        payload: &[u8],
        random: &mut fastrand::Rng,
    ) -> Result<u64, BoxError> {
        let _ = &random; // only PostgreSQL's writers hold their transactions open
        match self {
            Self::Sqlite(source) => Ok(source.append(partition, Some(key), payload).await?),
            #[cfg(feature = "source-postgres")]
            Self::Postgres(source) => {
                let mut tx = source.pool().begin().await?;
                let position = source
                    .append_in(&mut tx, partition, Some(key), payload)
                    .await?;
                tokio::time::sleep(Duration::from_millis(random.u64(..=20))).await;
                tx.commit().await?;
                Ok(position)
            }
            #[cfg(feature = "source-nats")]
            Self::Nats(source) => Ok(source
                .append(partition, Some(key), payload.to_vec())
                .await?),
            // Produced with acks=all, one record per request: acknowledged means stored.
            #[cfg(feature = "source-kafka")]
            Self::Kafka(source) => Ok(source
                .append(partition, Some(key), payload.to_vec())
                .await?),
        }
    }
}

#[cfg(feature = "source-postgres")]
const WRITERS_POSTGRES: usize = 16;

/// Appends `total` entries over about `over` with the log's writers, each to a random
/// partition, and returns every committed entry. The first failed append fails the run.
pub async fn write(log: Arc<Log>, total: u64, over: Duration) -> Result<Vec<Committed>, BoxError> {
    let writers = log.writers() as u64;
    let next_id = Arc::new(AtomicU64::new(0));
    let commits = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut tasks = JoinSet::new();
    for _ in 0..writers {
        let (log, next_id, commits) =
            (Arc::clone(&log), Arc::clone(&next_id), Arc::clone(&commits));
        let share = total / writers;
        tasks.spawn(async move {
            let mut random = fastrand::Rng::new();
            let mut committed = Vec::new();
            for n in 0..share {
                // Paced, so that the children read while the writers append.
                tokio::time::sleep_until(start + over.mul_f64(n as f64 / share as f64)).await;
                let id = next_id.fetch_add(1, Ordering::Relaxed);
                let partition = random.u32(..PARTITIONS);
                let key = format!("k{id}");
                let position = log
                    .append(partition, &key, &payload::encode(id), &mut random)
                    .await?;
                let order = commits.fetch_add(1, Ordering::Relaxed);
                committed.push(Committed {
                    id,
                    partition,
                    position,
                    order,
                    at: start.elapsed(),
                });
            }
            Ok::<_, BoxError>(committed)
        });
    }
    let mut all = Vec::new();
    while let Some(done) = tasks.join_next().await {
        all.extend(done??);
    }
    Ok(all)
}
