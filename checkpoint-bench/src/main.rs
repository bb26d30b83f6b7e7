//! Benchmarks every checkpoint store against the floor of its own server (one round trip of the
//! cheapest request on the same client library), against the raw client running the store's
//! own statement or script, and against the save a user would write by hand.
//!
//! ```text
//! cargo run --release -p checkpoint-bench --features crash -- [--smoke] [--backends postgres,redis,dynamodb,sqlite,mysql,kafka] [--workloads stores,committer,workers,scale,subscriptions] [--markdown PATH]
//! ```
//!
//! `scripts/bench.sh` starts the servers and runs the full benchmark; `--smoke` runs every
//! workload a few times (seconds, also in debug builds) and fails when an operation errors or
//! a round-trip count differs from what the store documents. Timings are never asserted.
//! `--workloads committer` runs only the committer's rows (see `committer.rs`), `stores` only
//! the stores', `workers` only the workers' (see `workers/mod.rs`: PostgreSQL, Redis, SQLite
//! and the in-memory store), `subscriptions` only the subscriptions' (see
//! `subscriptions/mod.rs`: each source and store pair, NATS included); all four by default.
//! `scale` is one of the workers' rows on its own (10,000 partitions over 100 workers, on
//! PostgreSQL and in memory), part of `workers`. `kafka` is a source, not a store, and not
//! among the default backends: `--backends …,kafka` adds the Kafka source + PostgreSQL store
//! pair to the subscriptions' rows (KAFKA_URL, default kafka://127.0.0.1:9092;
//! `eval "$(bash scripts/services/kafka.sh up)"` starts a broker) and has no rows in the other
//! workloads.
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod allocator;
mod bulk;
mod committer;
mod dynamodb;
mod lease_floor;
mod measure;
mod mysql;
mod page;
mod postgres;
mod redis;
mod report;
mod sql;
mod sqlite;
mod stores;
mod subject;
mod subscriptions;
mod workers;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use crate::report::{Row, Target};
use crate::subject::{BenchError, context};

const USAGE: &str = "usage: checkpoint-bench [--smoke] [--backends postgres,redis,dynamodb,sqlite,mysql,kafka] [--workloads stores,committer,workers,scale,subscriptions] [--markdown PATH]";
const ALL_BACKENDS: [&str; 5] = ["postgres", "redis", "dynamodb", "sqlite", "mysql"];
/// Backends that are sources only, asked for by name (not in the default list, so the default
/// run and its page's scope stay the stores'): the subscriptions' rows alone.
const SOURCE_BACKENDS: [&str; 1] = ["kafka"];
const WORKLOADS: [&str; 5] = ["stores", "committer", "workers", "scale", "subscriptions"];
pub(crate) const CONCURRENCIES: [u32; 3] = [1, 16, 64];

/// How much of each workload to run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan {
    smoke: bool,
    latency_rounds: usize,
    latency_per_round: usize,
    throughput_rounds: usize,
    throughput_slice: Duration,
    batch_reps: [usize; 2],
    single_saves: Option<usize>,
    list_reps: usize,
}

impl Plan {
    fn new(smoke: bool) -> Self {
        if smoke {
            Self {
                smoke,
                latency_rounds: 2,
                latency_per_round: 5,
                throughput_rounds: 1,
                throughput_slice: Duration::from_millis(50),
                batch_reps: [1, 1],
                single_saves: Some(100),
                list_reps: 1,
            }
        } else {
            Self {
                smoke,
                latency_rounds: 20,
                latency_per_round: 100,
                throughput_rounds: 3,
                throughput_slice: Duration::from_secs(1),
                batch_reps: [10, 7],
                single_saves: None,
                list_reps: 10,
            }
        }
    }
}

struct Args {
    smoke: bool,
    backends: Vec<String>,
    /// The stores' own workloads (every row but the committer's).
    stores: bool,
    /// The committer's workloads (`committer.rs`).
    committer: bool,
    /// The workers' workloads (`workers/mod.rs`).
    workers: bool,
    /// The workers' scale row alone (part of `workers`).
    scale: bool,
    /// The subscriptions' workloads (`subscriptions/mod.rs`).
    subscriptions: bool,
    markdown: Option<std::path::PathBuf>,
}

