//! Quick start: a subscription runtime that is killed and resumes where it left off.
//!
//! ```text
//! cargo run -p checkpoint-examples --bin quickstart                  # SQLite in a temp folder
//! cargo run -p checkpoint-examples --bin quickstart -- --store sqlite:/some/dir/checkpoints.db
//! cargo run -p checkpoint-examples --features postgres --bin quickstart -- --store postgres://postgres@127.0.0.1/test
//! cargo run -p checkpoint-examples --features redis --bin quickstart -- --store redis://127.0.0.1:6379
//! ```
//!
//! A plain build has SQLite only; each other backend is the feature of its name (see the
//! library's doc).
//!
//! The log is a real one: an SQLite event table (`checkpoint-source-sqlite`) of 4 partitions
//! of 600 order events each (positions 1 to 600), every tenth an event the subscription filters
//! out, written by the supervisor before the workers start. A reader per partition reads it
//! from the partition's checkpoint, a page at a time, and hands entries to 8 handler tasks that finish them out of order (random work of a
//! few milliseconds; entry 100 of partition 0 takes 600 ms). A
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

use checkpoint_committer::{Committer, Partition};
use checkpoint_core::CheckpointStore;
use checkpoint_core::source::Source;
use checkpoint_examples::{
    ExampleStore, check_store, checkpoint_list_command, display_store, open_store,
};
use checkpoint_source_sqlite::SqliteSource;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

