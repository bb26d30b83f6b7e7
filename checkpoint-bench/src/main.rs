//! Benchmarks every checkpoint store against the floor of its own server (one round trip of the
//! cheapest request on the same client library), against the raw client running the store's
//! own statement or script, and against the save a user would write by hand.
//!
//! ```text
//! cargo run --release -p checkpoint-bench -- [--smoke] [--backends postgres,redis,dynamodb,sqlite] [--workloads stores,committer] [--markdown PATH]
//! ```
//!
//! `scripts/bench.sh` starts the servers and runs the full benchmark; `--smoke` runs every
//! workload a few times (seconds, also in debug builds) and fails when an operation errors or
//! a round-trip count differs from what the store documents. Timings are never asserted.
//! `--workloads committer` runs only the committer's rows (see `committer.rs`), `stores` only
//! the stores'; both by default.
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod allocator;
mod committer;
mod dynamodb;
mod measure;
mod postgres;
mod redis;
mod report;
mod sqlite;
mod subject;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use checkpoint_core::Checkpoint;

use crate::measure::{
    Op, Samples, Trips, count, interleaved_latency, interleaved_throughput, round_trips, time_once,
};
use crate::report::{Row, Target};
use crate::subject::{
    Backend, BenchError, SaveArgs, SaveFn, Subject, context, next_position, reserve_positions,
};

const USAGE: &str = "usage: checkpoint-bench [--smoke] [--backends postgres,redis,dynamodb,sqlite] [--workloads stores,committer] [--markdown PATH]";
const ALL_BACKENDS: [&str; 4] = ["postgres", "redis", "dynamodb", "sqlite"];
const CONCURRENCIES: [u32; 3] = [1, 16, 64];

/// How much of each workload to run.
#[derive(Debug, Clone, Copy)]
struct Plan {
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
                batch_reps: [10, 3],
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
    markdown: Option<std::path::PathBuf>,
}

