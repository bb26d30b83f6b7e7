//! Figures of the PostgreSQL source, printed, never asserted:
//!
//! - read throughput of one partition, entries/s, against the raw query of the same rows
//!   (`WHERE partition = $1 AND seq > $2 ORDER BY seq LIMIT n` on its own index);
//! - commit → reader latency at rest (LISTEN/NOTIFY), p50/p99/max;
//! - the same with one long transaction open for 2 s (how long entries wait, and how soon the
//!   reader has them all after it ends);
//! - the same under 16 writers.
//!
//! `DATABASE_URL` names the server (default `postgres://postgres@127.0.0.1:5432/test`):
//! `cargo run --release -p checkpoint-source-postgres --example source_bench`.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use checkpoint_core::source::Source;
use checkpoint_source_postgres::PostgresSource;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{AssertSqlSafe, PgPool};

type Error = Box<dyn std::error::Error + Send + Sync>;

const ROWS: i64 = 200_000;

/// A row of the raw query: sequence, key, payload, time in microseconds.
type RawRow = (i64, Option<String>, Vec<u8>, Option<i64>);
const PAGE: usize = 1000;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let pool = PgPoolOptions::new()
        .max_connections(24)
        .connect_with(PgConnectOptions::from_str(&url)?)
        .await?;
    let table = format!("bench_{}", std::process::id());
    let source = PostgresSource::new(pool.clone(), 8).with_table(&table)?;
    source.migrate().await?;
    throughput(&pool, &source, &table).await?;
    let at_rest = latency(&source, 1, 300, 1, None).await?;
    report("commit -> reader at rest (LISTEN/NOTIFY)", &at_rest.0);
    let long = latency(&source, 2, 100, 1, Some(Duration::from_secs(2))).await?;
    report("commit -> reader, one transaction open for 2 s", &long.0);
    if let Some(caught_up) = long.1 {
        println!("  reader had every entry {caught_up:.1?} after the long transaction ended");
    }
    let loaded = latency(&source, 3, 200, 16, None).await?;
    report("commit -> reader under 16 writers", &loaded.0);
    for statement in [
        format!("DROP TABLE \"{table}\""),
        format!("DROP TABLE \"{table}_source\""),
    ] {
        sqlx::query(AssertSqlSafe(statement)).execute(&pool).await?;
    }
    Ok(())
}

/// Reads `ROWS` entries of partition 0 through the source and through the raw query, best of 3.
async fn throughput(pool: &PgPool, source: &PostgresSource, table: &str) -> Result<(), Error> {
    for _ in 0..ROWS / 10_000 {
        let fill = format!(
            "INSERT INTO \"{table}\" (partition, key, payload) \
             SELECT 0, 'stream-' || (i % 100), convert_to(repeat('x', 100), 'UTF8') \
               FROM generate_series(1, 10000) i"
        );
        sqlx::query(AssertSqlSafe(fill)).execute(pool).await?;
    }
    let index = format!("CREATE INDEX \"{table}_raw\" ON \"{table}\" (partition, seq)");
    sqlx::query(AssertSqlSafe(index)).execute(pool).await?;
    sqlx::query(AssertSqlSafe(format!("VACUUM ANALYZE \"{table}\"")))
        .execute(pool)
        .await?;
    // The same columns as the source reads, the time as microseconds as it does.
    let raw = format!(
        "SELECT seq, key, payload, (extract(epoch FROM appended_at) * 1000000)::int8 \
           FROM \"{table}\" WHERE partition = $1 AND seq > $2 ORDER BY seq LIMIT $3"
    );
    let (mut best_source, mut best_raw) = (Duration::MAX, Duration::MAX);
    for _ in 0..3 {
        let started = Instant::now();
        let (mut from, mut read) = (0, 0);
        loop {
            let page = source.read(0, from, PAGE).await?;
            if page.entries.is_empty() {
                break;
            }
            read += page.entries.len();
            from = page.next;
        }
        assert_eq!(read as i64, ROWS);
        best_source = best_source.min(started.elapsed());
        let started = Instant::now();
        let mut last = 0i64;
        loop {
            let page: Vec<RawRow> = sqlx::query_as(AssertSqlSafe(raw.clone()))
                .bind(0i32)
                .bind(last)
                .bind(PAGE as i64)
                .fetch_all(pool)
                .await?;
            let Some(end) = page.last() else { break };
            last = end.0;
        }
        best_raw = best_raw.min(started.elapsed());
    }
    let rate = |elapsed: Duration| ROWS as f64 / elapsed.as_secs_f64();
    println!(
        "read throughput, one partition of {ROWS} entries in pages of {PAGE} (best of 3): \
         source {:.0} entries/s, raw query {:.0} entries/s, ratio {:.2}",
        rate(best_source),
        rate(best_raw),
        best_raw.as_secs_f64() / best_source.as_secs_f64(),
    );
    Ok(())
}

