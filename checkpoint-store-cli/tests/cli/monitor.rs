//! The live view counted on the wire: a refresh costs the store one request for the
//! checkpoints, one for the parked entries and one for the subscription's leases, and the log
//! one call of `heads`, the same for 16 partitions as for 1,024. The command (`status --watch`,
//! plain lines: `check` and `serve` refresh through the same sampler) reaches PostgreSQL, store
//! and log, through the kit's counting proxies; the test reads the proxies' counts as each
//! refresh's block is printed, so that each difference is one refresh (connecting and
//! preparing statements show in the first ones only).
//!
//! On the wire each request of a pool is two exchanges: the request, and sqlx 0.9's check of
//! the connection as it goes back to the pool (`Sync` → `ReadyForQuery`, in a task of its own
//! after the call returned; no setting turns it off: checkpoint-postgres's round-trip tests
//! count it apart). So the store's 3 requests are 6 exchanges.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use checkpoint_conformance::round_trips::CountingProxy;
use checkpoint_core::{Checkpoint, CheckpointStore, LeaseStore};
use checkpoint_source_postgres::PostgresSource;
use sqlx::postgres::PgPoolOptions;

use crate::lag::drop_postgres_log;
use crate::support::{Backend, Fixture, fresh_group, required};

/// The partition count of the figure.
const PARTITIONS: u32 = 1_024;

/// Refreshes watched; the first two are left out of the figure (connections, statements).
const REFRESHES: usize = 14;

/// `checkpoint … status --watch` running with its standard output piped: its header lines
/// as they come.
struct Watching {
    child: Child,
    headers: tokio::sync::mpsc::UnboundedReceiver<String>,
    reader: Option<std::thread::JoinHandle<String>>,
}

impl Watching {
    fn start(args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_checkpoint"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the checkpoint binary runs");
        let stdout = child.stdout.take().expect("piped");
        let (sender, headers) = tokio::sync::mpsc::unbounded_channel();
        let reader = std::thread::spawn(move || {
            let mut all = String::new();
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                // The header: `HH:MM:SS UTC · GROUP · N partitions: …`.
                if line.contains(" UTC · ") {
                    let _ = sender.send(line.clone());
                }
                all.push_str(&line);
                all.push('\n');
            }
            all
        });
        Self {
            child,
            headers,
            reader: Some(reader),
        }
    }

    /// The next refresh's header, within `timeout`.
    async fn header(&mut self, timeout: Duration) -> String {
        tokio::time::timeout(timeout, self.headers.recv())
            .await
            .unwrap_or_else(|_| panic!("no refresh within {timeout:?}"))
            .expect("the view runs")
    }

    /// SIGTERM; asserts it exits 0. Everything it printed.
    fn stop(&mut self) -> String {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let status = self.child.wait().expect("the view exits");
        let output = self
            .reader
            .take()
            .map(|reader| reader.join().expect("the reader"))
            .unwrap_or_default();
        assert!(status.success(), "{status}: {output}");
        output
    }
}

impl Drop for Watching {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `url` with its host and port replaced by `proxy`'s.
fn through(url: &str, proxy: &CountingProxy) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let user = authority
        .rsplit_once('@')
        .map_or(String::new(), |(user, _)| format!("{user}@"));
    format!("postgres://{user}{}/{path}", proxy.local_addr())
}