const PARTITIONS: u32 = 4;
/// Entries per partition, at positions 1 to 600: a finished partition's checkpoint is 601.
const ENTRIES_PER_PARTITION: u64 = 600;
/// How many entries a reader asks the log for at once.
const PAGE: usize = 100;
/// Handler tasks shared by every partition: entries finish out of order.
const HANDLERS: u64 = 8;
const SUBSCRIPTION: &str = "order-emails";
const SAVE_EVERY: Duration = Duration::from_millis(150);
/// The first run is killed after this many writes of the committer.
const SAVES_BEFORE_KILL: usize = 4;
/// One entry of partition 0 takes much longer than the others, and holds its checkpoint back.
const SLOW_ENTRY: u64 = 100;
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
        match (value_of("--store"), value_of("--group"), value_of("--log")) {
            (Some(store), Some(group), Some(log)) => run_workers(&store, &group, &log).await,
            _ => Err("--run-workers needs --store, --group and --log".into()),
        }
    } else {
        let store = value_of("--store").unwrap_or_else(|| {
            let path = std::env::temp_dir().join(format!(
                "checkpoint-quickstart-{}.sqlite3",
                std::process::id()
            ));
            format!("sqlite:{}", path.display())
        });
        supervise(&store).await
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

/// The supervisor: starts the workers, kills them, starts them again, and checks the result.
async fn supervise(store_spec: &str) -> Result<(), BoxError> {
    if store_spec == "memory" {
        return Err("the quick start restarts a process; an in-memory store would forget everything: pick a durable one".into());
    }
    // A backend this build left out is named before anything runs, with the flag that adds it.
    check_store(store_spec)?;
    let stamp = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis();
    let group = format!("quickstart-{stamp}");
    let shown = display_store(store_spec).unwrap_or_else(|| "<store>".into());
    println!("store: {shown}");
    println!(
        "group: {group}, subscription: {SUBSCRIPTION}, {PARTITIONS} partitions of {ENTRIES_PER_PARTITION} entries, {HANDLERS} handlers\n"
    );

    let log = write_log(&stamp.to_string()).await?;
    println!("log: {log} (an SQLite event table)\n");

    println!("── run 1: start the workers, kill them after {SAVES_BEFORE_KILL} saves");
    run_child(store_spec, &group, &log, Some(SAVES_BEFORE_KILL)).await?;
    let store = open_store(store_spec).await?;
    let saved = positions(&*store, &group).await?;
    println!("   killed. Saved checkpoints: {}\n", describe(&saved));

    println!("── run 2: start again; every partition resumes at its checkpoint");
    run_child(store_spec, &group, &log, None).await?;
    let done = positions(&*store, &group).await?;
    println!("   finished. Checkpoints: {}\n", describe(&done));

    let complete = (0..PARTITIONS).all(|p| done.get(&p) == Some(&(ENTRIES_PER_PARTITION + 1)));
    if !complete {
        return Err(format!(
            "expected every partition at {}, after its last entry, found {}",
            ENTRIES_PER_PARTITION + 1,
            describe(&done)
        )
        .into());
    }
    println!(
        "every partition completed; run 2 redid only the entries completed after run 1's last save."
    );
    if let Some(command) = checkpoint_list_command(store_spec, &group, SUBSCRIPTION) {
        println!(
            "\nits checkpoints, with the checkpoint command (cargo install --path checkpoint-store-cli):\n   {command}"
        );
    }
    Ok(())
}

/// Writes the log the workers read: an SQLite event table in a file of its own, each
/// partition's entries appended in one transaction. Every tenth entry is an event the
/// subscription does not handle. Returns the file's path.
async fn write_log(stamp: &str) -> Result<String, BoxError> {
    let path = std::env::temp_dir().join(format!("checkpoint-quickstart-log-{stamp}.sqlite3"));
    let source = SqliteSource::open(&path, PARTITIONS).await?;
    source.migrate().await?;
    for partition in 0..PARTITIONS {
        let mut tx = source.pool().begin_with("BEGIN IMMEDIATE").await?;
        for n in 1..=ENTRIES_PER_PARTITION {
            let order = format!("order-{partition}-{n}");
            let event = if n % 10 == 9 { "viewed" } else { "placed" };
            source
                .append_in(&mut tx, partition, Some(&order), event.as_bytes())
                .await?;
        }
        tx.commit().await?;
    }
    source.pool().close().await;
    Ok(path.display().to_string())
}

/// Runs the workers in a child process; with `kill_after`, kills it after that many saves.
async fn run_child(
    store_spec: &str,
    group: &str,
    log: &str,
    kill_after: Option<usize>,
) -> Result<(), BoxError> {
    let mut child = Command::new(std::env::current_exe()?)
        .args([
            "--run-workers",
            "--store",
            store_spec,
            "--group",
            group,
            "--log",
            log,
        ])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let stdout = child.stdout.take().ok_or("the child has no stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let mut saves = 0;
    while let Some(line) = lines.next_line().await? {
        println!("   {line}");
        if line.contains(" saved ") {
            saves += 1;
            if kill_after == Some(saves) {
                child.kill().await?;
                return Ok(());
            }
        }
    }
    let status = child.wait().await?;
    if !status.success() {
        return Err(format!("the workers exited with {status}").into());
    }
    Ok(())
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
async fn run_workers(store_spec: &str, group: &str, log: &str) -> Result<(), BoxError> {
    let store = open_store(store_spec).await?;
    let source = SqliteSource::open(log, PARTITIONS).await?;
    let committer = Committer::builder(Arc::clone(&store), group)
        .interval(SAVE_EVERY)
        .max_in_flight(256)
        .on_error(|error| println!("a checkpoint write failed (kept, retried): {error}"))
        .start()?;
    let (entries, queue) = tokio::sync::mpsc::channel::<(Partition, u64)>(64);
    let queue = Arc::new(tokio::sync::Mutex::new(queue));
    let handlers: Vec<_> = (0..HANDLERS)
        .map(|handler| tokio::spawn(handle_entries(handler, Arc::clone(&queue))))
        .collect();
    let mut readers = Vec::new();
    for partition in 0..PARTITIONS {
        let owned = committer.resume(SUBSCRIPTION, partition).await?;
        println!(
            "partition {partition} resumes at {} of {ENTRIES_PER_PARTITION}",
            owned.gap_free()
        );
        readers.push(tokio::spawn(read_partition(
            owned,
            source.clone(),
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

/// Reads the partition's log from where it resumes, a page at a time, and hands every entry
/// to the handlers in log order. A `viewed` event is one the subscription filters out: it is
/// skipped, not handled. This log is written before the workers start, so a reader stops at
/// its head; a live subscriber would `source.wait(partition, next)` there instead.
async fn read_partition(
    partition: Partition,
    source: SqliteSource,
    entries: tokio::sync::mpsc::Sender<(Partition, u64)>,
) -> Result<(), BoxError> {
    let number = partition.partition();
    let mut next = partition.gap_free();
    loop {
        let page = source.read(number, next, PAGE).await?;
        if page.entries.is_empty() {
            return Ok(());
        }
        for entry in page.entries {
            if entry.payload == b"viewed" {
                partition.skipped(entry.position)?;
                continue;
            }
            partition.dispatched(entry.position).await?;
            entries.send((partition.clone(), entry.position)).await?;
        }
        next = page.next;
    }
}

/// A handler: takes the next entry of any partition, works on it for a random few
/// milliseconds (so entries finish out of order), and completes it. One entry is slow.
async fn handle_entries(
    handler: u64,
    queue: Arc<tokio::sync::Mutex<tokio::sync::mpsc::Receiver<(Partition, u64)>>>,
) -> Result<(), BoxError> {
    let mut random = 0x9E37_79B9_7F4A_7C15u64.wrapping_mul(handler + 1) | 1;
    loop {
        let next = queue.lock().await.recv().await;
        let Some((partition, position)) = next else {
            return Ok(());
        };
        random ^= random << 13;
        random ^= random >> 7;
        random ^= random << 17;
        let work = if partition.partition() == 0 && position == SLOW_ENTRY {
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
