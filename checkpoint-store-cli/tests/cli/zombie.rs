//! A retire while a zombie process keeps saving under the name.
//!
//! The zombie is this test binary run again, with `CHECKPOINT_CLI_ZOMBIE_URL` set, on the very
//! test that spawned it (`--exact zombie::<backend>`): that variable turns the test into
//! [`zombie_process`], a helper, not a test of its own, that saves in a loop (existing
//! partitions and new ones, `save` and `save_all`) and prints one line per save. While it runs,
//! `checkpoint retire --yes` retires the name; the zombie's saves must all keep returning `Ok`,
//! and `checkpoint list` must never show the subscription again.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use checkpoint_core::Checkpoint;
use checkpoint_store_cli::connect::{Settings, connect};
use checkpoint_store_cli::target::Target;
use serde_json::json;

use crate::support::{Backend, Fixture, TempDir, fresh_group};

const URL_VAR: &str = "CHECKPOINT_CLI_ZOMBIE_URL";
const GROUP_VAR: &str = "CHECKPOINT_CLI_ZOMBIE_GROUP";
const STOP_VAR: &str = "CHECKPOINT_CLI_ZOMBIE_STOP";
const SUBSCRIPTION: &str = "zombie";
/// The zombie saves partitions 0 to 7; the subscription had only 0 to 3 when retired.
const PARTITIONS: u64 = 8;

/// The zombie's loop, in the process its test spawned (see the module doc): saves under the
/// group `CHECKPOINT_CLI_ZOMBIE_GROUP` until the file `CHECKPOINT_CLI_ZOMBIE_STOP` exists (two
/// minutes at most), one line on stdout per save.
async fn zombie_process(url: &str) {
    let group = std::env::var(GROUP_VAR).expect("the zombie's group");
    let stop = std::path::PathBuf::from(std::env::var(STOP_VAR).expect("the stop file"));
    let target = Target::parse(&[url]).unwrap();
    let settings = Settings {
        timeout: Duration::from_secs(30),
        ..Settings::default()
    };
    let store = match connect(&target, &settings).await {
        Ok(store) => store,
        Err(error) => {
            println!("zombie err 0 {}", error.message());
            return;
        }
    };
    let started = Instant::now();
    let mut stdout = std::io::stdout();
    let mut i: u64 = 1;
    while !stop.exists() && started.elapsed() < Duration::from_secs(120) {
        let partition = (i % PARTITIONS) as u32;
        let result = if i.is_multiple_of(5) {
            let batch = [
                Checkpoint::new(SUBSCRIPTION, partition, 1_000 + i),
                Checkpoint::new(SUBSCRIPTION, ((i + 3) % PARTITIONS) as u32, 1_000 + i),
            ];
            store.save_all(&group, &batch).await
        } else {
            store.save(&group, SUBSCRIPTION, partition, 1_000 + i).await
        };
        let line = match result {
            Ok(()) => format!("zombie ok {i}"),
            Err(error) => format!("zombie err {i} {error}"),
        };
        writeln!(stdout, "{line}").unwrap();
        stdout.flush().unwrap();
        i += 1;
    }
}

/// The zombie process and the lines it printed so far.
struct Zombie {
    child: Child,
    lines: Receiver<String>,
    oks: u64,
    errors: Vec<String>,
}

impl Zombie {
    /// Runs `test` (this module's test that spawns it) again in a new process, as the zombie.
    fn spawn(fixture: &Fixture, test: &str, group: &str, stop: &std::path::Path) -> Self {
        let mut command = Command::new(std::env::current_exe().unwrap());
        command
            .args([test, "--exact", "--nocapture", "--test-threads", "1"])
            .env(URL_VAR, &fixture.url)
            .env(GROUP_VAR, group)
            .env(STOP_VAR, stop)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for (name, value) in &fixture.env {
            command.env(name, value);
        }
        let mut child = command.spawn().expect("the zombie starts");
        let stdout = child.stdout.take().unwrap();
        let (send, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line.starts_with("zombie ") && send.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            lines,
            oks: 0,
            errors: Vec::new(),
        }
    }