/// A group with one subscription `s` on `count` partitions, every one checkpointed and leased,
/// and a log of its own with an entry in 3 of them; the log's table.
async fn fleet(fixture: &Fixture, database: &str, group: &str, count: u32) -> String {
    let checkpoints: Vec<Checkpoint> = (0..count)
        .map(|partition| Checkpoint::new("s", partition, 2))
        .collect();
    fixture
        .store
        .save_all(group, &checkpoints)
        .await
        .expect("save_all");
    let partitions: Vec<u32> = (0..count).collect();
    fixture
        .store
        .acquire(group, "s", "w1", &partitions, Duration::from_secs(3600))
        .await
        .expect("acquire");
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .connect(database)
        .await
        .expect("DATABASE_URL reachable");
    let table = format!("events_{}", group.replace('-', "_"));
    let source = PostgresSource::new(pool.clone(), count)
        .with_table(&table)
        .expect("table name");
    source.migrate().await.expect("migrate");
    for partition in [0, count / 2, count - 1] {
        source
            .append(partition, Some("k"), b"entry")
            .await
            .expect("append");
    }
    pool.close().await;
    table
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refresh_costs_the_same_requests_for_16_partitions_as_for_1024() {
    let fixture = Fixture::new(Backend::Postgres).await;
    let database = required("DATABASE_URL");
    let small = refresh_costs(&fixture, &database, 16).await;
    let large = refresh_costs(&fixture, &database, PARTITIONS).await;
    println!("exchanges of each refresh (store, log): 16 partitions {small:?}, 1,024 {large:?}");
    // The first refreshes connect and prepare. After them a refresh is 6 exchanges with the
    // store and 2 with the log, but one refresh's count may take an exchange from the next:
    // the pool's check of a connection runs after the call returned, and may be counted a
    // refresh late (a log's 2 then reads 3, 1). And the pool may take another connection
    // while the last one is being checked, whose statements are prepared there once (one more
    // exchange each). So the figure is the steady refreshes' total divided by their number,
    // rounded: a preparation or a late check moves it by a fraction, never by a request, and
    // anything that grew with the partitions would show as whole requests.
    let per_refresh = |costs: &[(u64, u64)], side: fn(&(u64, u64)) -> u64| -> u64 {
        let steady = &costs[2..];
        let total: u64 = steady.iter().map(side).sum();
        (total as f64 / steady.len() as f64).round() as u64
    };
    for costs in [&small, &large] {
        assert_eq!(per_refresh(costs, |c| c.0), 6, "store: {small:?} {large:?}");
        assert_eq!(per_refresh(costs, |c| c.1), 2, "log: {small:?} {large:?}");
    }
}

/// The exchanges with the store and with the log of each refresh of `status --watch` after
/// the first, over a fleet of `count` partitions.
async fn refresh_costs(fixture: &Fixture, database: &str, count: u32) -> Vec<(u64, u64)> {
    let group = fresh_group("cli-monitor-wire");
    let table = fleet(fixture, database, &group, count).await;
    let store_proxy = CountingProxy::start("127.0.0.1:5432").await.expect("proxy");
    let source_proxy = CountingProxy::start("127.0.0.1:5432").await.expect("proxy");

    let store_url = through(&fixture.url, &store_proxy);
    let source_url = through(database, &source_proxy);
    let mut view = Watching::start(&[
        "--url",
        &store_url,
        "status",
        &group,
        "--source",
        &source_url,
        "--source-table",
        &table,
        "--watch",
        "--interval",
        "0.5",
    ]);
    // The proxies' counts as each refresh's header arrives: refresh k's requests are done.
    let mut counts = Vec::new();
    while counts.len() < REFRESHES {
        let header = view.header(Duration::from_secs(30)).await;
        assert!(
            header.contains(&format!(" UTC · {group} · {count} partitions")),
            "{header}"
        );
        counts.push((store_proxy.round_trips(), source_proxy.round_trips()));
    }
    view.stop();
    let per_refresh: Vec<(u64, u64)> = counts
        .windows(2)
        .map(|w| (w[1].0 - w[0].0, w[1].1 - w[0].1))
        .collect();
    drop_postgres_log(database, &table).await;
    per_refresh
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_hangs_shows_in_the_header_and_the_view_goes_on() {
    let fixture = Fixture::new(Backend::Postgres).await;
    let database = required("DATABASE_URL");
    let group = fresh_group("cli-monitor-hang");
    let table = fleet(&fixture, &database, &group, 4).await;
    let proxy = CountingProxy::start("127.0.0.1:5432").await.expect("proxy");
    let store_url = through(&fixture.url, &proxy);
    let mut view = Watching::start(&[
        "--url",
        &store_url,
        "--timeout",
        "1",
        "status",
        &group,
        "--source",
        &database,
        "--source-table",
        &table,
        "--watch",
        "--interval",
        "0.3",
    ]);
    let first = view.header(Duration::from_secs(30)).await;
    assert!(!first.contains("failed"), "{first}");
    // The store stops answering, connections open: each request waits for its timeout (1 s).
    proxy.black_hole();
    let failed = loop {
        let header = view.header(Duration::from_secs(10)).await;
        if header.contains("last refresh failed") {
            break header;
        }
    };
    // The figures of the refresh before stay (4 partitions), the error says why.
    assert!(failed.contains(" · 4 partitions: "), "{failed}");
    assert!(failed.contains("timed out after 1s"), "{failed}");
    // The store answers new connections again: the view recovers on its own.
    proxy.forward();
    let recovered = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let header = view.header(Duration::from_secs(10)).await;
            if !header.contains("failed") {
                break header;
            }
        }
    })
    .await
    .expect("the view recovers within 30 s of the store answering");
    assert!(recovered.contains(" · 4 partitions: "), "{recovered}");
    view.stop();
    drop_postgres_log(&database, &table).await;
}
