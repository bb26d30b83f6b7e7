//! Subscription metrics: two subscriptions over an SQLite log publish their figures, and their
//! workers' figures, through the `metrics` facade, and `metrics-exporter-prometheus` serves
//! them for Prometheus to scrape.
//!
//! ```text
//! cargo run -p checkpoint-examples --features metrics --bin subscription_metrics
//! cargo run -p checkpoint-examples --features metrics --bin subscription_metrics -- --listen 0.0.0.0:9000 --seconds 60
//! curl -s http://127.0.0.1:9000/metrics | grep checkpoint_
//! ```
//!
//! The library chooses no exporter: this program installs one
//! (`PrometheusBuilder::new().with_http_listener(addr).install()`) before the subscriptions
//! start, and the `metrics` feature of `checkpoint` does the rest. The log and the store share
//! one SQLite file in the temporary folder (removed at the end). A writer appends to the log's
//! 4 partitions all along: a trickle every 100 ms, and every 10 s (the first after 3 s) a
//! burst into partition 0 that the handlers take a second or two to catch up with (the lag
//! panels move). Every 25th entry of partition 3 is poison: its handler always fails.
//!
//! Both subscriptions are in group `metrics-example`: `invoices` parks its poison entries
//! after 3 runs (`checkpoint_subscription_parked_total` grows) and goes on; `audit` keeps the
//! default, [`OnPoison::Stop`], so its partition 3 stops at the first poison entry
//! (`checkpoint_subscription_stopped_on_poison` is 1 there, and its lag in seconds grows while
//! the other partitions keep up). The Grafana dashboard for these figures is
//! `docs/dashboards/checkpoint-subscriptions.json`.
//!
//! It runs until Ctrl-C (or SIGTERM), or for `--seconds N`, then shuts both subscriptions down
//! gracefully and prints what they did. `--listen` defaults to `127.0.0.1:9000`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use checkpoint::source::sqlite::SqliteSource;
use checkpoint::source::{Entry, Source};
use checkpoint::sqlite::SqliteCheckpointStore;
use checkpoint::subscription::SubscriptionStats;
use checkpoint::{HandlerResult, OnPoison, Retry, Subscription};
use metrics_exporter_prometheus::PrometheusBuilder;
use metrics_util::MetricKindMask;
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::task::JoinSet;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const PARTITIONS: u32 = 4;
const GROUP: &str = "metrics-example";
/// Parks its poison entries and goes on.
const PARKING: &str = "invoices";
/// Stops a partition at its first poison entry (the default).
const STOPPING: &str = "audit";
/// The payload whose handler always fails.
const POISON: &[u8] = b"poison";
/// Every `POISON_EVERY`th entry appended to `POISON_PARTITION` is poison.
const POISON_PARTITION: u32 = 3;
const POISON_EVERY: u64 = 25;
/// The trickle: `PER_TICK` entries per partition every `TICK`.
const TICK: Duration = Duration::from_millis(100);
const PER_TICK: u64 = 2;
/// The burst: `BURST` entries into partition 0 every `BURST_EVERY` ticks (10 s), the first
/// after 3 s (a short run shows one too).
const BURST: u64 = 1_500;
const BURST_EVERY: u64 = 100;
const FIRST_BURST: u64 = 30;
/// Figures are published every lag interval: once a second here (a scrape every 15 s sees
/// fresh ones), where the default is kinder to a store with many partitions.
const LAG_INTERVAL: Duration = Duration::from_secs(1);
/// A handler's work: a few milliseconds, at most `IN_FLIGHT` at once per partition, so that a
/// burst takes seconds to drain.
const IN_FLIGHT: usize = 4;
/// Gauges are set every lag interval (the subscription's) and every lease round (the
/// worker's, 2 s by default): one not set for this long belongs to a partition this process
/// no longer reads.
const GAUGES_IDLE: Duration = Duration::from_secs(30);
/// A progress line this often.
const REPORT_EVERY: Duration = Duration::from_secs(5);

/// The command line: where the exporter listens, and for how long to run.
struct Args {
    listen: SocketAddr,
    seconds: Option<u64>,
}

#[tokio::main]
async fn main() -> ExitCode {
    let result = match parse_args(std::env::args().skip(1).collect()) {
        Ok(args) => run(args).await,
        Err(error) => Err(error),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("subscription_metrics failed: {error}");
            ExitCode::FAILURE
        }
    }
}

/// `--listen ADDR` (default `127.0.0.1:9000`) and `--seconds N` (default: until a signal).
fn parse_args(args: Vec<String>) -> Result<Args, BoxError> {
    let mut parsed = Args {
        listen: SocketAddr::from(([127, 0, 0, 1], 9000)),
        seconds: None,
    };
    let mut args = args.into_iter();
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--listen" => parsed.listen = value.parse()?,
            "--seconds" => parsed.seconds = Some(value.parse()?),
            _ => {
                return Err(format!("unknown argument {flag} (--listen ADDR, --seconds N)").into());
            }
        }
    }
    Ok(parsed)
}

