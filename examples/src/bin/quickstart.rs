//! Quick start: a subscription runtime that is killed and resumes where it left off.
//!
//! ```text
//! cargo run -p checkpoint-examples --bin quickstart                  # SQLite in a temp folder
//! cargo run -p checkpoint-examples --bin quickstart -- --store sqlite:/some/dir/checkpoints.db
//! cargo run -p checkpoint-examples --bin quickstart -- --store postgres://postgres@127.0.0.1/test
//! cargo run -p checkpoint-examples --bin quickstart -- --store redis://127.0.0.1:6379
//! ```
//!
//! The log is in process: 4 partitions of 600 entries. Two workers each own two partitions,
//! complete entries one by one and, every 150 ms, save the checkpoints that moved with one
//! `save_all`. The example runs the workers in a child process, kills it (SIGKILL: no
//! goodbye, no final save) after a few saves, and starts them again: the second run lists the
//! checkpoints and resumes each partition where the first one had saved. Entries completed
//! after the last save are done again, which is what at-least-once means; nothing is skipped.

use std::collections::BTreeMap;
use std::process::{ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use checkpoint_core::{Checkpoint, CheckpointStore};
use checkpoint_examples::open_store;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

const PARTITIONS: u32 = 4;
const ENTRIES_PER_PARTITION: u64 = 600;
const WORKERS: u32 = 2;
const SUBSCRIPTION: &str = "order-emails";
const SAVE_EVERY: Duration = Duration::from_millis(150);
/// The first run is killed after this many periodic saves.
const SAVES_BEFORE_KILL: usize = 4;

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
        match (value_of("--store"), value_of("--group")) {
            (Some(store), Some(group)) => run_workers(&store, &group).await,
            _ => Err("--run-workers needs --store and --group".into()),
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
    let stamp = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis();
    let group = format!("quickstart-{stamp}");
    println!("store: {store_spec}");
    println!(
        "group: {group}, subscription: {SUBSCRIPTION}, {PARTITIONS} partitions of {ENTRIES_PER_PARTITION} entries, {WORKERS} workers\n"
    );

    println!("── run 1: start the workers, kill them after {SAVES_BEFORE_KILL} saves");
    run_child(store_spec, &group, Some(SAVES_BEFORE_KILL)).await?;
    let store = open_store(store_spec).await?;
    let saved = positions(&*store, &group).await?;
    println!("   killed. Saved checkpoints: {}\n", describe(&saved));

    println!("── run 2: start again; the workers resume from the saved checkpoints");
    run_child(store_spec, &group, None).await?;
    let done = positions(&*store, &group).await?;
    println!("   finished. Checkpoints: {}\n", describe(&done));

    let complete = (0..PARTITIONS).all(|p| done.get(&p) == Some(&ENTRIES_PER_PARTITION));
    if !complete {
        return Err(format!(
            "expected every partition at {ENTRIES_PER_PARTITION}, found {}",
            describe(&done)
        )
        .into());
    }
    println!(
        "every partition completed; run 2 redid only the entries completed after run 1's last save."
    );
    Ok(())
}

/// Runs the workers in a child process; with `kill_after`, kills it after that many saves.
async fn run_child(
    store_spec: &str,
    group: &str,
    kill_after: Option<usize>,
) -> Result<(), BoxError> {
    let mut child = Command::new(std::env::current_exe()?)
        .args(["--run-workers", "--store", store_spec, "--group", group])
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

/// The worker process: resumes every partition from its checkpoint and runs to the end.
async fn run_workers(store_spec: &str, group: &str) -> Result<(), BoxError> {
    let store = open_store(store_spec).await?;
    let resume = positions(&*store, group).await?;
    let mut workers = Vec::new();
    for worker in 0..WORKERS {
        let owned: Vec<u32> = (0..PARTITIONS).filter(|p| p % WORKERS == worker).collect();
        let start: Vec<u64> = owned
            .iter()
            .map(|p| resume.get(p).copied().unwrap_or(0))
            .collect();
        for (partition, position) in owned.iter().zip(&start) {
            println!(
                "worker {worker}: partition {partition} resumes at {position} of {ENTRIES_PER_PARTITION}"
            );
        }
        workers.push(tokio::spawn(worker_loop(
            Arc::clone(&store),
            group.to_owned(),
            worker,
            owned,
            start,
        )));
    }
    for worker in workers {
        worker.await??;
    }
    Ok(())
}

/// Completes the entries of its partitions in turn, saving the moved checkpoints periodically.
async fn worker_loop(
    store: Arc<dyn CheckpointStore>,
    group: String,
    worker: u32,
    partitions: Vec<u32>,
    mut completed: Vec<u64>,
) -> Result<(), BoxError> {
    let mut saved = completed.clone();
    let mut ticker = tokio::time::interval(SAVE_EVERY);
    ticker.tick().await;
    loop {
        let finished = completed.iter().all(|c| *c == ENTRIES_PER_PARTITION);
        tokio::select! {
            _ = ticker.tick() => {
                save_moved(&*store, &group, worker, &partitions, &completed, &mut saved).await?;
            }
            _ = tokio::time::sleep(Duration::from_millis(1)), if !finished => {
                // Handle the next entry of every unfinished partition: "work" on the in-process
                // log is a short sleep per batch of entries.
                for (position, _) in completed.iter_mut().zip(&partitions) {
                    if *position < ENTRIES_PER_PARTITION {
                        *position += 2.min(ENTRIES_PER_PARTITION - *position);
                    }
                }
            }
        }
        if finished {
            save_moved(&*store, &group, worker, &partitions, &completed, &mut saved).await?;
            println!("worker {worker}: all its partitions completed");
            return Ok(());
        }
    }
}

/// One `save_all` of the checkpoints that moved since the last save.
async fn save_moved(
    store: &dyn CheckpointStore,
    group: &str,
    worker: u32,
    partitions: &[u32],
    completed: &[u64],
    saved: &mut [u64],
) -> Result<(), BoxError> {
    let moved: Vec<Checkpoint> = partitions
        .iter()
        .zip(completed)
        .zip(saved.iter())
        .filter(|((_, done), last)| done > last)
        .map(|((partition, done), _)| Checkpoint::new(SUBSCRIPTION, *partition, *done))
        .collect();
    if moved.is_empty() {
        return Ok(());
    }
    store.save_all(group, &moved).await?;
    saved.copy_from_slice(completed);
    let summary: Vec<String> = moved
        .iter()
        .map(|c| format!("p{}→{}", c.partition, c.position))
        .collect();
    println!("worker {worker}: saved {}", summary.join(", "));
    Ok(())
}
