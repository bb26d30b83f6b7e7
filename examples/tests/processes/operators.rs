//! The checkpoint command's monitor against a real fleet: the `operator_fleet` example's four
//! subscriptions in processes of their own (`steady` caught up, `backlog` falling behind,
//! `stuck` stalled on partition 2, `killed` stopped), watched by the `checkpoint` binary as an
//! operator runs it: `check` (its lines, its exit code 4, its JSON), `status --watch` in a real
//! terminal (tmux, 80 columns) and with its output piped, and `serve` (its metrics, and its
//! page in a headless Chromium).
//!
//! The `checkpoint` binary is another package's: `CHECKPOINT_BIN`, or `checkpoint` beside this
//! test's directory in the target directory (`cargo build -p checkpoint-store-cli` first). The
//! test fails, saying so, when there is none. The monitors run at once, each over the same
//! seconds of the fleet; the whole takes 24-26 s on a quiet 2-core machine (27-31 s beside two
//! busy loops): 9 s for the fleet to establish its scenario, 12 s for the live view's full
//! window, 2-3 s for Chromium.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

#[path = "operators/serve.rs"]
mod serve;
#[path = "operators/terminal.rs"]
mod terminal;

const GROUP: &str = "operators";
const SUBSCRIPTIONS: [&str; 4] = ["steady", "backlog", "stuck", "killed"];
const PARTITIONS: u32 = 4;
/// The fleet kills `killed` after 4 s, its leases expire 2 s later, and it waits 3 s more:
/// 9-10 s on a quiet machine.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// The verdicts a partition of the fleet may have (as JSON and metrics name them).
fn expected(subscription: &str, partition: u32) -> &'static [&'static str] {
    match (subscription, partition) {
        ("killed", _) => &["stopped"],
        ("stuck", 2) => &["stalled"],
        ("backlog", _) => &["falling_behind"],
        _ => &["caught_up", "keeping_up"],
    }
}

/// Every partition of the fleet, `subscription/partition`.
fn all_partitions() -> Vec<(&'static str, u32)> {
    SUBSCRIPTIONS
        .iter()
        .flat_map(|s| (0..PARTITIONS).map(move |p| (*s, p)))
        .collect()
}

/// The `checkpoint` binary: `CHECKPOINT_BIN`, else `<target>/debug/checkpoint` from this
/// test's own path (`<target>/debug/deps/processes-HASH`).
fn checkpoint_bin() -> PathBuf {
    const BUILD: &str = "cargo build -p checkpoint-store-cli";
    if let Some(path) = std::env::var_os("CHECKPOINT_BIN") {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "CHECKPOINT_BIN names no file ({}): unset it, or `{BUILD}` and name target/debug/checkpoint",
            path.display()
        );
        return path;
    }
    let exe = std::env::current_exe().expect("the test's own path");
    let path = exe
        .parent()
        .and_then(Path::parent)
        .map(|debug| debug.join("checkpoint"));
    match path {
        Some(path) if path.is_file() => path,
        _ => panic!(
            "no checkpoint binary beside {} (and CHECKPOINT_BIN is unset): run `{BUILD}` first",
            exe.display()
        ),
    }
}

/// `kill -SIGNAL pid`: the standard library only sends SIGKILL.
fn signal(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .args([format!("-{signal}"), pid.to_string()])
        .status()
        .expect("the kill command runs");
    assert!(status.success(), "kill -{signal} {pid}: {status}");
}