fn parse_args() -> Result<Args, BenchError> {
    let mut args = Args {
        smoke: false,
        backends: ALL_BACKENDS.iter().map(|b| (*b).to_owned()).collect(),
        stores: true,
        committer: true,
        markdown: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--smoke" => args.smoke = true,
            "--backends" => {
                let list = it.next().ok_or(USAGE)?;
                args.backends = list.split(',').map(|b| b.trim().to_owned()).collect();
                if let Some(unknown) = args
                    .backends
                    .iter()
                    .find(|b| !ALL_BACKENDS.contains(&b.as_str()))
                {
                    return Err(format!("unknown backend {unknown:?}; {USAGE}").into());
                }
            }
            "--workloads" => {
                let list = it.next().ok_or(USAGE)?;
                let chosen: Vec<&str> = list.split(',').map(str::trim).collect();
                if let Some(unknown) = chosen.iter().find(|w| !["stores", "committer"].contains(w))
                {
                    return Err(format!("unknown workload {unknown:?}; {USAGE}").into());
                }
                args.stores = chosen.contains(&"stores");
                args.committer = chosen.contains(&"committer");
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

/// Runs every chosen backend; `Ok(false)` when a round-trip count differed from the documented
/// one (the table is printed first).
async fn run(args: Args) -> Result<bool, BenchError> {
    let plan = Plan::new(args.smoke);
    let max_concurrency = CONCURRENCIES.iter().copied().max().unwrap_or(1);
    let started = Instant::now();
    let mut rows = Vec::new();
    let mut targets = Vec::new();
    let mut mismatches = Vec::new();
    let mut servers = Vec::new();
    let mut notes = Vec::new();
    // First, while nothing else runs: its memory count is process-wide.
    let in_process = if args.committer {
        Some(committer::in_process(plan.smoke).await?)
    } else {
        None
    };
    for name in &args.backends {
        eprintln!("checkpoint-bench: {name}: setting up");
        let sqlite_path = sqlite::database_path();
        let backend = match name.as_str() {
            "postgres" => postgres::setup(max_concurrency).await?,
            "redis" => redis::setup(max_concurrency).await?,
            "dynamodb" => dynamodb::setup(plan.smoke).await?,
            _ => sqlite::setup(&sqlite_path, max_concurrency).await?,
        };
        servers.push(format!("- {}: {}", backend.name, backend.server));
        if !backend.note.is_empty() {
            notes.push(format!("- {}: {}", backend.name, backend.note));
        }
        let result = async {
            let mut outcome = if args.stores {
                run_backend(&backend, plan, max_concurrency).await?
            } else {
                Outcome::default()
            };
            if args.committer && name != "dynamodb" {
                let (rows, targets) =
                    committer::end_to_end(backend.name, &backend.direct.store, plan.smoke).await?;
                outcome.rows.extend(rows);
                outcome.targets.extend(targets);
            }
            Ok::<_, BenchError>(outcome)
        }
        .await;
        drop(backend);
        if name == "sqlite" {
            sqlite::remove(&sqlite_path);
        }
        let outcome = result.map_err(context(name.clone()))?;
        rows.extend(outcome.rows);
        targets.extend(outcome.targets);
        mismatches.extend(outcome.mismatches);
    }
    if let Some((in_process_rows, in_process_targets)) = in_process {
        rows.extend(in_process_rows);
        targets.extend(in_process_targets);
    }

    let mode = if plan.smoke {
        "smoke (a few iterations: figures are not meaningful)"
    } else {
        "full"
    };
    let mut markdown = format!(
        "Mode: {mode}. Machine: {}. Ran in {:.0} s.\n\n{}\n\n{}\n\n",
        machine(),
        started.elapsed().as_secs_f64(),
        servers.join("\n"),
        notes.join("\n"),
    );
    markdown.push_str(&report::figures(&rows));
    markdown.push('\n');
    markdown.push_str(report::LEGEND);
    markdown.push_str("\n\n");
    markdown.push_str(&report::targets(&targets));
    println!("{markdown}");
    if let Some(path) = &args.markdown {
        std::fs::write(path, &markdown).map_err(context(format!("writing {}", path.display())))?;
    }
    if mismatches.is_empty() {
        eprintln!("checkpoint-bench: every round-trip count is the documented one");
        Ok(true)
    } else {
        for mismatch in &mismatches {
            eprintln!("checkpoint-bench: ROUND TRIPS DIFFER: {mismatch}");
        }
        Ok(false)
    }
}

/// The machine in one line: CPUs, memory, CPU model.
fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, usize::from);
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|line| line.strip_prefix("MemTotal:"))
                .and_then(|kb| kb.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or_else(
            || "unknown memory".to_owned(),
            |kb| format!("{:.1} GiB", kb / 1024.0 / 1024.0),
        );
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|line| line.strip_prefix("model name"))
                .map(|rest| rest.trim_start_matches([' ', '\t', ':']).to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    format!(
        "{cpus} CPUs ({model}), {memory}, {}",
        std::env::consts::ARCH
    )
}

#[derive(Default)]
struct Outcome {
    rows: Vec<Row>,
    targets: Vec<Target>,
    mismatches: Vec<String>,
}

fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A group name of this run, unique per process and start time.
fn group(run: &str, suffix: &str) -> Arc<str> {
    format!("bench-{run}-{suffix}").into()
}

/// A save through `save` on the worker's own key.
fn save_op(save: SaveFn, groups: Arc<Vec<Arc<str>>>, subscription: &'static str) -> Op {
    let subscription: Arc<str> = subscription.into();
    Arc::new(move |worker| {
        save(SaveArgs {
            group: Arc::clone(&groups[worker as usize % groups.len()]),
            subscription: Arc::clone(&subscription),
            partition: worker,
            position: next_position(),
        })
    })
}

/// A save through the store, on the worker's own key.
fn store_save_op(subject: &Subject, groups: Arc<Vec<Arc<str>>>) -> Op {
    let store = Arc::clone(&subject.store);
    let save: SaveFn = Arc::new(move |args: SaveArgs| {
        let store = Arc::clone(&store);
        Box::pin(async move {
            store
                .save(
                    &args.group,
                    &args.subscription,
                    args.partition,
                    args.position,
                )
                .await?;
            Ok(())
        })
    });
    save_op(save, groups, "store")
}

fn floor_op(subject: &Subject) -> Op {
    let floor = Arc::clone(&subject.floor);
    Arc::new(move |_| floor())
}

fn batch(n: usize, position: u64) -> Vec<Checkpoint> {
    (0..n)
        .map(|i| {
            Checkpoint::new(
                "batch",
                u32::try_from(i).unwrap_or(u32::MAX),
                position + i as u64,
            )
        })
        .collect()
}

#[allow(clippy::too_many_lines)] // one workload after the other, in the order of the table
async fn run_backend(
    backend: &Backend,
    plan: Plan,
    max_concurrency: u32,
) -> Result<Outcome, BenchError> {
    let name = backend.name;
    let plan = if backend.slow && !plan.smoke {
        // 200 latency samples per operation instead of 2,000, fewer batch calls, and the single
        // saves timed over 200 and scaled: an emulator that serves a few hundred requests a
        // second (tens on a busy machine).
        Plan {
            latency_per_round: plan.latency_per_round / 10,
            batch_reps: [3, 1],
            single_saves: Some(200),
            list_reps: 3,
            ..plan
        }
    } else {
        plan
    };
    let subject = &backend.direct;
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    let run = format!("{}-{nanos}", std::process::id());
    let mut rows = Vec::new();
    let mut targets = Vec::new();
    let mut mismatches = Vec::new();

    // --- Round trips, counted through the proxy, one operation after a warm-up each. ---
    let mut trips = RoundTrips::default();
    if let Some((counted, proxy)) = &backend.counted {
        eprintln!("checkpoint-bench: {name}: counting round trips");
        let g = group(&run, "rt");
        let release = backend.release_exchanges;
        let store = &counted.store;
        trips.floor = Some(round_trips("floor", proxy, release, || (counted.floor)()).await?);
        if let Some(commit) = &counted.commit_floor {
            trips.commit_floor =
                Some(round_trips("commit floor", proxy, release, || commit()).await?);
        }
        let args = |subscription: &'static str| SaveArgs {
            group: Arc::clone(&g),
            subscription: subscription.into(),
            partition: 0,
            position: next_position(),
        };
        trips.raw_save = Some(
            round_trips("raw save", proxy, release, || {
                (counted.raw_save)(args("raw"))
            })
            .await?,
        );
        trips.hand_save = Some(
            round_trips("hand-written save", proxy, release, || {
                (counted.hand_save)(args("hand"))
            })
            .await?,
        );
        trips.save = Some(
            round_trips("save", proxy, release, || async {
                store.save(&g, "store", 0, next_position()).await?;
                Ok(())
            })
            .await?,
        );
        trips.load = Some(
            round_trips("load", proxy, release, || async {
                store.load(&g, "store", 0).await?;
                Ok(())
            })
            .await?,
        );
        for (slot, &n) in backend.batch_sizes.iter().enumerate() {
            let batch_group = group(&run, &format!("rt-batch-{n}"));
            // Warm up with one entry (same statement or script), then count the whole batch.
            store
                .save_all(&batch_group, &batch(1, next_position()))
                .await
                .map_err(context("warm-up of save_all"))?;
            let entries = batch(n, reserve_positions(n as u64));
            trips.save_all[slot] = Some(
                count(&format!("save_all of {n}"), proxy, release, async {
                    store.save_all(&batch_group, &entries).await?;
                    Ok(())
                })
                .await?,
            );
            if slot == 1 {
                trips.list = Some(
                    round_trips("list", proxy, release, || async {
                        store.list(&batch_group).await?;
                        Ok(())
                    })
                    .await?,
                );
                trips.raw_list = Some(
                    round_trips("raw list", proxy, release, || async {
                        (counted.raw_list)(Arc::clone(&batch_group)).await?;
                        Ok(())
                    })
                    .await?,
                );
            }
        }
        let documented = backend.documented;
        // The exchanges the caller waits for are what the stores document; sqlx's check of a
        // connection returning to its pool comes after the call and is shown beside them.
        let mut check = |what: String, counted: Option<Trips>, expected: u64| {
            let waited = counted.map(|trips| trips.waited);
            if waited != Some(expected) {
                mismatches.push(format!(
                    "{name} {what}: counted {waited:?}, documented {expected}"
                ));
            }
        };
        check("floor".into(), trips.floor, 1);
        check("raw save".into(), trips.raw_save, 1);
        check("save".into(), trips.save, documented.save);
        check("load".into(), trips.load, documented.load);
        if let Some(list) = documented.list {
            check(
                format!("list of {}", backend.batch_sizes[1]),
                trips.list,
                list(backend.batch_sizes[1]),
            );
        }
        for (slot, &n) in backend.batch_sizes.iter().enumerate() {
            let expected = (documented.save_all)(n);
            let waited = trips.save_all[slot].map(|trips| trips.waited);
            if !waited.is_some_and(|waited| expected.contains(&waited)) {
                let expected = if expected.start() == expected.end() {
                    expected.start().to_string()
                } else {
                    format!("{} to {}", expected.start(), expected.end())
                };
                mismatches.push(format!(
                    "{name} save_all of {n}: counted {waited:?}, documented {expected}"
                ));
            }
        }
    }
    let rt = |count: Option<Trips>| match count {
        _ if backend.counted.is_none() => "n/a".to_owned(),
        None => String::new(),
        Some(trips) if trips.settled > trips.waited => format!(
            "{} (+{} pool check)",
            thousands(trips.waited as usize),
            trips.settled - trips.waited
        ),
        Some(trips) => thousands(trips.waited as usize),
    };
    let waited = |count: Option<Trips>| count.map(|trips| trips.waited);

    // --- Latency at concurrency 1, interleaved. ---
    eprintln!("checkpoint-bench: {name}: latency");
    let latency_group = Arc::new(vec![group(&run, "latency")]);
    let mut ops: Vec<(&str, Op)> = vec![("floor", floor_op(subject))];
    if let Some(commit) = &subject.commit_floor {
        let commit = Arc::clone(commit);
        ops.push(("commit floor", Arc::new(move |_| commit())));
    }
    ops.push((
        "raw save",
        save_op(
            Arc::clone(&subject.raw_save),
            Arc::clone(&latency_group),
            "raw",
        ),
    ));
    ops.push(("save", store_save_op(subject, Arc::clone(&latency_group))));
    ops.push((
        "hand-written save",
        save_op(
            Arc::clone(&subject.hand_save),
            Arc::clone(&latency_group),
            "hand",
        ),
    ));
    let load: Op = {
        let (store, g) = (Arc::clone(&subject.store), Arc::clone(&latency_group[0]));
        Arc::new(move |_| {
            let (store, g) = (Arc::clone(&store), Arc::clone(&g));
            Box::pin(async move {
                store.load(&g, "store", 0).await?;
                Ok(())
            })
        })
    };
    ops.push(("load", load));
    // One untimed round first: connections, prepared statements, script cache.
    interleaved_latency(&ops, 1, 3).await?;
    let samples = interleaved_latency(&ops, plan.latency_rounds, plan.latency_per_round).await?;
    let find = |label: &str| -> Samples {
        ops.iter()
            .zip(&samples)
            .find(|((l, _), _)| *l == label)
            .map(|(_, s)| s.clone())
            .unwrap_or_default()
    };
    let floor = find("floor");
    let raw = find("raw save");
    let store_save = find("save");
    let hand = find("hand-written save");
    let load = find("load");
    let over = |a: &Samples, b: &Samples| a.p50().as_secs_f64() / b.p50().as_secs_f64();
    let latency_row = |workload: &str, s: &Samples, trips: Option<Trips>, raw: Option<&Samples>| {
        let mut row = Row::new(name, workload, thousands(s.len()));
        row.p50 = Some(s.p50());
        row.p99 = Some(s.p99());
        row.round_trips = rt(trips);
        row.vs_floor = Some(over(s, &floor));
        row.vs_raw = raw.map(|r| over(s, r));
        row
    };
    let floor_label = match name {
        "postgres" => "floor: `SELECT 1`",
        "redis" => "floor: `PING`",
        "dynamodb" => "floor: `GetItem` of a missing key",
        _ => "floor: `SELECT 1` on the pool",
    };
    rows.push(latency_row(floor_label, &floor, trips.floor, None));
    let commit = find("commit floor");
    if commit.len() > 0 {
        rows.push(latency_row(
            "commit floor: one-row `UPDATE` (a durable commit)",
            &commit,
            trips.commit_floor,
            None,
        ));
    }
    rows.push(latency_row(
        "raw client: the store's save statement/script",
        &raw,
        trips.raw_save,
        None,
    ));
    rows.push(latency_row(
        "**save** (store), concurrency 1",
        &store_save,
        trips.save,
        Some(&raw),
    ));
    rows.push(latency_row(
        "hand-written save (read, compare, write)",
        &hand,
        trips.hand_save,
        Some(&raw),
    ));
    rows.push(latency_row("**load** (store)", &load, trips.load, None));

    if backend.counted.is_some() {
        targets.push(Target {
            backend: name,
            target: "save: 1 round trip".into(),
            measured: rt(trips.save),
            met: Some(waited(trips.save) == Some(1)),
        });
    }
    let save_vs_raw = over(&store_save, &raw);
    targets.push(Target {
        backend: name,
        target: "save p50 ≤ 1.10× raw client".into(),
        measured: format!(
            "{save_vs_raw:.2}× ({} vs {})",
            report::duration(store_save.p50()),
            report::duration(raw.p50())
        ),
        met: Some(save_vs_raw <= 1.10),
    });
    let save_vs_floor = over(&store_save, &floor);
    match name {
        "redis" => targets.push(Target {
            backend: name,
            target: "save p50 ≤ 1.3× `PING`".into(),
            measured: format!("{save_vs_floor:.2}×"),
            met: Some(save_vs_floor <= 1.3),
        }),
        "postgres" => targets.push(Target {
            backend: name,
            target: "save p50 vs `SELECT 1` and vs a bare commit (report both)".into(),
            measured: format!(
                "{save_vs_floor:.2}× `SELECT 1`, {:.2}× a one-row `UPDATE` commit",
                over(&store_save, &commit)
            ),
            met: None,
        }),
        _ => targets.push(Target {
            backend: name,
            target: "save p50 vs the floor (reported)".into(),
            measured: format!("{save_vs_floor:.2}×"),
            met: None,
        }),
    }

    // --- Throughput at 1, 16 and 64 workers, each on its own key (and group). ---
    let worker_groups: Arc<Vec<Arc<str>>> = Arc::new(
        (0..max_concurrency)
            .map(|w| group(&run, &format!("w{w}")))
            .collect(),
    );
    let ops: Vec<(&str, Op)> = vec![
        ("floor", floor_op(subject)),
        (
            "raw save",
            save_op(
                Arc::clone(&subject.raw_save),
                Arc::clone(&worker_groups),
                "raw",
            ),
        ),
        ("save", store_save_op(subject, Arc::clone(&worker_groups))),
        (
            "hand-written save",
            save_op(
                Arc::clone(&subject.hand_save),
                Arc::clone(&worker_groups),
                "hand",
            ),
        ),
    ];
    // Untimed: opens the pool's connections and creates every worker's rows.
    interleaved_throughput(
        &ops,
        max_concurrency,
        1,
        plan.throughput_slice.min(Duration::from_millis(300)),
    )
    .await?;
    for concurrency in CONCURRENCIES {
        eprintln!("checkpoint-bench: {name}: throughput at concurrency {concurrency}");
        let totals = interleaved_throughput(
            &ops,
            concurrency,
            plan.throughput_rounds,
            plan.throughput_slice,
        )
        .await?;
        let per_sec: Vec<f64> = totals
            .iter()
            .map(|(done, took)| *done as f64 / took.as_secs_f64())
            .collect();
        let (floor_rate, raw_rate, store_rate, hand_rate) =
            (per_sec[0], per_sec[1], per_sec[2], per_sec[3]);
        for (label, (done, _), rate, vs_raw) in [
            ("floor", totals[0], floor_rate, None),
            ("raw client save", totals[1], raw_rate, None),
            (
                "**save** (store)",
                totals[2],
                store_rate,
                Some(store_rate / raw_rate),
            ),
            (
                "hand-written save",
                totals[3],
                hand_rate,
                Some(hand_rate / raw_rate),
            ),
        ] {
            let mut row = Row::new(
                name,
                format!("{label}, concurrency {concurrency}"),
                thousands(done as usize),
            );
            row.ops_per_sec = Some(rate);
            row.vs_floor = Some(rate / floor_rate);
            row.vs_raw = vs_raw;
            rows.push(row);
        }
        if concurrency == 64 {
            targets.push(Target {
                backend: name,
                target: "saves/s at concurrency 64 ≥ 0.9× raw client".into(),
                measured: format!(
                    "{:.2}× ({store_rate:.0} vs {raw_rate:.0})",
                    store_rate / raw_rate
                ),
                met: Some(store_rate / raw_rate >= 0.9),
            });
        }
        if concurrency == 16 {
            targets.push(Target {
                backend: name,
                target: "saves/s at concurrency 16 ≥ 2× hand-written".into(),
                measured: format!(
                    "{:.2}× ({store_rate:.0} vs {hand_rate:.0})",
                    store_rate / hand_rate
                ),
                met: Some(store_rate / hand_rate >= 2.0),
            });
        }
    }

    // --- save_all of 1,000 and 10,000, then the larger as single saves, then list of it. ---
    for (slot, &n) in backend.batch_sizes.iter().enumerate() {
        eprintln!("checkpoint-bench: {name}: save_all of {n}");
        let g = group(&run, &format!("batch-{n}"));
        // Untimed: creates the rows, so the timed calls move existing checkpoints forward,
        // the steady state.
        subject
            .store
            .save_all(&g, &batch(n, reserve_positions(n as u64)))
            .await
            .map_err(context("save_all"))?;
        let mut samples = Vec::new();
        for _ in 0..plan.batch_reps[slot] {
            let entries = batch(n, reserve_positions(n as u64));
            let (took, ()) = time_once("save_all", async {
                subject.store.save_all(&g, &entries).await?;
                Ok(())
            })
            .await?;
            samples.push(took);
        }
        samples.sort_unstable();
        let p50 = samples[(samples.len() - 1) / 2];
        let mut row = Row::new(
            name,
            format!("**save_all** of {}", thousands(n)),
            format!("{} calls", plan.batch_reps[slot]),
        );
        row.p50 = Some(p50);
        row.ops_per_sec = Some(n as f64 / p50.as_secs_f64());
        row.round_trips = rt(trips.save_all[slot]);
        row.vs_floor = Some(p50.as_secs_f64() / floor.p50().as_secs_f64());
        rows.push(row);

        if slot == 1 {
            // The same entries as single saves, one after the other.
            let singles = plan.single_saves.unwrap_or(n).min(n);
            let base = reserve_positions(singles as u64);
            let (took, ()) = time_once("single saves", async {
                for i in 0..singles {
                    subject
                        .store
                        .save(&g, "batch", u32::try_from(i)?, base + i as u64)
                        .await?;
                }
                Ok(())
            })
            .await?;
            let per_save = took / u32::try_from(singles)?;
            let as_singles = per_save * u32::try_from(n)?;
            let mut row = Row::new(
                name,
                format!("the same {} as single saves", thousands(n)),
                if singles == n {
                    "1 run".to_owned()
                } else {
                    format!("{singles} saves, scaled")
                },
            );
            row.p50 = Some(as_singles);
            row.ops_per_sec = Some(singles as f64 / took.as_secs_f64());
            row.round_trips = rt(trips.save.map(|s| Trips {
                waited: s.waited * n as u64,
                settled: s.settled * n as u64,
            }));
            rows.push(row);
            let speedup = as_singles.as_secs_f64() / p50.as_secs_f64();
            if matches!(name, "postgres" | "redis" | "sqlite") {
                if backend.counted.is_some() {
                    targets.push(Target {
                        backend: name,
                        target: format!("save_all of {}: 1 round trip", thousands(n)),
                        measured: rt(trips.save_all[slot]),
                        met: Some(waited(trips.save_all[slot]) == Some(1)),
                    });
                }
                targets.push(Target {
                    backend: name,
                    target: format!(
                        "save_all of {} ≥ 100× faster than single saves",
                        thousands(n)
                    ),
                    measured: format!(
                        "{speedup:.0}× ({} vs {})",
                        report::duration(p50),
                        report::duration(as_singles)
                    ),
                    met: Some(speedup >= 100.0),
                });
            } else {
                targets.push(Target {
                    backend: name,
                    target: format!("save_all of {} vs single saves (reported)", thousands(n)),
                    measured: format!("{speedup:.1}×"),
                    met: None,
                });
            }

            eprintln!("checkpoint-bench: {name}: list of {n}");
            let mut list_samples = Vec::new();
            let mut raw_samples = Vec::new();
            // Untimed first call of each, then interleaved timed calls.
            let listed = subject.store.list(&g).await.map_err(context("list"))?;
            if listed.len() != n {
                return Err(format!("list returned {} checkpoints, not {n}", listed.len()).into());
            }
            (subject.raw_list)(Arc::clone(&g))
                .await
                .map_err(context("raw list"))?;
            for _ in 0..plan.list_reps {
                let (took, _) =
                    time_once("list", async { Ok(subject.store.list(&g).await?) }).await?;
                list_samples.push(took);
                let (took, rows_read) =
                    time_once("raw list", (subject.raw_list)(Arc::clone(&g))).await?;
                if rows_read != n {
                    return Err(format!("the raw list returned {rows_read} rows, not {n}").into());
                }
                raw_samples.push(took);
            }
            list_samples.sort_unstable();
            raw_samples.sort_unstable();
            let list_p50 = list_samples[(list_samples.len() - 1) / 2];
            let raw_p50 = raw_samples[(raw_samples.len() - 1) / 2];
            let raw_label = match name {
                "redis" => format!("raw `HGETALL` of {}", thousands(n)),
                "dynamodb" => format!("raw `Query` of {}", thousands(n)),
                _ => format!("raw list query of {}", thousands(n)),
            };
            let mut row = Row::new(name, raw_label, format!("{} calls", plan.list_reps));
            row.p50 = Some(raw_p50);
            row.round_trips = rt(trips.raw_list);
            row.vs_floor = Some(raw_p50.as_secs_f64() / floor.p50().as_secs_f64());
            rows.push(row);
            let mut row = Row::new(
                name,
                format!("**list** of {}", thousands(n)),
                format!("{} calls", plan.list_reps),
            );
            row.p50 = Some(list_p50);
            row.round_trips = rt(trips.list);
            row.vs_floor = Some(list_p50.as_secs_f64() / floor.p50().as_secs_f64());
            row.vs_raw = Some(list_p50.as_secs_f64() / raw_p50.as_secs_f64());
            rows.push(row);
            let list_vs_raw = list_p50.as_secs_f64() / raw_p50.as_secs_f64();
            targets.push(Target {
                backend: name,
                target: format!("list of {} ≤ 1.5× the raw query", thousands(n)),
                measured: format!(
                    "{list_vs_raw:.2}× ({} vs {})",
                    report::duration(list_p50),
                    report::duration(raw_p50)
                ),
                met: Some(list_vs_raw <= 1.5),
            });
        }
    }
    Ok(Outcome {
        rows,
        targets,
        mismatches,
    })
}

/// Round trips counted for one backend.
#[derive(Debug, Default)]
struct RoundTrips {
    floor: Option<Trips>,
    commit_floor: Option<Trips>,
    raw_save: Option<Trips>,
    hand_save: Option<Trips>,
    save: Option<Trips>,
    load: Option<Trips>,
    save_all: [Option<Trips>; 2],
    list: Option<Trips>,
    raw_list: Option<Trips>,
}