impl Args {
    /// The backends and workloads this run covers, as the page's header says them.
    fn scope(&self) -> String {
        let workloads: Vec<&str> = [
            (self.stores, "stores"),
            (self.committer, "committer"),
            (self.workers, "workers (scale included)"),
            (self.scale && !self.workers, "scale"),
            (self.subscriptions, "subscriptions"),
        ]
        .into_iter()
        .filter_map(|(chosen, name)| chosen.then_some(name))
        .collect();
        format!(
            "backends {}; workloads {}",
            self.backends.join(", "),
            workloads.join(", ")
        )
    }

    /// The backends whose stores are set up: none when only the subscriptions' rows run (they
    /// connect to their own servers), and never a source's name (it has no store of its own,
    /// and `setup` would take it for SQLite).
    fn store_backends(&self) -> impl Iterator<Item = &String> {
        let per_backend = self.stores || self.committer || self.workers || self.scale;
        self.backends
            .iter()
            .filter(move |name| per_backend && ALL_BACKENDS.contains(&name.as_str()))
    }
}

fn parse_args() -> Result<Args, BenchError> {
    let mut args = Args {
        smoke: false,
        backends: ALL_BACKENDS.iter().map(|b| (*b).to_owned()).collect(),
        stores: true,
        committer: true,
        workers: true,
        scale: false,
        subscriptions: true,
        markdown: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--smoke" => args.smoke = true,
            "--backends" => {
                let list = it.next().ok_or(USAGE)?;
                args.backends = list.split(',').map(|b| b.trim().to_owned()).collect();
                if let Some(unknown) = args.backends.iter().find(|b| {
                    !ALL_BACKENDS.contains(&b.as_str()) && !SOURCE_BACKENDS.contains(&b.as_str())
                }) {
                    return Err(format!("unknown backend {unknown:?}; {USAGE}").into());
                }
            }
            "--workloads" => {
                let list = it.next().ok_or(USAGE)?;
                let chosen: Vec<&str> = list.split(',').map(str::trim).collect();
                if let Some(unknown) = chosen.iter().find(|w| !WORKLOADS.contains(w)) {
                    return Err(format!("unknown workload {unknown:?}; {USAGE}").into());
                }
                args.stores = chosen.contains(&"stores");
                args.committer = chosen.contains(&"committer");
                args.workers = chosen.contains(&"workers");
                args.scale = chosen.contains(&"scale");
                args.subscriptions = chosen.contains(&"subscriptions");
            }
            "--markdown" => args.markdown = Some(it.next().ok_or(USAGE)?.into()),
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other:?}; {USAGE}").into()),
        }
    }
    Ok(args)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(error) => {
            eprintln!("{error}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("checkpoint-bench: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("checkpoint-bench: FAILED: {error}");
            let mut source = error.source();
            while let Some(cause) = source {
                eprintln!("  caused by: {cause}");
                source = cause.source();
            }
            ExitCode::FAILURE
        }
    }
}

