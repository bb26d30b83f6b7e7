//! A replicated stream (3 replicas) on a three-server cluster: writers append, a fleet of
//! subscriptions reads, and the stream's leader is SIGKILLed and started again meanwhile. What
//! the fleet handled is exactly what the stream holds, every acknowledged append among it,
//! each entry once, each partition in order.
//!
//! The cluster is `NATS_CLUSTER_URLS` (default [`DEFAULT_URLS`], where
//! `scripts/services/nats-cluster.sh up` starts it); the test fails when it cannot reach a
//! server of it. It kills and restarts servers through that script (`pid N`, `start N`, N the
//! server's place in the list), so the cluster must be the one the script started.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_nats::jetstream::{self, stream};
use checkpoint_core::InMemoryCheckpointStore;
use checkpoint_core::source::{Entry, Source};
use checkpoint_source_nats::{NatsSource, NatsSourceConfig, PARTITIONS_MARKER};
use checkpoint_subscription::{HandlerResult, Subscription};

use crate::support::unique_stream;

/// Where `scripts/services/nats-cluster.sh up` starts the cluster.
pub const DEFAULT_URLS: &str = "nats://127.0.0.1:4231,nats://127.0.0.1:4232,nats://127.0.0.1:4233";

const PARTITIONS: u32 = 6;
const WRITERS: u32 = 4;
const FLEET: usize = 3;
/// Bounds each wait of the test (the cluster's elections take seconds, not tens of them).
const LIMIT: Duration = Duration::from_secs(60);

fn cluster_urls() -> String {
    std::env::var("NATS_CLUSTER_URLS").unwrap_or_else(|_| DEFAULT_URLS.to_owned())
}

/// The cluster's servers, in the order of the URL list (the script's N is the place + 1).
struct Servers {
    names: Vec<String>,
}

impl Servers {
    /// Connects to each server alone for its name; panics (fails the test) when one does not
    /// answer, so that a cluster that is not up fails the test rather than skipping it.
    async fn discover(urls: &str) -> Self {
        let mut names = Vec::new();
        for url in urls.split(',').map(str::trim) {
            let client = async_nats::ConnectOptions::new()
                .connection_timeout(Duration::from_secs(5))
                .connect(url)
                .await
                .unwrap_or_else(|e| {
                    panic!(
                        "cannot connect to the NATS cluster's server {url} (NATS_CLUSTER_URLS; \
                         start it with `eval \"$(bash scripts/services/nats-cluster.sh up)\"`): {e}"
                    )
                });
            names.push(client.server_info().server_name);
        }
        assert_eq!(names.len(), 3, "NATS_CLUSTER_URLS names three servers");
        Self { names }
    }

    /// The script's number (1-3) of the server named `name`.
    fn number(&self, name: &str) -> usize {
        let place = self.names.iter().position(|n| n == name);
        place.unwrap_or_else(|| panic!("leader {name} is none of {:?}", self.names)) + 1
    }
}

/// The script that started the cluster (the repository's).
fn script_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/services/nats-cluster.sh")
}

