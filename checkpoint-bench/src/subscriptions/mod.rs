//! The subscriptions' rows (`checkpoint-subscription`): a subscription with a no-op handler
//! over each source and store pair, against the loop a user wrote before it existed.
//!
//! - **End-to-end throughput** (`throughput.rs`): a pre-filled log read by a subscription and
//!   by the hand-written loop (`hand_loop.rs`: per partition, read a page from the checkpoint,
//!   handle each entry, `save` after each page), on the same entries; both rates, their ratio
//!   and each one's checkpoint writes.
//! - **Commit → handler latency** (`latency.rs`): entries carrying their send time, appended
//!   one at a time at rest and by 16 concurrent writers; the handler records now − sent.
//! - **Failover and graceful handover with the source attached** (`failover.rs`,
//!   `handover.rs`, on PostgreSQL): two subscriptions while a writer appends; one crashes, then
//!   (after a third joins) one shuts down: the time until the other handles every partition
//!   again, and the entries handled twice.
//!
//! The pairs (`pairs.rs`): PostgreSQL source + PostgreSQL store (with `--backends postgres`),
//! NATS source + Redis store (`redis`), SQLite source + SQLite store (`sqlite`), Kafka source +
//! PostgreSQL store (`kafka`, a name of its own that is not in the default list: it runs only
//! these rows, and needs a broker, `eval "$(bash scripts/services/kafka.sh up)"`). Servers:
//! DATABASE_URL, REDIS_URL, NATS_URL (default nats://127.0.0.1:4222), KAFKA_URL (default
//! kafka://127.0.0.1:9092); one that cannot be reached fails the run. The Kafka pair's
//! throughput log is smaller than the others' (`pairs.rs`: its source appends one record per
//! request), and its setting says so; its latency rows run a second time with short waits
//! (`KAFKA_SHORT_WAIT`), since on tansu the source's wait, not the subscription, sets them.
//! Figures are printed, never asserted: the smoke run fails only when an operation errors.

mod failover;
mod fleet;
mod hand_loop;
mod handover;
mod latency;
mod log;
mod log_kafka;
mod log_nats;
mod log_postgres;
mod log_sqlite;
mod pairs;
mod payload;
mod report;
mod throughput;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub(crate) use report::{Figure, tables};

use crate::subject::{BenchError, context};
use pairs::Pair;

/// The subscription name of every row (each run has groups of its own).
const SUBSCRIPTION: &str = "subscriptions";

/// How long any wait of the rows may take before the run fails: a bound, not a target.
const TIMEOUT: Duration = Duration::from_secs(120);

/// How much of the subscriptions' rows to run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan {
    /// Partitions of the throughput and latency logs.
    partitions: u32,
    /// Entries of the throughput log, over every partition.
    entries: u64,
    /// Throughput rounds (subscription and loop alternately); the best of each is printed.
    rounds: usize,
    /// Latency samples at rest, and per writer of the concurrent writers.
    at_rest: usize,
    per_writer: usize,
    /// Partitions of the failover and handover log.
    ownership_partitions: u32,
    /// Lease and renew interval of the failover and handover rows.
    lease: Duration,
    renew: Duration,
}

/// The Kafka source's wait in the latency rows' second run (`run`): short enough that a
/// broker's hold of a fetch does not hide the subscription, long enough not to be a busy poll.
const KAFKA_SHORT_WAIT: Duration = Duration::from_millis(100);

/// Concurrent writers of the latency row.
const WRITERS: usize = 16;

impl Plan {
    pub(crate) fn new(smoke: bool) -> Self {
        if smoke {
            Self {
                partitions: 4,
                entries: 1_000,
                rounds: 1,
                at_rest: 20,
                per_writer: 4,
                ownership_partitions: 4,
                lease: Duration::from_secs(1),
                renew: Duration::from_millis(200),
            }
        } else {
            Self {
                partitions: 4,
                entries: 100_000,
                rounds: 3,
                at_rest: 200,
                per_writer: 50,
                ownership_partitions: 8,
                lease: Duration::from_secs(2),
                renew: Duration::from_millis(400),
            }
        }
    }
}

/// A name of its own for every group, log and stream of the run.
fn unique(what: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    format!(
        "bench_subs_{}_{}_{what}",
        std::process::id(),
        nanos % 1_000_000_000_000
    )
}

/// Every subscriptions' row on the pairs whose store backend is among `backends`.
pub(crate) async fn run(smoke: bool, backends: &[String]) -> Result<Vec<Figure>, BenchError> {
    let plan = Plan::new(smoke);
    let chosen = |name: &str| backends.iter().any(|b| b == name);
    let mut figures = Vec::new();
    if chosen("postgres") {
        let pair = Pair::postgres().await?;
        run_pair(&pair, plan, &mut figures)
            .await
            .map_err(context(pair.name))?;
        eprintln!("checkpoint-bench: {}: subscriptions: failover", pair.name);
        failover::measure(&pair, plan, &mut figures)
            .await
            .map_err(context(pair.name))?;
        pair.close().await;
    }
    if chosen("redis") {
        let pair = Pair::nats_redis().await?;
        run_pair(&pair, plan, &mut figures)
            .await
            .map_err(context(pair.name))?;
        pair.close().await;
    }
    if chosen("sqlite") {
        let pair = Pair::sqlite().await?;
        let result = run_pair(&pair, plan, &mut figures).await;
        pair.close().await;
        result.map_err(context(pair.name))?;
    }
    if chosen("kafka") {
        let pair = Pair::kafka_postgres(None).await?;
        run_pair(&pair, plan, &mut figures)
            .await
            .map_err(context(pair.name))?;
        // A broker that answers a held fetch only after part of its wait (tansu, `pairs.rs`)
        // makes the default wait the latency: once more with short waits, which poll more.
        let short = Pair::kafka_postgres(Some(KAFKA_SHORT_WAIT)).await?;
        eprintln!("checkpoint-bench: {}: subscriptions: latency", short.name);
        latency::measure(&short, plan, &mut figures)
            .await
            .map_err(context(short.name))?;
    }
    Ok(figures)
}

/// The throughput and latency rows on one pair.
async fn run_pair(pair: &Pair, plan: Plan, figures: &mut Vec<Figure>) -> Result<(), BenchError> {
    eprintln!("checkpoint-bench: {}: subscriptions: throughput", pair.name);
    throughput::measure(pair, plan, figures).await?;
    eprintln!("checkpoint-bench: {}: subscriptions: latency", pair.name);
    latency::measure(pair, plan, figures).await
}

/// Polls `done` every few milliseconds until it holds; fails after [`TIMEOUT`] saying `what`.
async fn wait_for(what: &str, mut done: impl FnMut() -> bool) -> Result<(), BenchError> {
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    while !done() {
        if tokio::time::Instant::now() >= deadline {
            return Err(format!("{what}: not after {TIMEOUT:?}").into());
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    Ok(())
}
