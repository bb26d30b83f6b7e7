//! The writers: one task per partition in the supervisor, appending a burst of entries every
//! period until the supervisor stops (see the crate doc for why in bursts).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use checkpoint_source_sqlite::SqliteSource;
use tokio::task::JoinSet;

use crate::{BoxError, PARTITIONS, STUCK_AT, STUCK_PARTITION};

/// 26 entries every 1.3 s: 20 a second per partition.
const BURST: u64 = 26;
const PERIOD: Duration = Duration::from_millis(1_300);

/// The log, opened for appending by its own type (the `Source` trait only reads). One per
/// run, behind an `Arc`: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
pub enum Log {
    Sqlite(SqliteSource),
    #[cfg(feature = "source-postgres")]
    Postgres(checkpoint_source_postgres::PostgresSource),
}

impl Log {
    /// Creates the log `name` (anew: a PostgreSQL table left by an earlier run is dropped
    /// first) in the source `spec` names and opens it for appending.
    pub async fn create(spec: &str, name: &str) -> Result<Self, BoxError> {
        use checkpoint_examples::log::{create_log, remove_log};
        remove_log(spec, name).await?;
        create_log(
            spec,
            name,
            PARTITIONS,
            &vec![Vec::new(); PARTITIONS as usize],
        )
        .await?;
        if let Some(path) = spec.strip_prefix("sqlite:") {
            let source = SqliteSource::open(path, PARTITIONS).await?;
            return Ok(Self::Sqlite(source.with_table(name)?));
        }
        #[cfg(feature = "source-postgres")]
        if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
            let pool = sqlx::postgres::PgPoolOptions::new()
                .max_connections(PARTITIONS + 1)
                .connect(spec)
                .await?;
            let source = checkpoint_source_postgres::PostgresSource::new(pool, PARTITIONS);
            return Ok(Self::Postgres(source.with_table(name)?));
        }
        Err("the operator fleet writes to sqlite: and postgres:// logs only".into())
    }

    /// Appends entries `first..first + BURST` to `partition` in one transaction: the burst
    /// appears at once. One by one, on a loaded machine, a burst took about as long to append
    /// as its period, a trickle again.
    async fn append_burst(&self, partition: u32, first: u64) -> Result<Vec<u64>, BoxError> {
        let entries =
            (first..first + BURST).map(|n| (format!("p{partition}-{n}"), payload(partition, n)));
        let mut positions = Vec::with_capacity(BURST as usize);
        match self {
            Self::Sqlite(source) => {
                let mut tx = source.pool().begin_with("BEGIN IMMEDIATE").await?;
                for (key, payload) in entries {
                    let appended = source.append_in(&mut tx, partition, Some(&key), &payload);
                    positions.push(appended.await?);
                }
                tx.commit().await?;
            }
            #[cfg(feature = "source-postgres")]
            Self::Postgres(source) => {
                let mut tx = source.pool().begin().await?;
                for (key, payload) in entries {
                    let appended = source.append_in(&mut tx, partition, Some(&key), &payload);
                    positions.push(appended.await?);
                }
                tx.commit().await?;
            }
        }
        Ok(positions)
    }
}

/// The payload of the `n`th entry of `partition`: `partition n`. An entry read back does not
/// say its partition, and `stuck`'s handler needs it.
fn payload(partition: u32, n: u64) -> Vec<u8> {
    format!("{partition} {n}").into_bytes()
}

/// The entry's number in its partition, from a payload of [`payload`], if it is of `partition`.
pub fn number_of(payload: &[u8], partition: u32) -> Option<u64> {
    let (of, n) = std::str::from_utf8(payload).ok()?.split_once(' ')?;
    (of.parse() == Ok(partition)).then(|| n.parse().ok())?
}

/// Starts one writer per partition; each ends with the first append that fails (the
/// supervisor watches the set), or when the set is dropped. `stuck_at` gets the position of
/// the entry `stuck`'s handler never returns from, once committed.
pub fn start(log: Arc<Log>, stuck_at: Arc<OnceLock<u64>>) -> JoinSet<Result<(), BoxError>> {
    let mut writers = JoinSet::new();
    for partition in 0..PARTITIONS {
        let (log, stuck_at) = (Arc::clone(&log), Arc::clone(&stuck_at));
        writers.spawn(async move {
            let mut ticks = tokio::time::interval(PERIOD);
            let mut n = 0;
            loop {
                ticks.tick().await;
                let positions = log
                    .append_burst(partition, n)
                    .await
                    .map_err(|e| format!("append to partition {partition}: {e}"))?;
                if partition == STUCK_PARTITION && (n..n + BURST).contains(&STUCK_AT) {
                    let _ = stuck_at.set(positions[(STUCK_AT - n) as usize]);
                }
                n += BURST;
            }
        });
    }
    writers
}