/// Runs `scripts/services/nats-cluster.sh` with `args`; its stdout when it succeeds.
fn script(args: &[&str]) -> String {
    let output = Command::new("bash")
        .arg(script_path())
        .args(args)
        .output()
        .expect("bash runs");
    assert!(
        output.status.success(),
        "{} {args:?} (NATS_CLUSTER_URLS must be the cluster this checkout's script started): {}",
        script_path().display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// SIGKILLs server `n` and waits until its process is gone.
async fn kill(n: usize) -> u32 {
    let pid: u32 = script(&["pid", &n.to_string()]).parse().expect("a pid");
    let status = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success(), "kill -KILL {pid}");
    let killed = Instant::now();
    while std::path::Path::new(&format!("/proc/{pid}")).exists() {
        assert!(
            killed.elapsed() < LIMIT,
            "nats-server {pid} outlived SIGKILL"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    pid
}

/// Starts server `n` again if a failed test left it down, so that the next run finds the
/// cluster whole.
struct StartAgain(Option<usize>);

impl Drop for StartAgain {
    fn drop(&mut self) {
        if let Some(n) = self.0 {
            let _ = Command::new("bash")
                .arg(script_path())
                .args(["start", &n.to_string()])
                .status();
        }
    }
}

/// The stream's leader and whether every replica is current, as the cluster reports them.
async fn replication(context: &jetstream::Context, name: &str) -> Option<(String, bool)> {
    let info = context
        .get_stream(name)
        .await
        .ok()?
        .info()
        .await
        .ok()?
        .clone();
    let cluster = info.cluster?;
    let current = cluster.replicas.len() == 2 && cluster.replicas.iter().all(|r| r.current);
    Some((cluster.leader?, current))
}

/// Waits until the stream has a leader and every replica is current; returns the leader.
async fn until_replicated(context: &jetstream::Context, name: &str) -> String {
    let deadline = Instant::now() + LIMIT;
    loop {
        if let Some((leader, true)) = replication(context, name).await {
            return leader;
        }
        assert!(
            Instant::now() < deadline,
            "stream {name} not replicated within {LIMIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Makes the stream `create_stream` would, with 3 replicas (file storage, limits retention,
/// subjects `<prefix>.*`, the count in the description).
async fn create_replicated(context: &jetstream::Context, config: &NatsSourceConfig) {
    let prefix = config.subject_prefix();
    context
        .create_stream(stream::Config {
            name: config.stream().to_owned(),
            description: Some(format!(
                "checkpoint cluster test: subjects {prefix}.<partition>, {PARTITIONS_MARKER}{}",
                config.partitions()
            )),
            subjects: vec![format!("{prefix}.*")],
            storage: stream::StorageType::File,
            retention: stream::RetentionPolicy::Limits,
            num_replicas: 3,
            ..Default::default()
        })
        .await
        .expect("a replicated stream");
}

/// What the writers appended.
#[derive(Default)]
struct Appended {
    /// Acknowledged: position → (partition, payload).
    acked: BTreeMap<u64, (u32, Vec<u8>)>,
    /// Payloads whose append failed: stored or not, nobody knows.
    uncertain: HashSet<Vec<u8>>,
    attempts: u64,
    last_ack: Option<Instant>,
    /// The longest time without an acknowledgement: how long appends were unavailable.
    longest_gap: Duration,
}

/// Writers appending through the source to random partitions until `stop`.
fn start_writers(
    appender: &Arc<NatsSource>,
    appended: &Arc<Mutex<Appended>>,
    stop: &Arc<AtomicBool>,
) -> Vec<tokio::task::JoinHandle<()>> {
    (0..WRITERS)
        .map(|writer| {
            let (appender, appended) = (Arc::clone(appender), Arc::clone(appended));
            let stop = Arc::clone(stop);
            tokio::spawn(async move {
                let mut i = 0u64;
                while !stop.load(Ordering::SeqCst) {
                    let partition = fastrand::u32(..PARTITIONS);
                    let payload = format!("{partition}/w{writer}-{i}").into_bytes();
                    i += 1;
                    let result = appender.append(partition, None, payload.clone()).await;
                    let failed = {
                        let mut appended = appended.lock().unwrap();
                        appended.attempts += 1;
                        match result {
                            Ok(position) => {
                                appended.acked.insert(position, (partition, payload));
                                let now = Instant::now();
                                if let Some(last) = appended.last_ack.replace(now) {
                                    appended.longest_gap = appended.longest_gap.max(now - last);
                                }
                                false
                            }
                            Err(_) => appended.uncertain.insert(payload),
                        }
                    };
                    // A pause so that the writing spans the kill; longer after a failure.
                    let pause = if failed { 100 } else { 4 };
                    tokio::time::sleep(Duration::from_millis(pause)).await;
                }
            })
        })
        .collect()
}

/// One handler run: which member of the fleet ran it, on which entry.
struct Handled {
    member: usize,
    position: u64,
    payload: Vec<u8>,
}

/// The partition a writer appended `payload` to (its payload says).
fn partition_of(payload: &[u8]) -> u32 {
    let text = std::str::from_utf8(payload).expect("a UTF-8 payload");
    text.split('/')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("a writer's payload")
}

/// The fleet: `FLEET` subscriptions of one group over one in-memory store, each with its own
/// client of the cluster (all of its URLs), one entry in flight per partition so that the
/// handler runs see each partition's reads in their order.
async fn start_fleet(
    urls: &str,
    config: &NatsSourceConfig,
    handled: &Arc<Mutex<Vec<Handled>>>,
) -> Vec<Subscription> {
    let store = Arc::new(InMemoryCheckpointStore::new());
    let mut fleet = Vec::new();
    for member in 0..FLEET {
        let source = NatsSource::connect(urls, config.clone())
            .await
            .expect("a source on the cluster");
        let handled = Arc::clone(handled);
        let handler = move |entry: Arc<Entry>| {
            handled.lock().unwrap().push(Handled {
                member,
                position: entry.position,
                payload: entry.payload.clone(),
            });
            async { HandlerResult::Ok(()) }
        };
        let subscription =
            Subscription::builder(Arc::clone(&store), Arc::new(source), "cluster", "fleet")
                .handler(handler)
                .max_in_flight(1)
                .worker(|w| {
                    w.worker_id(format!("member-{member}"))
                        .lease_duration(Duration::from_secs(3))
                })
                .start()
                .expect("valid settings");
        fleet.push(subscription);
    }
    fleet
}

/// Who holds each partition, with its lease's epoch: (member, epoch) by partition.
fn holders(fleet: &[Subscription]) -> BTreeMap<u32, (usize, u64)> {
    let mut held = BTreeMap::new();
    for (member, subscription) in fleet.iter().enumerate() {
        for lease in subscription.stats().worker.held {
            if !lease.handing_over {
                held.insert(lease.partition, (member, lease.epoch));
            }
        }
    }
    held
}

/// Waits until the fleet is balanced: every partition held, two by each member.
async fn until_balanced(fleet: &[Subscription]) -> BTreeMap<u32, (usize, u64)> {
    let deadline = Instant::now() + LIMIT;
    loop {
        let held = holders(fleet);
        let each = fleet
            .iter()
            .all(|s| s.stats().worker.held.len() == PARTITIONS as usize / FLEET);
        if held.len() == PARTITIONS as usize && each {
            return held;
        }
        assert!(
            Instant::now() < deadline,
            "the fleet not balanced within {LIMIT:?}: {held:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Every message the stream holds, position → (partition, payload), read partition by
/// partition through a source of its own.
async fn stored(urls: &str, config: &NatsSourceConfig) -> BTreeMap<u64, (u32, Vec<u8>)> {
    let source = NatsSource::connect(urls, config.clone())
        .await
        .expect("a source");
    let mut all = BTreeMap::new();
    for partition in 0..PARTITIONS {
        let head = source.head(partition).await.expect("the head").unwrap_or(0);
        let (mut from, deadline) = (0, Instant::now() + LIMIT);
        while from <= head {
            assert!(
                Instant::now() < deadline,
                "partition {partition} not read to {head}"
            );
            let page = source.read(partition, from, 500).await.expect("a read");
            for entry in page.entries {
                all.insert(entry.position, (partition, entry.payload));
            }
            from = page.next;
        }
    }
    all
}

/// What happened to the cluster during the run.
struct Disruption {
    leader_before: String,
    /// The server killed (the stream's leader then): its name, its number, its pid.
    killed: (String, usize, u32),
    /// The leader the other two elected while it was down.
    leader_while_down: String,
    leader_after: String,
    down: Duration,
    /// Appends acknowledged between the kill and the restart: by the two servers left.
    acked_while_down: usize,
}

/// Lets the run go on for a second, SIGKILLs the stream's leader, waits until the other two
/// elect a new one and the writers went on with it for a second, starts the killed server
/// again and waits until it has caught up (every replica current).
async fn disrupt(
    context: &jetstream::Context,
    name: &str,
    servers: &Servers,
    appended: &Mutex<Appended>,
) -> Disruption {
    let acked = || appended.lock().unwrap().acked.len();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (leader_before, _) = replication(context, name).await.expect("a stream leader");
    let n = servers.number(&leader_before);
    let mut start_again = StartAgain(Some(n));
    let pid = kill(n).await;
    let acked_at_kill = acked();
    let killed_at = Instant::now();
    let leader_while_down = loop {
        match replication(context, name).await {
            Some((leader, _)) if leader != leader_before => break leader,
            _ => {
                assert!(
                    killed_at.elapsed() < LIMIT,
                    "no new stream leader within {LIMIT:?}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    let acked_while_down = acked() - acked_at_kill;
    script(&["start", &n.to_string()]);
    let down = killed_at.elapsed();
    start_again.0 = None;
    let leader_after = until_replicated(context, name).await;
    // Writing goes on with the whole cluster again.
    tokio::time::sleep(Duration::from_secs(1)).await;
    Disruption {
        killed: (leader_before.clone(), n, pid),
        leader_before,
        leader_while_down,
        leader_after,
        down,
        acked_while_down,
    }
}

/// Waits until the fleet has handled every entry the stream holds; returns what it holds.
async fn until_all_handled(
    urls: &str,
    config: &NatsSourceConfig,
    handled: &Mutex<Vec<Handled>>,
) -> BTreeMap<u64, (u32, Vec<u8>)> {
    let deadline = Instant::now() + LIMIT;
    loop {
        let stored = stored(urls, config).await;
        let missing = {
            let handled = handled.lock().unwrap();
            let seen: HashSet<u64> = handled.iter().map(|h| h.position).collect();
            stored.keys().filter(|p| !seen.contains(p)).count()
        };
        if missing == 0 {
            return stored;
        }
        assert!(
            Instant::now() < deadline,
            "{missing} stored entries not handled within {LIMIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The run's counts.
#[derive(Debug)]
struct Counts {
    attempts: u64,
    acknowledged: usize,
    failed_appends: usize,
    stored: usize,
    handled: usize,
    duplicates: usize,
    longest_gap: Duration,
}

/// The checks: nothing acknowledged lost by the cluster, nothing stored but what writers
/// appended; every stored entry handled, nothing else handled; none handled twice and each
/// partition handled in order unless its lease moved (`moved`).
fn verify(
    appended: &Appended,
    stored: &BTreeMap<u64, (u32, Vec<u8>)>,
    handled: &[Handled],
    moved: &HashSet<u32>,
) -> Counts {
    for (position, entry) in &appended.acked {
        assert_eq!(
            stored.get(position),
            Some(entry),
            "acknowledged entry {position} lost"
        );
    }
    for (position, (partition, payload)) in stored {
        assert!(
            appended.acked.contains_key(position) || appended.uncertain.contains(payload),
            "entry {position} stored but never appended"
        );
        assert_eq!(
            partition_of(payload),
            *partition,
            "entry {position} in another partition"
        );
    }
    let mut runs: HashMap<u64, usize> = HashMap::new();
    let mut last: HashMap<u32, u64> = HashMap::new();
    for run in handled {
        let entry = stored.get(&run.position);
        let (partition, payload) =
            entry.unwrap_or_else(|| panic!("handled {} not stored", run.position));
        assert_eq!(
            &run.payload, payload,
            "entry {} handled with another payload",
            run.position
        );
        *runs.entry(run.position).or_default() += 1;
        let previous = last.insert(*partition, run.position);
        assert!(
            moved.contains(partition) || previous.is_none_or(|p| p < run.position),
            "partition {partition}: {} handled (by member {}) after {previous:?}: out of order",
            run.position,
            run.member
        );
    }
    assert_eq!(
        runs.len(),
        stored.len(),
        "handled entries other than the stored ones"
    );
    let duplicated: Vec<u64> = runs
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(p, _)| *p)
        .collect();
    for position in &duplicated {
        let partition = stored[position].0;
        assert!(
            moved.contains(&partition),
            "entry {position} of partition {partition} handled twice, its lease never moved"
        );
    }
    Counts {
        attempts: appended.attempts,
        acknowledged: appended.acked.len(),
        failed_appends: appended.uncertain.len(),
        stored: stored.len(),
        handled: handled.len(),
        duplicates: duplicated.len(),
        longest_gap: appended.longest_gap,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_leader_loses_skips_and_duplicates_no_acknowledged_entry() {
    let started = Instant::now();
    let urls = cluster_urls();
    let servers = Servers::discover(&urls).await;
    let addrs = checkpoint_source_nats::server_addrs(&urls).expect("NATS_CLUSTER_URLS parses");
    let mut context = jetstream::new(async_nats::connect(addrs).await.expect("the cluster"));
    // Short, so that a question the dead server was to answer is given up soon and the new
    // leader is seen when it is elected (the default is 5 s).
    context.set_timeout(Duration::from_secs(1));
    let name = unique_stream("cluster");
    let config = NatsSourceConfig::new(name.clone(), PARTITIONS)
        .unwrap()
        .with_subject_prefix(name.to_lowercase())
        .unwrap();
    create_replicated(&context, &config).await;
    until_replicated(&context, &name).await;
    let handled = Arc::new(Mutex::new(Vec::new()));
    let fleet = start_fleet(&urls, &config, &handled).await;
    let balanced = until_balanced(&fleet).await;
    let appender = Arc::new(
        NatsSource::connect(&urls, config.clone())
            .await
            .expect("a source"),
    );
    let (appended, stop) = (Arc::default(), Arc::new(AtomicBool::new(false)));
    let writers = start_writers(&appender, &appended, &stop);
    let disruption = disrupt(&context, &name, &servers, &appended).await;
    assert!(
        disruption.acked_while_down > 0,
        "the two servers left acknowledged no append while the third was down"
    );
    stop.store(true, Ordering::SeqCst);
    for writer in writers {
        writer.await.expect("a writer");
    }
    let stored = until_all_handled(&urls, &config, &handled).await;
    let moved: HashSet<u32> = holders(&fleet)
        .iter()
        .filter(|(partition, held)| balanced.get(partition) != Some(held))
        .map(|(partition, _)| *partition)
        .collect();
    let source_errors: u64 = fleet.iter().map(|s| s.stats().source_errors).sum();
    let counts = {
        let appended = appended.lock().unwrap();
        verify(&appended, &stored, &handled.lock().unwrap(), &moved)
    };
    print_run(
        &counts,
        &disruption,
        &moved,
        source_errors,
        started.elapsed(),
    );
    for subscription in &fleet {
        subscription.shutdown().await.expect("a graceful shutdown");
    }
    context
        .delete_stream(&name)
        .await
        .expect("the stream deleted");
}

/// The run's counts on one line, for the report.
fn print_run(
    counts: &Counts,
    disruption: &Disruption,
    moved: &HashSet<u32>,
    source_errors: u64,
    elapsed: Duration,
) {
    let (killed, n, pid) = &disruption.killed;
    println!(
        "cluster run: {} appends tried, {} acknowledged, {} failed (stored or not), {} stored, \
         {} handler runs, {} duplicates, {:?} at most without an acknowledgement, leases moved on partitions {moved:?}, \
         {source_errors} source errors seen by the fleet; killed {killed} (server {n}, pid {pid}), \
         down {:?} ({} appends acknowledged meanwhile); stream leader before {}, while down {}, \
         after {}; {elapsed:?} in all",
        counts.attempts,
        counts.acknowledged,
        counts.failed_appends,
        counts.stored,
        counts.handled,
        counts.duplicates,
        counts.longest_gap,
        disruption.down,
        disruption.acked_while_down,
        disruption.leader_before,
        disruption.leader_while_down,
        disruption.leader_after,
    );
}
