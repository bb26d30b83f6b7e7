//! Several writers on one database file: pools in one process, and real child processes, saving
//! checkpoints and racing for leases.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use checkpoint_conformance::error_chain;
use checkpoint_core::{Checkpoint, CheckpointStore, LeaseStore};
use checkpoint_sqlite::SqliteCheckpointStore;

use crate::support::TempDb;

const KEYS: u32 = 10;
const ROUNDS: u64 = 150;

/// The positions writer `writer` of `writers` saves, in order: on key `round % KEYS`, position
/// `round * writers + writer`, so the writers interleave and every key's final position is
/// known. Every tenth round saves all keys in one batch instead.
fn plan(writer: u64, writers: u64) -> Vec<Vec<Checkpoint>> {
    (0..ROUNDS)
        .map(|round| {
            let position = round * writers + writer;
            if round % 10 == 9 {
                (0..KEYS)
                    .rev()
                    .map(|key| Checkpoint::new("s", key, position))
                    .collect()
            } else {
                vec![Checkpoint::new(
                    "s",
                    (round % u64::from(KEYS)) as u32,
                    position,
                )]
            }
        })
        .collect()
}

/// The highest position any of `writers` saves on each key.
fn final_positions(writers: u64) -> HashMap<u32, u64> {
    let mut highest = HashMap::new();
    for writer in 0..writers {
        for checkpoint in plan(writer, writers).into_iter().flatten() {
            let entry = highest.entry(checkpoint.partition).or_insert(0);
            *entry = (*entry).max(checkpoint.position);
        }
    }
    highest
}

/// Runs one writer's plan; after each of its own saves it loads the key and checks that the
/// checkpoint is at or ahead of what it just saved and never behind what it saw before.
async fn write_plan(store: &SqliteCheckpointStore, writer: u64, writers: u64) {
    let mut seen: HashMap<u32, u64> = HashMap::new();
    for batch in plan(writer, writers) {
        let result = if let [single] = batch.as_slice() {
            store
                .save("g", &single.subscription, single.partition, single.position)
                .await
        } else {
            store.save_all("g", &batch).await
        };
        if let Err(error) = result {
            panic!("writer {writer} failed: {}", error_chain(&error));
        }
        for checkpoint in &batch {
            let loaded = store
                .load("g", "s", checkpoint.partition)
                .await
                .unwrap_or_else(|error| panic!("writer {writer} load: {}", error_chain(&error)))
                .unwrap_or_else(|| {
                    panic!("writer {writer}: key {} vanished", checkpoint.partition)
                });
            assert!(loaded >= checkpoint.position, "below a save that returned");
            let before = seen.insert(checkpoint.partition, loaded).unwrap_or(0);
            assert!(loaded >= before, "moved back from {before} to {loaded}");
        }
    }
}

async fn assert_final(store: &SqliteCheckpointStore, writers: u64) {
    let stored: HashMap<u32, u64> = store
        .list("g")
        .await
        .expect("list")
        .into_iter()
        .map(|checkpoint| (checkpoint.partition, checkpoint.position))
        .collect();
    assert_eq!(stored, final_positions(writers));
}

/// Two pools on one file, as two processes would have: concurrent saves and batches from
/// both all succeed within the busy timeout (no "database is locked"), a reader on either pool
/// never sees a checkpoint go back, and every key ends at its highest position.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_pools_on_one_file_never_fail_and_never_move_back() {
    let db = TempDb::new();
    let pools = Arc::new([
        db.store().await,
        SqliteCheckpointStore::open(db.path())
            .await
            .expect("open a second pool"),
    ]);
    const WRITERS: u64 = 6;
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let pools = Arc::clone(&pools);
        let done = Arc::clone(&done);
        tokio::spawn(async move {
            let mut seen: HashMap<u32, u64> = HashMap::new();
            let mut reads = 0u64;
            while !done.load(Ordering::Relaxed) {
                let store = &pools[(reads % 2) as usize];
                for checkpoint in store.list("g").await.expect("list while writing") {
                    let before = seen
                        .insert(checkpoint.partition, checkpoint.position)
                        .unwrap_or(0);
                    assert!(
                        checkpoint.position >= before,
                        "a reader saw a checkpoint move back"
                    );
                }
                reads += 1;
            }
            reads
        })
    };
    let writers: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let pools = Arc::clone(&pools);
            tokio::spawn(
                async move { write_plan(&pools[(writer % 2) as usize], writer, WRITERS).await },
            )
        })
        .collect();
    for writer in writers {
        writer.await.expect("a writer failed");
    }
    done.store(true, Ordering::Relaxed);
    let reads = reader.await.expect("the reader failed");
    assert!(reads > 0);
    assert_final(&pools[0], WRITERS).await;
    assert_final(&pools[1], WRITERS).await;
}

const CHILD_DB: &str = "CHECKPOINT_SQLITE_TEST_CHILD_DB";
const CHILD_WRITER: &str = "CHECKPOINT_SQLITE_TEST_CHILD_WRITER";
const PROCESSES: u64 = 3;

/// One writer process. Run on its own, it writes its plan into a database of its own and
/// checks the result; [`separate_processes_share_one_file`] runs it as a child process on a
/// shared file (through the environment variables above).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_writer() {
    match (std::env::var_os(CHILD_DB), std::env::var(CHILD_WRITER)) {
        (Some(path), Ok(writer)) => {
            let writer: u64 = writer.parse().expect("writer number");
            let store = open_shared(Path::new(&path)).await;
            write_plan(&store, writer, PROCESSES).await;
        }
        _ => {
            let db = TempDb::new();
            let store = db.store().await;
            write_plan(&store, 0, 1).await;
            assert_final(&store, 1).await;
        }
    }
}