async fn run(args: Args) -> Result<(), BoxError> {
    // Before anything starts: a SIGTERM from then on shuts down gracefully, not the default way.
    let terminate = signal(SignalKind::terminate())?;
    // The recorder next: figures published before it is installed go nowhere. The listener
    // is bound here, so a port in use fails now rather than in the background. A gauge not
    // set for `GAUGES_IDLE` is dropped from the scrape: a partition handed over to another
    // process is no longer published here, and its last lag would otherwise stay on show.
    PrometheusBuilder::new()
        .with_http_listener(args.listen)
        .idle_timeout(MetricKindMask::GAUGE, Some(GAUGES_IDLE))
        .install()?;
    println!("metrics: http://{}/metrics", args.listen);

    let path = std::env::temp_dir().join(format!(
        "checkpoint-subscription-metrics-{}.sqlite3",
        std::process::id()
    ));
    let source = SqliteSource::open(&path, PARTITIONS).await?;
    source.migrate().await?;
    let store = Arc::new(SqliteCheckpointStore::open(&path).await?);
    store.migrate().await?;
    let log: Arc<dyn Source> = Arc::new(source.clone());
    let parking = start(&store, &log, PARKING, OnPoison::park(Arc::clone(&store)))?;
    let stopping = start(&store, &log, STOPPING, OnPoison::Stop)?;
    println!(
        "group {GROUP}: {PARKING} parks poison entries, {STOPPING} stops on them; {PARTITIONS} partitions"
    );

    let writer = tokio::spawn(append_entries(source));
    let reporter = tokio::spawn(report(Arc::clone(&parking), Arc::clone(&stopping)));
    let why = wait(terminate, args.seconds).await;
    writer.abort();
    reporter.abort();
    println!("{why}: shutting down (every partition handed over)");
    parking.shutdown().await?;
    stopping.shutdown().await?;
    println!("{PARKING}: {}", describe(&parking.stats()));
    println!("{STOPPING}: {}", describe(&stopping.stats()));
    remove_database(&path);
    Ok(())
}

/// Starts `name` over `log`, its poison entries handled as `on_poison` says. Shared with the
/// progress reporter.
fn start(
    store: &Arc<SqliteCheckpointStore>,
    log: &Arc<dyn Source>,
    name: &str,
    on_poison: OnPoison,
) -> Result<Arc<Subscription>, BoxError> {
    let subscription = Subscription::builder(Arc::clone(store), Arc::clone(log), GROUP, name)
        .handler(|entry: Arc<Entry>| async move {
            if entry.payload == POISON {
                return Err("a poison entry: its handler always fails".into());
            }
            tokio::time::sleep(Duration::from_millis(fastrand::u64(2..=8))).await;
            HandlerResult::Ok(())
        })
        .max_in_flight(IN_FLIGHT)
        // Three runs 10-40 ms apart: a poison entry is parked (or stops its partition) fast.
        .retry(Retry::exponential(Duration::from_millis(10), Duration::from_millis(40)).attempts(3))
        .on_poison(on_poison)
        .lag_interval(LAG_INTERVAL)
        .worker(|worker| worker.worker_id(format!("{name}-{}", std::process::id())))
        .start()?;
    Ok(Arc::new(subscription))
}

/// Appends the trickle every tick and the burst every `BURST_EVERY` ticks, for ever. The
/// appends of a tick are concurrent: the source's writer commits them in one transaction.
async fn append_entries(source: SqliteSource) {
    let mut ticks = tokio::time::interval(TICK);
    let mut appended = [0u64; PARTITIONS as usize];
    for tick in 0u64.. {
        ticks.tick().await;
        let mut appends = JoinSet::new();
        for partition in 0..PARTITIONS {
            let burst = partition == 0 && tick % BURST_EVERY == FIRST_BURST;
            let count = if burst { BURST } else { PER_TICK };
            for _ in 0..count {
                let n = &mut appended[partition as usize];
                *n += 1;
                let poison = partition == POISON_PARTITION && *n % POISON_EVERY == 0;
                let payload: &[u8] = if poison { POISON } else { b"issued" };
                let key = format!("invoice-{partition}-{n}");
                let source = source.clone();
                appends.spawn(async move { source.append(partition, Some(&key), payload).await });
            }
        }
        while let Some(done) = appends.join_next().await {
            // A failed append is reported and left out: the figures are what matters here.
            if let Ok(Err(error)) = done {
                eprintln!("an append failed: {error}");
            }
        }
    }
}

/// A line per subscription every `REPORT_EVERY`, for whoever runs it by hand.
async fn report(parking: Arc<Subscription>, stopping: Arc<Subscription>) {
    let mut ticks = tokio::time::interval(REPORT_EVERY);
    ticks.tick().await;
    loop {
        ticks.tick().await;
        println!("   {PARKING}: {}", describe(&parking.stats()));
        println!("   {STOPPING}: {}", describe(&stopping.stats()));
    }
}

/// Handled, retried, parked, and the lag of each partition read.
fn describe(stats: &SubscriptionStats) -> String {
    let lags: Vec<String> = stats
        .partitions
        .iter()
        .map(|p| {
            let stopped = if p.stopped_at.is_some() {
                " stopped"
            } else {
                ""
            };
            format!("p{}={}{stopped}", p.partition, p.lag_positions)
        })
        .collect();
    let lags = if lags.is_empty() {
        "no partition held".to_owned()
    } else {
        format!("lag {}", lags.join(" "))
    };
    format!(
        "handled {}, retries {}, parked {}; {lags}",
        stats.handled, stats.retries, stats.parked
    )
}

/// Waits for Ctrl-C, SIGTERM or the end of `--seconds`, and says which.
async fn wait(mut terminate: Signal, seconds: Option<u64>) -> &'static str {
    let elapsed = async {
        match seconds {
            Some(seconds) => tokio::time::sleep(Duration::from_secs(seconds)).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => "Ctrl-C",
        _ = terminate.recv() => "SIGTERM",
        () = elapsed => "--seconds elapsed",
    }
}

/// The database and SQLite's files beside it; one left behind is only a temporary file.
fn remove_database(path: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut file = PathBuf::from(path);
        file.as_mut_os_string().push(suffix);
        let _ = std::fs::remove_file(file);
    }
}