/// Waits up to `timeout` for `child` to exit.
fn wait(child: &mut Child, timeout: Duration) -> Option<ExitStatus> {
    let until = Instant::now() + timeout;
    while Instant::now() < until {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

/// The running `operator_fleet`, stopped (SIGTERM, then SIGKILL) when dropped.
struct Fleet {
    child: Child,
    lines: Receiver<String>,
    output: Vec<String>,
    store: String,
    source: String,
}

impl Fleet {
    /// Starts the fleet with its files in `dir` and waits for its `ready`.
    fn start(dir: &Path) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_operator_fleet"))
            .arg("--dir")
            .arg(dir)
            // A bound should the test itself be killed: the fleet does not outlive it long.
            .args(["--seconds", "180"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("the operator_fleet example starts");
        let stdout = child.stdout.take().expect("piped");
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = send.send(line);
            }
        });
        let mut fleet = Self {
            child,
            lines,
            output: Vec::new(),
            store: format!("sqlite:{}", dir.join("store.sqlite3").display()),
            source: format!("sqlite:{}", dir.join("log.sqlite3").display()),
        };
        let until = Instant::now() + READY_TIMEOUT;
        while !fleet.output.iter().any(|line| line == "ready") {
            let left = until.saturating_duration_since(Instant::now());
            match fleet.lines.recv_timeout(left) {
                Ok(line) => fleet.output.push(line),
                Err(error) => panic!(
                    "the fleet did not say ready within {READY_TIMEOUT:?} ({error}; exit: {:?}):\n{}",
                    fleet.child.try_wait(),
                    fleet.output.join("\n")
                ),
            }
        }
        fleet
    }

    /// A `checkpoint` command on the fleet's store: `--url STORE` and `args`, then `GROUP
    /// --source LOG` after them.
    fn checkpoint(&self, args: &[&str]) -> Command {
        let mut command = Command::new(checkpoint_bin());
        command.args(["--url", &self.store]).args(args);
        command.args([GROUP, "--source", &self.source]);
        command
    }

    /// SIGTERM: the fleet kills its children and exits 0.
    fn stop(mut self) {
        signal(self.child.id(), "TERM");
        let status = wait(&mut self.child, Duration::from_secs(15));
        self.output.extend(self.lines.try_iter());
        let output = self.output.join("\n");
        assert!(
            status.is_some_and(|s| s.success()),
            "the fleet exits 0 on SIGTERM ({status:?}):\n{output}"
        );
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = Command::new("kill")
                .args(["-TERM", &self.child.id().to_string()])
                .status();
            if wait(&mut self.child, Duration::from_secs(10)).is_none() {
                let _ = self.child.kill();
                let _ = self.child.wait();
            }
        }
    }
}

