//! Quick start: a subscription runtime that is killed and resumes where it left off.
//!
//! ```text
//! cargo run -p checkpoint-examples --bin quickstart                  # SQLite in a temp folder
//! cargo run -p checkpoint-examples --bin quickstart -- --store sqlite:/some/dir/checkpoints.db
//! cargo run -p checkpoint-examples --features postgres --bin quickstart -- --store postgres://postgres@127.0.0.1/test
//! cargo run -p checkpoint-examples --features mysql --bin quickstart -- --store mysql://root@127.0.0.1:3306/test
//! cargo run -p checkpoint-examples --features redis --bin quickstart -- --store redis://127.0.0.1:6379
//! cargo run -p checkpoint-examples --features source-postgres --bin quickstart -- --source postgres://postgres@127.0.0.1/test
//! cargo run -p checkpoint-examples --features source-nats --bin quickstart -- --source nats://127.0.0.1:4222
//! cargo run -p checkpoint-examples --features source-kafka --bin quickstart -- --source kafka://127.0.0.1:9092
//! ```
//!
//! A plain build has SQLite only; each other store is the feature of its name, each other
//! source `source-<name>` (see the library's doc).
//!
//! The log is a real one: by default an SQLite event table (`checkpoint-source-sqlite`) in a
//! file of its own; with `--source postgres://…` a PostgreSQL event table
//! (`checkpoint-source-postgres`), with `--source nats://…` a JetStream stream
//! (`checkpoint-source-nats`), with `--source kafka://…` a Kafka topic
//! (`checkpoint-source-kafka`), each made for the run and dropped after it (a topic is left
//! on the brokers: `checkpoint_examples::log::remove_log` says why). It has 4 partitions
//! of 600 order events each, every tenth an event the subscription filters out, written by the
//! supervisor before the workers start. Positions are the source's own: 1 to 600 in SQLite,
//! 0 to 599 in Kafka (the offset), sparse and large in PostgreSQL (the writing transaction's
//! id, shifted) and JetStream (the stream's sequence, shared by the partitions). A reader per partition reads it from the
//! partition's checkpoint, a page at a time, and hands entries to 8 handler tasks that finish
//! them out of order (random work of a few milliseconds; the 100th order of partition 0 takes
//! 600 ms). A
//! [`Committer`] turns the completions into gap-free
//! checkpoints and writes the ones that moved with one `save_all` every 150 ms: while the slow
//! entry runs, partition 0's checkpoint holds at 100 however many later entries are done, and
//! the example prints that. It runs the workers in a child process, kills it (SIGKILL: no
//! goodbye, no final write) after a few writes, and starts them again: the second run resumes
//! each partition at its checkpoint, the first entry not known to be completed, by reading the
//! log from there (the source never skips an entry that commits later). Entries
//! completed after the last write are done again, which is what at-least-once means; nothing
//! is skipped.

