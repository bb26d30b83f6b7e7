//! `checkpoint serve` as a process: on port 0 over a SQLite store and log this process wrote,
//! its routes read with a tiny HTTP/1 client over a `TcpStream`, its page run by a real
//! headless Chromium (Debian's `chromium`: the test fails, naming the package, when it is
//! missing), and SIGTERM ending it with exit code 0.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use checkpoint_core::{CheckpointStore, LeaseStore};
use serde_json::Value;

use crate::lag::sqlite_log;
use crate::support::{Backend, Fixture, TempDir, fresh_group};

mod browser;

/// Long enough that no lease expires while the test runs.
const HOUR: Duration = Duration::from_secs(3600);

/// How long anything the test waits for may take, on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(60);

/// `a/0` behind with nobody on it (stopped), `a/1` caught up, `a/3` behind and held by `w1`
/// with a checkpoint that never moves (stalled), `b/0` caught up.
async fn checkpoints(fixture: &Fixture) -> String {
    let group = fresh_group("cli-serve");
    let g = group.as_str();
    let store = &fixture.store;
    for (subscription, partition, position) in [("a", 0, 3), ("a", 1, 3), ("a", 3, 1), ("b", 0, 6)]
    {
        store
            .save(g, subscription, partition, position)
            .await
            .expect("save");
    }
    store
        .acquire(g, "a", "w1", &[3], HOUR)
        .await
        .expect("acquire");
    group
}

/// A running `checkpoint serve`, killed on drop if the test did not stop it.
struct Server {
    child: Child,
    /// `127.0.0.1:PORT`, as it printed.
    address: String,
    _stdout: BufReader<ChildStdout>,
}

impl Server {
    /// Starts `checkpoint --url URL serve GROUP --source SOURCE --listen 127.0.0.1:0` with
    /// `--interval` and `--window`, and reads the address it listens on from its first line.
    fn start(fixture: &Fixture, group: &str, source: &str, interval: &str) -> Self {
        let args = [
            "--url",
            &fixture.url,
            "serve",
            group,
            "--source",
            source,
            "--listen",
            "127.0.0.1:0",
            "--interval",
            interval,
            "--window",
            "3",
        ];
        let mut child = Command::new(env!("CARGO_BIN_EXE_checkpoint"))
            .args(args)
            .env_remove("CHECKPOINT_URL")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the checkpoint binary runs");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        stdout.read_line(&mut line).expect("a line");
        let address = line
            .strip_prefix("listening on http://")
            .and_then(|rest| rest.split_once("/ (page), /api/fleet (JSON), /metrics (Prometheus)"))
            .map(|(address, _)| address.to_owned())
            .unwrap_or_else(|| panic!("not the listening line: {line:?} ({:?})", child.try_wait()));
        assert!(
            address.starts_with("127.0.0.1:") && !address.ends_with(":0"),
            "{line}"
        );
        Self {
            child,
            address,
            _stdout: stdout,
        }
    }