/// The fleet, and the checkpoint command's monitors on it at once: `check` as lines and as
/// JSON, `status --watch` piped and in a terminal, `serve`.
#[test]
fn the_monitor_tells_the_fleet_apart() {
    checkpoint_bin();
    let dir = std::env::temp_dir().join(format!("checkpoint-operators-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let started = Instant::now();
    let fleet = Fleet::start(&dir);
    println!("fleet ready after {:.1} s", started.elapsed().as_secs_f64());
    let sampling = ["--samples", "5", "--interval", "1"];
    let check_lines = spawn_piped(fleet.checkpoint(&["check"]).args(sampling));
    let check_json = spawn_piped(fleet.checkpoint(&["check"]).args(sampling).arg("--json"));
    let plain = spawn_piped(
        fleet
            .checkpoint(&["status"])
            .args(["--watch", "--interval", "1"]),
    );
    let view = terminal::View::start(&fleet.checkpoint(&["status"]), &dir);
    let serve = serve::Serve::start(&mut fleet.checkpoint(&["serve"]));
    // Four refreshes of the piped view, then SIGTERM: it stops and exits 0.
    std::thread::sleep(Duration::from_millis(3_500));
    signal(plain.id(), "TERM");
    let plain = finish(plain, "status --watch (piped)");
    check_plain(&plain);
    check_check_lines(&finish(check_lines, "check"));
    check_check_json(&finish(check_json, "check --json"));
    view.check();
    serve.check(&dir);
    fleet.stop();
    println!("all done in {:.1} s", started.elapsed().as_secs_f64());
    let _ = std::fs::remove_dir_all(&dir);
}

fn spawn_piped(command: &mut Command) -> Child {
    command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the checkpoint command starts")
}

/// What a command printed, and how it exited (it must within 30 s).
struct Finished {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

fn finish(mut child: Child, what: &str) -> Finished {
    // Read as it comes: a full pipe would block the command.
    let (mut out, mut err) = (child.stdout.take(), child.stderr.take());
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(out) = out.as_mut() {
            let _ = out.read_to_string(&mut text);
        }
        text
    });
    let status = wait(&mut child, Duration::from_secs(30));
    let mut stderr = String::new();
    if let Some(err) = err.as_mut() {
        let _ = err.read_to_string(&mut stderr);
    }
    let stdout = reader.join().unwrap_or_default();
    let Some(status) = status else {
        let _ = child.kill();
        panic!("{what} did not exit within 30 s:\n{stdout}\n{stderr}");
    };
    Finished {
        status,
        stdout,
        stderr,
    }
}

/// `check`'s lines: one per partition that needs attention (`verdict subscription/partition
/// evidence`), exactly those of the fleet's expected verdicts, and exit code 4.
fn check_check_lines(check: &Finished) {
    println!("── checkpoint check\n{}{}", check.stdout, check.stderr);
    assert_eq!(
        check.status.code(),
        Some(4),
        "check exits 4 when a partition needs attention:\n{}{}",
        check.stdout,
        check.stderr
    );
    let mut seen = BTreeMap::new();
    for line in check.stdout.lines() {
        let mut words = line.split_whitespace();
        let (Some(verdict), Some(name)) = (words.next(), words.next()) else {
            panic!("a line of check is `verdict subscription/partition evidence`: {line:?}");
        };
        assert!(
            seen.insert(name.to_owned(), verdict.to_owned()).is_none(),
            "{name} twice"
        );
    }
    let wanted: BTreeMap<String, String> = all_partitions()
        .into_iter()
        .filter(|(s, p)| !expected(s, *p).contains(&"caught_up"))
        .map(|(s, p)| (format!("{s}/{p}"), expected(s, p)[0].to_owned()))
        .collect();
    assert_eq!(seen, wanted, "check's lines:\n{}", check.stdout);
    // Standard error sums it up, as an answer rather than an error of the command.
    assert_eq!(
        check.stderr,
        format!(
            "attention: {} of {} partitions need attention\n",
            wanted.len(),
            all_partitions().len()
        )
    );
}

/// `check --json`: the report of every partition, each with its expected verdict.
fn check_check_json(check: &Finished) {
    assert_eq!(check.status.code(), Some(4), "{}", check.stderr);
    let report: serde_json::Value = serde_json::from_str(&check.stdout)
        .unwrap_or_else(|error| panic!("check --json is JSON ({error}):\n{}", check.stdout));
    assert_eq!(report["group"], GROUP);
    let partitions = report["partitions"].as_array().expect("partitions");
    let mut verdicts = BTreeMap::new();
    for p in partitions {
        let subscription = p["subscription"].as_str().expect("subscription");
        let partition = p["partition"].as_u64().expect("partition") as u32;
        let verdict = p["verdict"].as_str().expect("verdict");
        assert!(
            expected(subscription, partition).contains(&verdict),
            "{subscription}/{partition} is {verdict}, expected one of {:?}: {p}",
            expected(subscription, partition)
        );
        verdicts.insert((subscription.to_owned(), partition), verdict.to_owned());
    }
    assert_eq!(verdicts.len(), all_partitions().len(), "{}", check.stdout);
}

/// `status --watch` with its output piped: a block of plain lines per refresh, each starting
/// with the header, every partition and every evidence line whole (no `…`), no escape codes;
/// SIGTERM stops it with exit 0.
fn check_plain(plain: &Finished) {
    println!("── checkpoint status --watch, piped\n{}", plain.stdout);
    assert!(
        plain.status.success(),
        "exit 0 on SIGTERM: {:?} {}",
        plain.status,
        plain.stderr
    );
    assert!(
        !plain.stdout.contains('\x1b'),
        "no escape codes off a terminal"
    );
    let header = format!(" UTC · {GROUP} · ");
    let blocks: Vec<&str> = plain.stdout.split(&header).skip(1).collect();
    assert!(blocks.len() >= 2, "a block per refresh:\n{}", plain.stdout);
    for block in &blocks {
        assert!(!block.contains('…'), "nothing cut off a terminal:\n{block}");
        let rows = terminal::rows(block);
        assert_eq!(
            rows.len(),
            all_partitions().len(),
            "every partition:\n{block}"
        );
        assert_eq!(
            rows.get("killed/0").map(String::as_str),
            Some("stopped"),
            "{block}"
        );
    }
    // The last block has had a few samples: the evidence of every partition that needs
    // attention is there, whole (a terminal shows 5).
    let last = blocks.last().copied().unwrap_or_default();
    for name in ["killed/0", "killed/3", "stuck/2"] {
        assert!(
            last.lines()
                .filter(|l| l.split_whitespace().nth(1) == Some(name))
                .count()
                == 2,
            "{name}: its row and its evidence line:\n{last}"
        );
    }
}