type Times = Arc<Mutex<HashMap<u64, Instant>>>;

/// Each entry's latency from its commit's acknowledgement, and from the commit request (which
/// includes the commit's WAL flush).
type Latencies = (Vec<Duration>, Vec<Duration>);

/// `writers` writers append `count` entries each to `partition`, one per transaction, 10 ms
/// apart, while a reader reads them (with a transaction open for `long` first, when given):
/// each entry's time from its commit to the reader, and when the long transaction ended, how
/// long after that the reader had everything.
async fn latency(
    source: &PostgresSource,
    partition: u32,
    count: u64,
    writers: u64,
    long: Option<Duration>,
) -> Result<(Latencies, Option<Duration>), Error> {
    let (sent, acked, received): (Times, Times, Times) = Default::default();
    let total = (count * writers) as usize;
    // Where the reader starts, before any writer: the head once the reader task runs could
    // already be past the first entries.
    let from = source.head(partition).await?.map_or(0, |head| head + 1);
    let reader = {
        let (source, received) = (source.clone(), Arc::clone(&received));
        tokio::spawn(async move { read(&source, partition, from, total, &received).await })
    };
    let long_end = match long {
        Some(open) => {
            let mut transaction = source.pool().begin().await?;
            sqlx::query("SELECT pg_current_xact_id()")
                .execute(&mut *transaction)
                .await?;
            Some(tokio::spawn(async move {
                tokio::time::sleep(open).await;
                transaction.commit().await.map(|()| Instant::now())
            }))
        }
        None => None,
    };
    let mut tasks = Vec::new();
    for writer in 0..writers {
        let (source, sent, acked) = (source.clone(), Arc::clone(&sent), Arc::clone(&acked));
        tasks.push(tokio::spawn(async move {
            for i in 0..count {
                let id = writer << 32 | i;
                let mut transaction = source.pool().begin().await?;
                source
                    .append_in(&mut transaction, partition, None, &id.to_be_bytes())
                    .await?;
                sent.lock().unwrap().insert(id, Instant::now());
                transaction.commit().await?;
                acked.lock().unwrap().insert(id, Instant::now());
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Ok::<(), Error>(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    let long_end = match long_end {
        Some(task) => Some(task.await??),
        None => None,
    };
    let last = match tokio::time::timeout(Duration::from_secs(60), reader).await {
        Ok(done) => done??,
        Err(_) => {
            let got = received.lock().unwrap().len();
            return Err(format!("the reader had {got} of {total} entries after 60 s").into());
        }
    };
    let received = received.lock().unwrap();
    let since = |times: &Times| {
        let times = times.lock().unwrap();
        let mut latencies: Vec<Duration> = received
            .iter()
            .filter_map(|(id, at)| Some(at.saturating_duration_since(*times.get(id)?)))
            .collect();
        latencies.sort_unstable();
        latencies
    };
    Ok((
        (since(&acked), since(&sent)),
        long_end.map(|end| last.saturating_duration_since(end)),
    ))
}

/// Reads `partition` from `from` until `total` entries arrived; when the last one did.
async fn read(
    source: &PostgresSource,
    partition: u32,
    mut from: u64,
    total: usize,
    received: &Times,
) -> Result<Instant, Error> {
    let mut last = Instant::now();
    while received.lock().unwrap().len() < total {
        let page = source.read(partition, from, 1000).await?;
        let now = Instant::now();
        for entry in &page.entries {
            let id = u64::from_be_bytes(entry.payload[..].try_into()?);
            received.lock().unwrap().insert(id, now);
            last = now;
        }
        from = page.next;
        if page.entries.is_empty() {
            source.wait(partition, from).await?;
        }
    }
    Ok(last)
}

fn report(what: &str, (from_ack, from_request): &Latencies) {
    percentiles(
        &format!("{what}, from the commit's acknowledgement"),
        from_ack,
    );
    percentiles(
        &format!("{what}, from the commit request (WAL flush included)"),
        from_request,
    );
}

fn percentiles(what: &str, latencies: &[Duration]) {
    let at = |q: f64| {
        latencies
            .get(((latencies.len() as f64 * q) as usize).min(latencies.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    println!(
        "{what}: {} entries, p50 {:.2?}, p99 {:.2?}, max {:.2?}",
        latencies.len(),
        at(0.50),
        at(0.99),
        latencies.last().copied().unwrap_or_default(),
    );
}