    /// `METHOD PATH` on a connection of its own: the status, the headers (lower-cased names)
    /// and the body.
    fn request(&self, method: &str, path: &str) -> Reply {
        let mut stream = TcpStream::connect(&self.address).expect("connect");
        stream.set_read_timeout(Some(PATIENCE)).expect("timeout");
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.address
        )
        .expect("send");
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).expect("read");
        let raw = String::from_utf8(raw).expect("UTF-8");
        let (head, body) = raw.split_once("\r\n\r\n").expect("a head and a body");
        let mut lines = head.lines();
        let status = lines.next().expect("a status line");
        let status = status
            .split(' ')
            .nth(1)
            .expect("a code")
            .parse()
            .expect("a number");
        let headers = lines
            .filter_map(|line| line.split_once(':'))
            .map(|(name, value)| (name.trim().to_lowercase(), value.trim().to_owned()))
            .collect();
        Reply {
            status,
            headers,
            body: body.to_owned(),
        }
    }

    /// `/api/fleet` once it has `refreshes` refreshes or more.
    fn fleet_after(&self, refreshes: u64) -> Value {
        let started = Instant::now();
        loop {
            let reply = self.request("GET", "/api/fleet");
            assert_eq!(reply.status, 200, "{reply:?}");
            let fleet: Value = serde_json::from_str(&reply.body).expect("JSON");
            if fleet["refreshes"].as_u64().unwrap_or(0) >= refreshes {
                return fleet;
            }
            assert!(
                started.elapsed() < PATIENCE,
                "not {refreshes} refreshes: {fleet}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGTERM, then its exit code.
    fn terminate(mut self) -> Option<i32> {
        let pid = self.child.id().to_string();
        let killed = Command::new("kill").args(["-TERM", &pid]).status();
        assert!(killed.expect("kill runs").success());
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status.code();
            }
            assert!(started.elapsed() < PATIENCE, "still running after SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// What the server answered.
#[derive(Debug)]
struct Reply {
    status: u16,
    headers: BTreeMap<String, String>,
    body: String,
}

/// The sample of `metric` with exactly `labels`, as text.
fn sample<'a>(metrics: &'a str, metric: &str, labels: &str) -> Option<&'a str> {
    let prefix = format!("checkpoint_monitor_{metric}{{{labels}}} ");
    metrics.lines().find_map(|line| line.strip_prefix(&prefix))
}

/// The partitions of the report: subscription, partition, verdict and lag.
fn verdicts(fleet: &Value) -> Vec<(&str, u64, &str, Option<u64>)> {
    let partitions = fleet["partitions"].as_array().expect("partitions");
    partitions
        .iter()
        .map(|p| {
            let subscription = p["subscription"].as_str().expect("a name");
            let partition = p["partition"].as_u64().expect("a partition");
            let verdict = p["verdict"].as_str().expect("a verdict");
            (subscription, partition, verdict, p["lag"].as_u64())
        })
        .collect()
}

/// The metrics of [`checkpoints`]' group `group`, after a few refreshes.
fn assert_metrics(metrics: &str, group: &str) {
    let g = format!("group=\"{group}\"");
    let p = |subscription: &str, partition: u32, extra: &str| {
        format!("{g},subscription=\"{subscription}\",partition=\"{partition}\"{extra}")
    };
    let mut expected = vec![
        ("partition_lag", p("a", 0, ""), Some("3")),
        ("partition_lag", p("a", 3, ""), Some("1")),
        ("partition_head", p("a", 3, ""), Some("1")),
        ("partition_position", p("b", 0, ""), Some("6")),
        (
            "partition_owner_info",
            p("a", 3, ",owner=\"w1\""),
            Some("1"),
        ),
        ("partition_owner_info", p("a", 0, ""), None),
        (
            "partitions",
            format!("{g},verdict=\"caught_up\""),
            Some("2"),
        ),
        ("store_requests_per_refresh", g.clone(), Some("4")),
        ("source_requests_per_refresh", g.clone(), Some("1")),
        ("refresh_failed", g.clone(), Some("0")),
    ];
    for verdict in [
        "stopped",
        "stalled",
        "falling_behind",
        "keeping_up",
        "caught_up",
    ] {
        let labels = p("a", 3, &format!(",verdict=\"{verdict}\""));
        let one_hot = if verdict == "stalled" { "1" } else { "0" };
        expected.push(("partition_verdict", labels, Some(one_hot)));
    }
    for (metric, labels, value) in expected {
        assert_eq!(
            sample(metrics, metric, &labels),
            value,
            "{metric}{{{labels}}}: {metrics}"
        );
    }
    assert!(metrics.contains("# TYPE checkpoint_monitor_refreshes_total counter"));
}

/// Every route but the page's content: types, caching, HEAD, 404 and 405.
fn assert_routes(server: &Server) {
    let reply = server.request("GET", "/api/fleet?pretty");
    assert_eq!(
        reply.headers["content-type"], "application/json",
        "{reply:?}"
    );
    assert_eq!(reply.headers["cache-control"], "no-store", "{reply:?}");
    let reply = server.request("GET", "/healthz");
    assert_eq!((reply.status, reply.body.as_str()), (200, "ok\n"));
    let reply = server.request("HEAD", "/");
    assert_eq!(reply.status, 200, "{reply:?}");
    assert!(
        reply.headers["content-type"].starts_with("text/html"),
        "{reply:?}"
    );
    assert_eq!(reply.body, "", "HEAD has no body");
    assert_eq!(server.request("GET", "/nowhere").status, 404);
    let reply = server.request("POST", "/metrics");
    assert_eq!(reply.status, 405, "{reply:?}");
    assert_eq!(reply.headers["allow"], "GET, HEAD", "{reply:?}");
    assert_eq!(server.request("DELETE", "/api/fleet").status, 405);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_and_report_of_a_group_then_sigterm_ends_it() {
    let fixture = Fixture::new(Backend::Sqlite).await;
    let dir = TempDir::new();
    let source = sqlite_log(&dir, "events").await;
    let group = checkpoints(&fixture).await;
    let server = Server::start(&fixture, &group, &source, "0.2");

    let fleet = server.fleet_after(3);
    let expected = [
        ("a", 0, "stopped", Some(3)),
        ("a", 3, "stalled", Some(1)),
        ("a", 1, "caught_up", Some(0)),
        ("b", 0, "caught_up", Some(0)),
    ];
    assert_eq!(verdicts(&fleet), expected, "{fleet}");
    assert_eq!(fleet["group"], group.as_str());
    assert_eq!(fleet["partitions"][1]["owner"], "w1", "{fleet}");
    // Two subscriptions: their checkpoints, their parked entries, the leases of each; one call
    // of the log's heads.
    let requests = serde_json::json!({"store": 4, "source": 1});
    assert_eq!(fleet["requests"], requests, "{fleet}");

    let reply = server.request("GET", "/metrics");
    assert_eq!(reply.status, 200, "{reply:?}");
    let prometheus = "text/plain; version=0.0.4; charset=utf-8";
    assert_eq!(reply.headers["content-type"], prometheus, "{reply:?}");
    assert_metrics(&reply.body, &group);
    assert_routes(&server);
    assert_eq!(server.terminate(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_are_answered_from_the_last_refresh_never_from_the_store() {
    let fixture = Fixture::new(Backend::Sqlite).await;
    let dir = TempDir::new();
    let source = sqlite_log(&dir, "events").await;
    let group = checkpoints(&fixture).await;
    // One refresh at start, the next in an hour: whatever is asked in between, nothing more
    // is read.
    let server = Server::start(&fixture, &group, &source, "3600");
    let first = server.fleet_after(1);
    for _ in 0..20 {
        for path in ["/", "/api/fleet", "/metrics"] {
            assert_eq!(server.request("GET", path).status, 200);
        }
    }
    let again = server.fleet_after(1);
    assert_eq!(again["refreshes"], 1, "{again}");
    assert_eq!(again["taken_at_ms"], first["taken_at_ms"], "{again}");
    assert_eq!(server.terminate(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_listen_address_is_a_usage_error_and_one_in_use_a_failure() {
    let fixture = Fixture::new(Backend::Sqlite).await;
    let dir = TempDir::new();
    let source = sqlite_log(&dir, "events").await;
    let serve =
        |listen: &str| fixture.cli(&["serve", "g", "--source", &source, "--listen", listen]);
    for listen in ["localhost", "127.0.0.1", "127.0.0.1:http", ""] {
        let output = serve(listen);
        let error = output.error(2);
        assert!(
            error.contains("--listen takes an IP address and a port"),
            "{error}"
        );
        assert_eq!(output.stdout, "", "{output:#?}");
    }
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let address = taken.local_addr().expect("its address").to_string();
    let output = serve(&address);
    let error = output.error(1);
    assert!(
        error.contains(&format!("cannot listen on {address}: ")),
        "{error}"
    );
}