    /// Waits until the zombie has reported `oks` successful saves in all.
    #[track_caller]
    fn wait_for(&mut self, oks: u64) {
        let deadline = Instant::now() + Duration::from_secs(90);
        while self.oks < oks {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.starts_with("zombie ok ") => self.oks += 1,
                Ok(line) => self.errors.push(line),
                Err(error) => panic!(
                    "the zombie reported {} saves, not {oks} ({error}); errors: {:?}",
                    self.oks, self.errors
                ),
            }
            assert!(
                self.errors.is_empty(),
                "the zombie's saves failed: {:?}",
                self.errors
            );
        }
    }

    /// Stops the zombie; every save it made returned `Ok`, and it exited cleanly.
    fn stop(mut self, stop: &std::path::Path) {
        std::fs::write(stop, b"stop").unwrap();
        let status = self.child.wait().unwrap();
        for line in self.lines.try_iter() {
            if !line.starts_with("zombie ok ") {
                self.errors.push(line);
            }
        }
        assert!(
            self.errors.is_empty(),
            "the zombie's saves failed: {:?}",
            self.errors
        );
        assert!(status.success(), "the zombie exited with {status}");
    }
}

/// The subscription is not among the listed checkpoints, and is listed as retired.
#[track_caller]
fn assert_gone(fixture: &Fixture, group: &str) {
    let listing = fixture.cli(&["list", group, "--json"]);
    let value = listing.json();
    assert_eq!(listing.code, Some(0), "{listing:#?}");
    assert_eq!(value["retired"], json!([SUBSCRIPTION]), "{value}");
    let shown = value["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .any(|checkpoint| checkpoint["subscription"] == SUBSCRIPTION);
    assert!(!shown, "the retired subscription is listed again: {value}");
}

/// The test of `backend`, named `test` (`zombie::<backend>`); in the zombie's process, the
/// zombie instead.
async fn retire_while_a_zombie_saves(backend: Backend, test: &str) {
    if let Ok(url) = std::env::var(URL_VAR) {
        zombie_process(&url).await;
        return;
    }
    let fixture = Fixture::new(backend).await;
    let group = fresh_group("cli-zombie");
    let mut seed: Vec<Checkpoint> = (0..4)
        .map(|partition| Checkpoint::new(SUBSCRIPTION, partition, 10))
        .collect();
    seed.push(Checkpoint::new("keeper", 0, 1));
    fixture.store.save_all(&group, &seed).await.unwrap();
    let dir = TempDir::new();
    let stop = dir.0.join("stop");

    let mut zombie = Zombie::spawn(&fixture, test, &group, &stop);
    zombie.wait_for(20);
    // The zombie's saves land where the command looks: before the retire, they show.
    let before = fixture
        .cli(&["list", &group, "-s", SUBSCRIPTION, "--json"])
        .json();
    let moved = before["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .any(|checkpoint| checkpoint["position"].as_u64() > Some(1_000));
    assert!(moved, "the zombie's saves are not visible: {before}");
    let retired = fixture.cli(&["retire", &group, SUBSCRIPTION, "--yes"]);
    assert!(
        retired.ok().starts_with("retired subscription"),
        "{retired:#?}"
    );
    let at_retire = zombie.oks;
    for _ in 0..3 {
        assert_gone(&fixture, &group);
    }
    // Saves after the retire, on every partition, old and new.
    zombie.wait_for(at_retire + 4 * PARTITIONS);
    assert_gone(&fixture, &group);
    zombie.wait_for(zombie.oks + 2 * PARTITIONS);
    zombie.stop(&stop);
    assert_gone(&fixture, &group);
    for partition in 0..PARTITIONS as u32 {
        let loaded = fixture
            .store
            .load(&group, SUBSCRIPTION, partition)
            .await
            .unwrap();
        assert_eq!(loaded, None, "partition {partition}");
    }
    assert_eq!(
        fixture.store.load(&group, "keeper", 0).await.unwrap(),
        Some(1)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres() {
    retire_while_a_zombie_saves(Backend::Postgres, "zombie::postgres").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql() {
    retire_while_a_zombie_saves(Backend::Mysql, "zombie::mysql").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite() {
    retire_while_a_zombie_saves(Backend::Sqlite, "zombie::sqlite").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis() {
    retire_while_a_zombie_saves(Backend::Redis, "zombie::redis").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_cluster() {
    retire_while_a_zombie_saves(Backend::RedisCluster, "zombie::redis_cluster").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamodb() {
    retire_while_a_zombie_saves(Backend::DynamoDb, "zombie::dynamodb").await;
}
