//! A committer in a child process on a real store, killed with SIGKILL at random moments and
//! started again, until one run finishes. Every completion is appended to a log file before
//! the committer hears of it; across all runs every entry must appear there (an entry the
//! checkpoint skipped would never be handled again), and at every restart every entry below
//! the resume position must already be there.
//!
//! Each test plays both roles: run normally it is the parent; it starts this same test binary,
//! filtered to itself, with `CHECKPOINT_CRASH_CHILD` set, and there it is the worker.
//! `DATABASE_URL` names the PostgreSQL server (the test fails without it).

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use checkpoint_committer::Committer;
use checkpoint_core::CheckpointStore;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

const CHILD_VAR: &str = "CHECKPOINT_CRASH_CHILD";
const PARTITIONS: u32 = 8;
const ENTRIES: u64 = 5_000;
const HANDLERS: u64 = 8;
const KILLS: usize = 6;
const SUBSCRIPTION: &str = "crash";

/// The log of one partition: sparse positions, every fifth entry filtered out.
fn log_of(partition: u32) -> Vec<(u64, bool)> {
    (0..ENTRIES)
        .map(|i| (i * 3 + u64::from(partition % 3), i % 5 == 4))
        .collect()
}

/// The run's seed: kill times and handler delays come from generators seeded by it, so a
/// failing run replays with `CHECKPOINT_SEED`.
fn seed() -> u64 {
    std::env::var("CHECKPOINT_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..))
}

#[test]
fn killed_committer_on_sqlite_never_skips_an_entry() {
    let dir = std::env::temp_dir().join(format!("checkpoint-crash-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let spec = format!("sqlite:{}", dir.join("checkpoints.sqlite3").display());
    role(
        "killed_committer_on_sqlite_never_skips_an_entry",
        &spec,
        &dir,
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn killed_committer_on_postgres_never_skips_an_entry() {
    let url = std::env::var("DATABASE_URL").expect(
        "DATABASE_URL must name a PostgreSQL server (scripts/test.sh sets it): this test needs one",
    );
    let dir = std::env::temp_dir().join(format!("checkpoint-crash-pg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    role(
        "killed_committer_on_postgres_never_skips_an_entry",
        &url,
        &dir,
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// The worker when `CHECKPOINT_CRASH_CHILD` is set, else the parent.
fn role(test: &str, spec: &str, dir: &Path) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    match std::env::var(CHILD_VAR) {
        Ok(child) => {
            // The parent's store, group, log and seed: this process's own temporary folder
            // is not the parent's.
            let mut parts = child.splitn(4, '|');
            let (group, log, seed, spec) = (
                parts.next().unwrap().to_owned(),
                PathBuf::from(parts.next().unwrap()),
                parts.next().unwrap().parse().unwrap(),
                parts.next().unwrap(),
            );
            runtime.block_on(worker(spec, &group, &log, seed));
            // The worker finished every entry: end the process here, so the test harness
            // prints nothing the parent could misread.
            std::process::exit(0);
        }
        Err(_) => runtime.block_on(parent(test, spec, dir)),
    }
}

async fn open(spec: &str) -> Arc<dyn CheckpointStore> {
    if let Some(path) = spec.strip_prefix("sqlite:") {
        let store = checkpoint_sqlite::SqliteCheckpointStore::open(path)
            .await
            .unwrap();
        store.migrate().await.unwrap();
        Arc::new(store)
    } else {
        let store = checkpoint_postgres::PostgresCheckpointStore::connect(spec)
            .await
            .unwrap();
        store.migrate().await.unwrap();
        Arc::new(store)
    }
}

async fn parent(test: &str, spec: &str, dir: &Path) {
    let seed = seed();
    let mut rng = fastrand::Rng::with_seed(seed);
    let group = format!("crash-{}-{seed}", std::process::id());
    let log = dir.join("completed.log");
    let store = open(spec).await;
    let mut runs = 0;
    let mut killed = 0;
    let mut resumes = Vec::new();
    loop {
        runs += 1;
        let kill_after = (killed < KILLS).then(|| Duration::from_millis(rng.u64(20..320)));
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                &format!("crash::{test}"),
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(
                CHILD_VAR,
                format!("{group}|{}|{}|{spec}", log.display(), rng.u64(..)),
            )
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        // Every resume position the worker reports is checked against the log at once: every
        // entry below it must have been completed by an earlier run.
        let mut reported = 0;
        while reported < PARTITIONS {
            let line = lines
                .next_line()
                .await
                .unwrap()
                .unwrap_or_else(|| panic!("run {runs} (seed {seed}) ended before it resumed"));
            // The harness prints the test's name on the same line before the first report.
            let Some(rest) = line.find("resume ").map(|at| &line[at + "resume ".len()..]) else {
                continue;
            };
            let (partition, at) = rest.split_once(' ').unwrap();
            let (partition, at): (u32, u64) = (partition.parse().unwrap(), at.parse().unwrap());
            let done = completed(&log);
            let skipped: Vec<u64> = log_of(partition)
                .into_iter()
                .filter(|&(position, filtered)| {
                    position < at && !filtered && !done.contains(&(partition, position))
                })
                .map(|(position, _)| position)
                .collect();
            assert!(
                skipped.is_empty(),
                "run {runs} (seed {seed}) resumes partition {partition} at {at}, past entries never completed: {skipped:?}"
            );
            resumes.push((runs, partition, at));
            reported += 1;
        }
        match kill_after {
            Some(after) => {
                let exited = tokio::time::timeout(after, child.wait()).await;
                if exited.is_err() {
                    child.start_kill().unwrap(); // SIGKILL: no final write
                    child.wait().await.unwrap();
                    killed += 1;
                    continue;
                }
                assert!(exited.unwrap().unwrap().success(), "run {runs} failed");
                break;
            }
            None => {
                let status = tokio::time::timeout(Duration::from_secs(300), child.wait())
                    .await
                    .expect("the last run finishes")
                    .unwrap();
                assert!(
                    status.success(),
                    "run {runs} (seed {seed}) failed: {status}"
                );
                break;
            }
        }
    }

    let done = completed(&log);
    let mut redone = 0;
    let lines = std::fs::read_to_string(&log).unwrap().lines().count();
    for partition in 0..PARTITIONS {
        let entries = log_of(partition);
        let missing: Vec<u64> = entries
            .iter()
            .filter(|&&(position, filtered)| !filtered && !done.contains(&(partition, position)))
            .map(|&(position, _)| position)
            .collect();
        assert!(
            missing.is_empty(),
            "seed {seed}: partition {partition} never completed {missing:?}"
        );
        let end = entries.last().unwrap().0 + 1;
        assert_eq!(
            store.load(&group, SUBSCRIPTION, partition).await.unwrap(),
            Some(end),
            "seed {seed}: partition {partition} ends after its last entry"
        );
    }
    let handled: usize = (0..PARTITIONS)
        .map(|p| log_of(p).iter().filter(|e| !e.1).count())
        .sum();
    redone += lines - handled;
    let resumed_mid_way = resumes
        .iter()
        .filter(|&&(_, partition, at)| at > 0 && at <= log_of(partition).last().unwrap().0)
        .count();
    eprintln!(
        "crash test on {}: {runs} runs, {killed} killed with SIGKILL, {handled} entries, every one completed, {redone} completed again after a kill, {resumed_mid_way} resumes mid-log (seed {seed})",
        if spec.starts_with("sqlite:") {
            "SQLite"
        } else {
            "PostgreSQL"
        }
    );
    assert!(
        killed > 0,
        "seed {seed}: no run was killed, so nothing was tested"
    );
    assert!(
        resumed_mid_way > 0,
        "seed {seed}: no run resumed mid-log: the kills came before any write"
    );
}

/// Every (partition, position) in the completion log.
fn completed(log: &Path) -> BTreeSet<(u32, u64)> {
    let Ok(text) = std::fs::read_to_string(log) else {
        return BTreeSet::new();
    };
    // A line that does not parse is a defect of this test, never an entry to drop quietly.
    // Only the text after the last newline may be a line the running worker is appending
    // while this reads: entries it holds were not needed by the check at hand.
    let whole = &text[..text.rfind('\n').map_or(0, |end| end + 1)];
    whole
        .lines()
        .map(|line| {
            line.split_once(' ')
                .and_then(|(partition, position)| {
                    Some((partition.parse().ok()?, position.parse().ok()?))
                })
                .unwrap_or_else(|| panic!("a torn line in the completion log: {line:?}"))
        })
        .collect()
}

/// The worker: resumes every partition, hands its entries to handlers that finish out of
/// order, logs each completion before telling the committer, and finishes.
async fn worker(spec: &str, group: &str, log: &Path, seed: u64) {
    let store = open(spec).await;
    let committer = Committer::builder(Arc::clone(&store), group)
        .interval(Duration::from_millis(20))
        .max_in_flight(256)
        .start()
        .unwrap();
    let log = Arc::new(std::sync::Mutex::new(
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .unwrap(),
    ));
    let (sender, receiver) = tokio::sync::mpsc::channel(64);
    let receiver = Arc::new(tokio::sync::Mutex::new(receiver));
    let mut handlers = Vec::new();
    for handler in 0..HANDLERS {
        let receiver = Arc::clone(&receiver);
        let log = Arc::clone(&log);
        let mut rng = fastrand::Rng::with_seed(seed.wrapping_add(handler));
        handlers.push(tokio::spawn(async move {
            loop {
                let next = receiver.lock().await.recv().await;
                let Some((partition, position, handle)) = next else {
                    return;
                };
                let handle: checkpoint_committer::Partition = handle;
                if rng.u8(..4) == 0 {
                    tokio::time::sleep(Duration::from_millis(rng.u64(..3))).await;
                }
                // One `write` per line: `writeln!` on a `File` sends each piece of the line in
                // its own write, and a SIGKILL between them left a torn line that swallowed the
                // next run's first line (a CI run reported that entry as skipped).
                let line = format!("{partition} {position}\n");
                log.lock().unwrap().write_all(line.as_bytes()).unwrap();
                handle.completed(position).unwrap();
            }
        }));
    }
    let mut readers = Vec::new();
    let mut stdout = std::io::stdout();
    for partition in 0..PARTITIONS {
        let handle = committer.resume(SUBSCRIPTION, partition).await.unwrap();
        let at = handle.gap_free();
        writeln!(stdout, "resume {partition} {at}").unwrap();
        let sender = sender.clone();
        readers.push(tokio::spawn(async move {
            for (position, filtered) in log_of(partition) {
                if position < at {
                    continue;
                }
                if filtered {
                    handle.skipped(position).unwrap();
                } else {
                    handle.dispatched(position).await.unwrap();
                    sender
                        .send((partition, position, handle.clone()))
                        .await
                        .unwrap();
                }
            }
        }));
    }
    stdout.flush().unwrap();
    drop(sender);
    for reader in readers {
        reader.await.unwrap();
    }
    for handler in handlers {
        handler.await.unwrap();
    }
    committer.shutdown().await.unwrap();
}