async fn open_shared(path: &Path) -> SqliteCheckpointStore {
    let store = SqliteCheckpointStore::open(path)
        .await
        .expect("open the shared file");
    store.migrate().await.expect("migrate");
    store
}

/// Real separate processes on one file: two children (this test binary running
/// [`child_writer`]) and this process write at the same time, each migrating at start; all
/// succeed and every key ends at its highest position.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn separate_processes_share_one_file() {
    let db = TempDb::new();
    let path: PathBuf = db.path().to_owned();
    let exe = std::env::current_exe().expect("the test binary");
    let children: Vec<_> = (1..PROCESSES)
        .map(|writer| {
            Command::new(&exe)
                .args(["--exact", "processes::child_writer", "--test-threads", "1"])
                .env(CHILD_DB, &path)
                .env(CHILD_WRITER, writer.to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn a child process")
        })
        .collect();
    // This process is writer 0, on the same file, at the same time.
    let store = open_shared(&path).await;
    write_plan(&store, 0, PROCESSES).await;
    for child in children {
        let output = tokio::task::spawn_blocking(move || child.wait_with_output())
            .await
            .expect("join")
            .expect("wait for a child");
        assert!(
            output.status.success(),
            "a child writer failed ({}):\n{}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
        );
    }
    assert_final(&store, PROCESSES).await;
}

const CHILD_LEASE_DB: &str = "CHECKPOINT_SQLITE_TEST_CHILD_LEASE_DB";
const CHILD_LEASE_OWNER: &str = "CHECKPOINT_SQLITE_TEST_CHILD_LEASE_OWNER";
/// Partitions raced for, one acquire each, in turn.
const RACED: u32 = 20;

/// Acquires each raced partition in turn as `owner`; returns those it won, checking that each
/// call either grants the partition or refuses it.
async fn race_for_partitions(store: &SqliteCheckpointStore, owner: &str) -> Vec<u32> {
    let mut won = Vec::new();
    for partition in 0..RACED {
        let acquired = store
            .acquire("g", "s", owner, &[partition], Duration::from_secs(60))
            .await
            .unwrap_or_else(|error| panic!("{owner} acquire: {}", error_chain(&error)));
        if acquired.refused == [partition] {
            continue;
        }
        assert!(acquired.refused.is_empty(), "{owner}: {acquired:?}");
        let lease = acquired
            .granted
            .iter()
            .find(|lease| lease.partition == partition)
            .unwrap_or_else(|| panic!("{owner}: neither granted nor refused: {acquired:?}"));
        assert_eq!(lease.epoch, 1, "{owner}: a second grant of {partition}");
        won.push(partition);
    }
    won
}

/// One lease racer. Run on its own, it races alone on a database of its own and wins every
/// partition; [`processes_race_for_leases`] runs it as a child process on a shared file,
/// printing the partitions it won.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_lease_racer() {
    match (
        std::env::var_os(CHILD_LEASE_DB),
        std::env::var(CHILD_LEASE_OWNER),
    ) {
        (Some(path), Ok(owner)) => {
            let store = open_shared(Path::new(&path)).await;
            for partition in race_for_partitions(&store, &owner).await {
                // On a line of its own: libtest may have begun one ("test ... ").
                println!("\nwon {partition}");
            }
        }
        _ => {
            let db = TempDb::new();
            let store = db.store().await;
            let won = race_for_partitions(&store, "alone").await;
            assert_eq!(won, (0..RACED).collect::<Vec<_>>());
        }
    }
}

/// Real separate processes racing for the same partitions of one file (two children and this
/// process, each acquiring partition after partition as its own owner): every partition goes
/// to exactly one of them, under epoch 1, and the lease table agrees.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processes_race_for_leases() {
    let db = TempDb::new();
    let path: PathBuf = db.path().to_owned();
    let exe = std::env::current_exe().expect("the test binary");
    let children: Vec<_> = (1..=2)
        .map(|child| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "processes::child_lease_racer",
                    "--test-threads",
                    "1",
                    "--nocapture",
                ])
                .env(CHILD_LEASE_DB, &path)
                .env(CHILD_LEASE_OWNER, format!("child-{child}"))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn a child process")
        })
        .collect();
    let store = open_shared(&path).await;
    let mut winners: HashMap<u32, Vec<String>> = HashMap::new();
    for partition in race_for_partitions(&store, "parent").await {
        winners.entry(partition).or_default().push("parent".into());
    }
    for (index, child) in children.into_iter().enumerate() {
        let output = tokio::task::spawn_blocking(move || child.wait_with_output())
            .await
            .expect("join")
            .expect("wait for a child");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "a child racer failed ({}):\n{stdout}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr),
        );
        for partition in stdout.lines().filter_map(|line| line.strip_prefix("won ")) {
            let partition: u32 = partition.trim().parse().expect("a partition");
            winners
                .entry(partition)
                .or_default()
                .push(format!("child-{}", index + 1));
        }
    }
    let table = store.leases("g", "s").await.expect("leases");
    assert_eq!(table.leases.len(), RACED as usize);
    for lease in &table.leases {
        assert_eq!(
            winners.get(&lease.partition).map(Vec::as_slice),
            Some([lease.owner.clone()].as_slice()),
            "partition {}: one winner, the holder",
            lease.partition
        );
        assert_eq!(lease.epoch, 1);
    }
    assert_eq!(winners.len(), RACED as usize);
}