/// Runs every chosen backend; `Ok(false)` when a round-trip count (or a worker's requests per
/// round at rest) differed from the documented one (the tables are printed first).
async fn run(args: Args) -> Result<bool, BenchError> {
    let plan = Plan::new(args.smoke);
    let max_concurrency = CONCURRENCIES.iter().copied().max().unwrap_or(1);
    let started = Instant::now();
    let (commit, date, load_before) = (page::commit(), page::now(), page::load());
    let mut rows = Vec::new();
    let mut targets = Vec::new();
    let mut mismatches = Vec::new();
    let mut servers = Vec::new();
    let mut notes = Vec::new();
    let mut figures = Vec::new();
    // First, while nothing else runs: its memory count is process-wide.
    let in_process = if args.committer {
        Some(committer::in_process(plan.smoke).await?)
    } else {
        None
    };
    for name in args.store_backends() {
        eprintln!("checkpoint-bench: {name}: setting up");
        let sqlite_path = sqlite::database_path();
        let backend = setup(name, plan, max_concurrency, &sqlite_path).await?;
        servers.push(format!("- Server ({}): {}", backend.name, backend.server));
        if !backend.note.is_empty() {
            notes.push(format!("- Note ({}): {}", backend.name, backend.note));
        }
        let result = run_workloads(&args, plan, &backend, max_concurrency).await;
        drop(backend);
        if name == "sqlite" {
            sqlite::remove(&sqlite_path);
        }
        let outcome = result.map_err(context(name.clone()))?;
        rows.extend(outcome.rows);
        targets.extend(outcome.targets);
        mismatches.extend(outcome.mismatches);
        figures.extend(outcome.workers);
    }
    if args.workers || args.scale {
        let found = workers::run_in_memory(workers::Plan::new(plan.smoke)).await?;
        figures.extend(found.figures);
        mismatches.extend(found.mismatches);
    }
    let subscriptions = if args.subscriptions {
        subscriptions::run(plan.smoke, &args.backends).await?
    } else {
        Vec::new()
    };
    if let Some((in_process_rows, in_process_targets)) = in_process {
        rows.extend(in_process_rows);
        targets.extend(in_process_targets);
    }

    let mode = if plan.smoke {
        "smoke (a few iterations: figures are not meaningful)"
    } else {
        "full"
    };
    let run = page::Run {
        commit,
        date,
        mode,
        machine: page::machine(),
        load_before,
        load_after: page::load(),
        seconds: started.elapsed().as_secs_f64(),
        scope: args.scope(),
        servers,
        notes,
    };
    let markdown = page::render(&run, &rows, &targets, &figures, &subscriptions);
    println!("{markdown}");
    if let Some(path) = &args.markdown {
        std::fs::write(path, &markdown).map_err(context(format!("writing {}", path.display())))?;
    }
    Ok(verdict(&mismatches))
}

/// Connects to the server of backend `name` (SQLite: opens the file at `sqlite_path`) with a
/// pool for `max_concurrency` callers.
async fn setup(
    name: &str,
    plan: Plan,
    max_concurrency: u32,
    sqlite_path: &std::path::Path,
) -> Result<subject::Backend, BenchError> {
    match name {
        "postgres" => postgres::setup(max_concurrency).await,
        "redis" => redis::setup(max_concurrency).await,
        "dynamodb" => dynamodb::setup(plan.smoke).await,
        "mysql" => mysql::setup(max_concurrency).await,
        _ => sqlite::setup(sqlite_path, max_concurrency).await,
    }
}

/// Says whether every structural count was the documented one; `false` fails the run.
fn verdict(mismatches: &[String]) -> bool {
    for mismatch in mismatches {
        eprintln!("checkpoint-bench: COUNTS DIFFER: {mismatch}");
    }
    if mismatches.is_empty() {
        eprintln!(
            "checkpoint-bench: every round-trip count (and every worker's requests per renew \
             interval at rest) is the documented one"
        );
    }
    mismatches.is_empty()
}

/// The chosen workloads on one backend.
async fn run_workloads(
    args: &Args,
    plan: Plan,
    backend: &subject::Backend,
    max_concurrency: u32,
) -> Result<Outcome, BenchError> {
    let name = backend.name;
    let mut outcome = if args.stores {
        stores::run_backend(backend, plan, max_concurrency).await?
    } else {
        Outcome::default()
    };
    if args.committer && name != "dynamodb" {
        let (rows, targets) = committer::end_to_end(
            name,
            &(std::sync::Arc::clone(&backend.direct.store)
                as std::sync::Arc<dyn checkpoint_core::CheckpointStore>),
            plan.smoke,
        )
        .await?;
        outcome.rows.extend(rows);
        outcome.targets.extend(targets);
    }
    // Not on the DynamoDB emulators: moto walks the whole table for every lease table read,
    // which the workers make every round.
    if (args.workers || args.scale) && name != "dynamodb" {
        let plan = workers::Plan::new(plan.smoke);
        let store = &backend.direct.store;
        let found = if args.workers {
            workers::run_backend(name, store, plan).await?
        } else {
            workers::run_scale(name, store, plan).await?
        };
        outcome.workers.extend(found.figures);
        outcome.mismatches.extend(found.mismatches);
    }
    Ok(outcome)
}

#[derive(Default)]
pub(crate) struct Outcome {
    rows: Vec<Row>,
    targets: Vec<Target>,
    mismatches: Vec<String>,
    /// The workers' figures (`workers/report.rs`).
    workers: Vec<workers::Figure>,
}