use std::collections::BTreeMap;
use std::process::{ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use checkpoint::CheckpointStore;
use checkpoint::committer::{Committer, Partition};
use checkpoint::source::Source;
use checkpoint_examples::log::{
    NewEntry, check_source, create_log, display_source, open_log, remove_log,
};
use checkpoint_examples::{
    ExampleStore, check_store, checkpoint_list_command, display_store, open_store,
};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

const PARTITIONS: u32 = 4;
/// Entries per partition: a finished partition's checkpoint is after its last entry.
const ENTRIES_PER_PARTITION: u64 = 600;
/// How many entries a reader asks the log for at once.
const PAGE: usize = 100;
/// Handler tasks shared by every partition: entries finish out of order.
const HANDLERS: u64 = 8;
const SUBSCRIPTION: &str = "order-emails";
const SAVE_EVERY: Duration = Duration::from_millis(150);
/// The first run is killed after this many writes of the committer.
const SAVES_BEFORE_KILL: usize = 4;
/// One entry of partition 0 (its 100th order) takes much longer than the others, and holds
/// its checkpoint back.
const SLOW_ENTRY: &str = "order-0-100";
const SLOW_WORK: Duration = Duration::from_millis(600);

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value_of = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let result = if args.iter().any(|a| a == "--run-workers") {
        match (value_of("--store"), value_of("--group"), log_of(&value_of)) {
            (Some(store), Some(group), Ok(log)) => run_workers(&store, &group, &log).await,
            (_, _, Err(error)) => Err(error),
            _ => Err("--run-workers needs --store, --group, --source, --log and --last".into()),
        }
    } else {
        let store = value_of("--store").unwrap_or_else(|| {
            let path = std::env::temp_dir().join(format!(
                "checkpoint-quickstart-{}.sqlite3",
                std::process::id()
            ));
            format!("sqlite:{}", path.display())
        });
        supervise(&store, value_of("--source")).await
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("quickstart failed: {error}");
            ExitCode::FAILURE
        }
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The log the workers read: the source's string, the log's name in it (a table, a stream
/// or a topic), and the position of each partition's last entry.
struct Log {
    source: String,
    name: String,
    last: Vec<u64>,
}

/// The child's `--source`, `--log` and `--last` (positions separated by commas).
fn log_of(value_of: &dyn Fn(&str) -> Option<String>) -> Result<Log, BoxError> {
    let (Some(source), Some(name), Some(last)) =
        (value_of("--source"), value_of("--log"), value_of("--last"))
    else {
        return Err("--run-workers needs --source, --log and --last".into());
    };
    let last = last
        .split(',')
        .map(str::parse)
        .collect::<Result<Vec<u64>, _>>()?;
    Ok(Log { source, name, last })
}

/// The supervisor: starts the workers, kills them, starts them again, and checks the result.
async fn supervise(store_spec: &str, source: Option<String>) -> Result<(), BoxError> {
    if store_spec == "memory" {
        return Err("the quick start restarts a process; an in-memory store would forget everything: pick a durable one".into());
    }
    // A backend this build left out is named before anything runs, with the flag that adds it.
    check_store(store_spec)?;
    if let Some(source) = &source {
        check_source(source)?;
    }
    let stamp = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis();
    let group = format!("quickstart-{stamp}");
    let shown = display_store(store_spec).unwrap_or_else(|| "<store>".into());
    println!("store: {shown}");
    println!(
        "group: {group}, subscription: {SUBSCRIPTION}, {PARTITIONS} partitions of {ENTRIES_PER_PARTITION} entries, {HANDLERS} handlers\n"
    );

    let log = write_log(source, stamp).await?;

    println!("── run 1: start the workers, kill them after {SAVES_BEFORE_KILL} saves");
    run_child(store_spec, &group, &log, Some(SAVES_BEFORE_KILL)).await?;
    let store = open_store(store_spec).await?;
    let saved = positions(&*store, &group).await?;
    println!("   killed. Saved checkpoints: {}\n", describe(&saved));

    println!("── run 2: start again; every partition resumes at its checkpoint");
    let resumed = run_child(store_spec, &group, &log, None).await?;
    let done = positions(&*store, &group).await?;
    println!("   finished. Checkpoints: {}\n", describe(&done));

    check_runs(&saved, &resumed, &done, &log)?;
    if let Some(removed) = remove_log(&log.source, &log.name).await? {
        println!("({removed})");
    }
    println!(
        "every partition resumed at its saved checkpoint and completed; run 2 redid only the \
         entries completed after run 1's last save."
    );
    if let Some(command) = checkpoint_list_command(store_spec, &group, SUBSCRIPTION) {
        println!(
            "\nits checkpoints, with the checkpoint command (cargo install --path checkpoint-store-cli):\n   {command}"
        );
    }
    Ok(())
}

/// The quick start's checks: run 2 resumed every partition at the checkpoint run 1 saved,
/// and every partition's checkpoint ends after its last entry. A failed run keeps its log.
fn check_runs(
    saved: &BTreeMap<u32, u64>,
    resumed: &BTreeMap<u32, u64>,
    done: &BTreeMap<u32, u64>,
    log: &Log,
) -> Result<(), BoxError> {
    // No checkpoint saved yet: the partition starts at 0, the beginning of any log.
    let expected: BTreeMap<u32, u64> = (0..PARTITIONS)
        .map(|p| (p, saved.get(&p).copied().unwrap_or(0)))
        .collect();
    if *resumed != expected {
        return Err(format!(
            "expected run 2 to resume at the saved checkpoints, {}, it resumed at {}",
            describe(&expected),
            describe(resumed)
        )
        .into());
    }
    let ends: BTreeMap<u32, u64> = (0..PARTITIONS)
        .zip(log.last.iter().map(|l| l + 1))
        .collect();
    if *done != ends {
        return Err(format!(
            "expected every partition after its last entry, at {}, found {}",
            describe(&ends),
            describe(done)
        )
        .into());
    }
    Ok(())
}

/// Writes the log the workers read, in `source` (an SQLite file of its own by default), each
/// partition's entries in order. Every tenth entry is an event the subscription does not
/// handle.
async fn write_log(source: Option<String>, stamp: u128) -> Result<Log, BoxError> {
    let source = source.unwrap_or_else(|| {
        let path = std::env::temp_dir().join(format!("checkpoint-quickstart-log-{stamp}.sqlite3"));
        format!("sqlite:{}", path.display())
    });
    let name = format!("quickstart_{stamp}");
    let entries: Vec<Vec<NewEntry>> = (0..PARTITIONS)
        .map(|partition| {
            (1..=ENTRIES_PER_PARTITION)
                .map(|n| {
                    let event = if n % 10 == 9 { "viewed" } else { "placed" };
                    (format!("order-{partition}-{n}"), event.as_bytes().to_vec())
                })
                .collect()
        })
        .collect();
    let last = create_log(&source, &name, PARTITIONS, &entries)
        .await?
        .into_iter()
        .collect::<Option<Vec<u64>>>()
        .ok_or("a partition of the log has no entry")?;
    let shown = display_source(&source);
    let ends = (0..PARTITIONS).zip(last.iter().copied()).collect();
    println!(
        "log: {name} in {shown}; positions of the last entries: {}\n",
        describe(&ends)
    );
    Ok(Log { source, name, last })
}

/// Runs the workers in a child process; with `kill_after`, kills it after that many saves.
/// Returns where the child said each partition resumes.
async fn run_child(
    store_spec: &str,
    group: &str,
    log: &Log,
    kill_after: Option<usize>,
) -> Result<BTreeMap<u32, u64>, BoxError> {
    let last: Vec<String> = log.last.iter().map(u64::to_string).collect();
    let mut child = Command::new(std::env::current_exe()?)
        .args([
            "--run-workers",
            "--store",
            store_spec,
            "--group",
            group,
            "--source",
            &log.source,
            "--log",
            &log.name,
            "--last",
            &last.join(","),
        ])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let stdout = child.stdout.take().ok_or("the child has no stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let (mut saves, mut resumed) = (0, BTreeMap::new());
    while let Some(line) = lines.next_line().await? {
        println!("   {line}");
        if let Some((partition, position)) = resumes_at(&line) {
            resumed.insert(partition, position);
        }
        if line.contains(" saved ") {
            saves += 1;
            if kill_after == Some(saves) {
                child.kill().await?;
                return Ok(resumed);
            }
        }
    }
    let status = child.wait().await?;
    if !status.success() {
        return Err(format!("the workers exited with {status}").into());
    }
    Ok(resumed)
}

/// The partition and position of a child's line "partition 2 resumes at 120 (…)".
fn resumes_at(line: &str) -> Option<(u32, u64)> {
    let (partition, rest) = line
        .strip_prefix("partition ")?
        .split_once(" resumes at ")?;
    let position = rest.split_whitespace().next()?;
    Some((partition.parse().ok()?, position.parse().ok()?))
}

async fn positions(
    store: &dyn CheckpointStore,
    group: &str,
) -> Result<BTreeMap<u32, u64>, BoxError> {
    Ok(store
        .list(group)
        .await?
        .into_iter()
        .filter(|c| c.subscription == SUBSCRIPTION)
        .map(|c| (c.partition, c.position))
        .collect())
}

fn describe(positions: &BTreeMap<u32, u64>) -> String {
    if positions.is_empty() {
        return "none".into();
    }
    positions
        .iter()
        .map(|(p, pos)| format!("p{p}={pos}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The worker process: one committer; every partition resumes from its checkpoint, a reader
/// per partition reads the log from there and hands entries to a pool of handlers that finish
/// out of order, and the committer writes the gap-free checkpoints every `SAVE_EVERY`.
async fn run_workers(store_spec: &str, group: &str, log: &Log) -> Result<(), BoxError> {
    let store = open_store(store_spec).await?;
    let source = open_log(&log.source, &log.name, PARTITIONS).await?;
    let committer = Committer::builder(Arc::clone(&store), group)
        .interval(SAVE_EVERY)
        .max_in_flight(256)
        .on_error(|error| println!("a checkpoint write failed (kept, retried): {error}"))
        .start()?;
    let (entries, queue) = tokio::sync::mpsc::channel::<Job>(64);
    let queue = Arc::new(tokio::sync::Mutex::new(queue));
    let handlers: Vec<_> = (0..HANDLERS)
        .map(|handler| tokio::spawn(handle_entries(handler, Arc::clone(&queue))))
        .collect();
    let mut readers = Vec::new();
    for (partition, &last) in (0..PARTITIONS).zip(&log.last) {
        let owned = committer.resume(SUBSCRIPTION, partition).await?;
        println!(
            "partition {partition} resumes at {} (its last entry: {last})",
            owned.gap_free()
        );
        readers.push(tokio::spawn(read_partition(
            owned,
            last,
            Arc::clone(&source),
            entries.clone(),
        )));
    }
    drop(entries);
    let monitor = tokio::spawn(report_writes(committer.clone()));
    for reader in readers {
        reader.await??;
    }
    for handler in handlers {
        handler.await??;
    }
    monitor.abort();
    committer.shutdown().await?;
    let last = committer_summary(&store, group).await?;
    println!("all partitions completed; final write: {last}");
    Ok(())
}

/// An entry handed to the handlers: its partition, its position, and whether it is the slow
/// one.
type Job = (Partition, u64, bool);

/// Reads the partition's log from where it resumes, a page at a time, and hands every entry
/// to the handlers in log order. A `viewed` event is one the subscription filters out: it is
/// skipped, not handled. When nothing is readable yet it waits for the source (a PostgreSQL
/// transaction anywhere on the server holds reads back until it ends; they never skip). This
/// log is written before the workers start, so a reader stops once it is past the
/// partition's `last` entry; a live subscriber would go on waiting.
async fn read_partition(
    partition: Partition,
    last: u64,
    source: Arc<dyn Source>,
    entries: tokio::sync::mpsc::Sender<Job>,
) -> Result<(), BoxError> {
    let number = partition.partition();
    let mut next = partition.gap_free();
    while next <= last {
        let page = source.read(number, next, PAGE).await?;
        next = page.next;
        if page.entries.is_empty() {
            // Bounded, so that a lost wake-up costs a second at most.
            if let Ok(waited) =
                tokio::time::timeout(Duration::from_secs(1), source.wait(number, next)).await
            {
                waited?;
            }
            continue;
        }
        for entry in page.entries {
            if entry.payload == b"viewed" {
                partition.skipped(entry.position)?;
                continue;
            }
            partition.dispatched(entry.position).await?;
            let slow = entry.key.as_deref() == Some(SLOW_ENTRY);
            entries
                .send((partition.clone(), entry.position, slow))
                .await?;
        }
    }
    Ok(())
}

/// A handler: takes the next entry of any partition, works on it for a random few
/// milliseconds (so entries finish out of order), and completes it. One entry is slow.
async fn handle_entries(
    handler: u64,
    queue: Arc<tokio::sync::Mutex<tokio::sync::mpsc::Receiver<Job>>>,
) -> Result<(), BoxError> {
    let mut random = 0x9E37_79B9_7F4A_7C15u64.wrapping_mul(handler + 1) | 1;
    loop {
        let next = queue.lock().await.recv().await;
        let Some((partition, position, slow)) = next else {
            return Ok(());
        };
        random ^= random << 13;
        random ^= random >> 7;
        random ^= random << 17;
        let work = if slow {
            SLOW_WORK
        } else {
            Duration::from_micros(random % 4_000)
        };
        tokio::time::sleep(work).await;
        partition.completed(position)?;
    }
}

/// Prints a line for every write of the committer, and shows a partition whose checkpoint a
/// slow entry holds back.
async fn report_writes(committer: Committer) {
    let mut writes = 0;
    let mut ticker = tokio::time::interval(Duration::from_millis(20));
    loop {
        ticker.tick().await;
        let stats = committer.stats();
        if stats.writes == writes {
            continue;
        }
        writes = stats.writes;
        let committed: Vec<String> = stats
            .partitions
            .iter()
            .map(|p| format!("p{}={}", p.partition, p.committed))
            .collect();
        println!(
            "checkpoints saved (write {writes}): {}",
            committed.join(", ")
        );
        for p in &stats.partitions {
            if let Some(age) = p.oldest_in_flight_age.filter(|age| *age >= SLOW_WORK / 4) {
                println!(
                    "   p{}: entry {} has run for {} ms; the checkpoint holds at {} while {} later entries are done",
                    p.partition,
                    p.gap_free,
                    age.as_millis(),
                    p.gap_free,
                    p.held - p.in_flight,
                );
            }
        }
    }
}

async fn committer_summary(store: &Arc<dyn ExampleStore>, group: &str) -> Result<String, BoxError> {
    Ok(describe(&positions(&**store, group).await?))
}
