//! Several processes append to one database file at once while a reader in this process
//! checks the no-late-arrival clause at every read: the children are this test binary itself,
//! run again on the same test (`--exact
//! processes::several_processes_append_and_no_entry_is_skipped`) with the file in an
//! environment variable, which turns the test into [`child_appender`], a helper, not a test of
//! its own.

use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use checkpoint_core::source::Source;
use checkpoint_source_sqlite::SqliteSource;

use crate::support::{TempDb, source};

const CHILD_DB: &str = "CHECKPOINT_SOURCE_SQLITE_CHILD_DB";
const CHILD_ID: &str = "CHECKPOINT_SOURCE_SQLITE_CHILD_ID";
const CHILDREN: u32 = 4;
const PARTITIONS: u32 = 4;
/// Transactions per child: one in three appends two entries, one in five rolls back.
const TRANSACTIONS: u32 = 120;
/// How long the whole test may take before it is called stuck.
const DEADLINE: Duration = Duration::from_secs(60);

/// The body of each child process: appends in transactions of its own to the file `path`,
/// and prints every payload it committed. Its id comes from `CHECKPOINT_SOURCE_SQLITE_CHILD_ID`.
async fn child_appender(path: &str) {
    let id: u32 = std::env::var(CHILD_ID)
        .expect("a child id")
        .parse()
        .expect("a number");
    let source = source(path.as_ref(), PARTITIONS).await;
    for round in 0..TRANSACTIONS {
        let mut tx = source
            .pool()
            .begin_with("BEGIN IMMEDIATE")
            .await
            .expect("begin");
        let entries = if round % 3 == 0 { 2 } else { 1 };
        let rolled_back = round % 5 == 4;
        let mut payloads = Vec::new();
        for entry in 0..entries {
            let partition = (round * 7 + id + entry) % PARTITIONS;
            let payload = format!(
                "{}c{id}-r{round}-e{entry}",
                if rolled_back { "rb-" } else { "" }
            );
            source
                .append_in(&mut tx, partition, Some("child"), payload.as_bytes())
                .await
                .expect("append_in");
            payloads.push(payload);
        }
        // Hold the write lock a little, as a transaction doing real work would.
        tokio::time::sleep(Duration::from_micros(u64::from(
            (round * 37 + id * 11) % 1500,
        )))
        .await;
        if rolled_back {
            tx.rollback().await.expect("rollback");
        } else {
            tx.commit().await.expect("commit");
            for payload in payloads {
                println!("committed {payload}");
            }
        }
    }
}

fn spawn_child(path: &std::path::Path, id: u32) -> Child {
    Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "--exact",
            "processes::several_processes_append_and_no_entry_is_skipped",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(CHILD_DB, path)
        .env(CHILD_ID, id.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawning a child appender")
}

/// What the reader saw: payload → (partition, position), and how many reads it made.
struct Reader {
    next: Vec<u64>,
    seen: HashMap<String, (u32, u64)>,
    reads: u64,
    empty_waits: u64,
}

impl Reader {
    /// One read of `partition`, checked: positions dense from `next` (SQLite's positions are
    /// dense, so the first entry must be exactly at `next` after the first read: below it is
    /// a late arrival, above it a skipped position), and nothing read twice.
    async fn read(&mut self, source: &SqliteSource, partition: u32, max: usize) -> usize {
        let from = self.next[partition as usize];
        let page = source.read(partition, from, max).await.expect("read");
        self.reads += 1;
        let mut expected = from.max(1);
        for entry in &page.entries {
            assert_eq!(
                entry.position, expected,
                "partition {partition}: a read from {from} returned position {} where {expected} \
                 was due: the clause is broken",
                entry.position
            );
            expected += 1;
            let payload = String::from_utf8(entry.payload.clone()).expect("text");
            assert!(
                !payload.starts_with("rb-"),
                "read the rolled-back {payload}"
            );
            if let Some(earlier) = self
                .seen
                .insert(payload.clone(), (partition, entry.position))
            {
                panic!(
                    "read {payload} twice: {earlier:?} and position {}",
                    entry.position
                );
            }
        }
        let due = if page.entries.is_empty() {
            from
        } else {
            expected
        };
        assert_eq!(
            page.next, due,
            "partition {partition}: next after a read from {from}"
        );
        self.next[partition as usize] = page.next;
        page.entries.len()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_processes_append_and_no_entry_is_skipped() {
    // In a child process this test spawned (see the module doc): the child's appends instead.
    if let Ok(path) = std::env::var(CHILD_DB) {
        child_appender(&path).await;
        return;
    }
    let db = TempDb::new();
    let source = source(db.path(), PARTITIONS).await;
    let started = Instant::now();
    let mut children: Vec<Child> = (0..CHILDREN).map(|id| spawn_child(db.path(), id)).collect();
    let mut reader = read_while_running(&source, &mut children, started).await;
    // Every child exited: one last pass reads whatever their last commits left.
    for partition in 0..PARTITIONS {
        while reader.read(&source, partition, 100).await > 0 {}
    }
    let mut committed = Vec::new();
    for child in children {
        let output = child.wait_with_output().expect("a child's output");
        assert!(
            output.status.success(),
            "a child appender failed: {:?}",
            output.status
        );
        let stdout = String::from_utf8(output.stdout).expect("text");
        committed.extend(
            stdout
                .lines()
                // libtest's "test ... " may share the first line.
                .filter_map(|line| line.split_once("committed ").map(|(_, p)| p.to_owned())),
        );
    }
    let expected_count = CHILDREN
        * (0..TRANSACTIONS)
            .filter(|r| r % 5 != 4)
            .map(|r| if r % 3 == 0 { 2 } else { 1 })
            .sum::<u32>();
    assert_eq!(
        committed.len() as u32,
        expected_count,
        "the children's committed entries"
    );
    let missing: Vec<&String> = committed
        .iter()
        .filter(|p| !reader.seen.contains_key(*p))
        .collect();
    assert!(
        missing.is_empty(),
        "never read {} committed entries: {:?}",
        missing.len(),
        &missing[..missing.len().min(5)]
    );
    assert_eq!(
        reader.seen.len(),
        committed.len(),
        "read entries nobody committed"
    );
    let switches = interleavings(&reader);
    // Without overlap the test would prove nothing about concurrent writers.
    assert!(switches > 0, "the children's appends never interleaved");
    println!(
        "{CHILDREN} processes committed {} entries in {:?} ({switches} changes of writer between \
         neighbouring positions); the reader made {} reads ({} waits with nothing new), every \
         one checked",
        committed.len(),
        started.elapsed(),
        reader.reads,
        reader.empty_waits
    );
}

/// Reads every partition, checking each read, until every child has exited.
async fn read_while_running(
    source: &SqliteSource,
    children: &mut [Child],
    started: Instant,
) -> Reader {
    let mut reader = Reader {
        next: vec![0; PARTITIONS as usize],
        seen: HashMap::new(),
        reads: 0,
        empty_waits: 0,
    };
    let mut running = true;
    let mut round = 0usize;
    while running {
        assert!(started.elapsed() < DEADLINE, "stuck after {DEADLINE:?}");
        running = children
            .iter_mut()
            .any(|child| child.try_wait().expect("try_wait").is_none());
        let mut new = 0;
        for partition in 0..PARTITIONS {
            round += 1;
            new += reader.read(source, partition, 1 + round % 7).await;
        }
        if new == 0 && running {
            reader.empty_waits += 1;
            let _ =
                tokio::time::timeout(Duration::from_millis(100), source.wait(0, reader.next[0]))
                    .await;
        }
    }
    reader
}

/// How often neighbouring positions of a partition were appended by different children.
fn interleavings(reader: &Reader) -> usize {
    let mut by_position: Vec<(u32, u64, &str)> = reader
        .seen
        .iter()
        .map(|(payload, &(partition, position))| {
            let child = payload.split('-').next().unwrap_or_default();
            (partition, position, child)
        })
        .collect();
    by_position.sort();
    by_position
        .windows(2)
        .filter(|pair| pair[0].0 == pair[1].0 && pair[0].2 != pair[1].2)
        .count()
}
