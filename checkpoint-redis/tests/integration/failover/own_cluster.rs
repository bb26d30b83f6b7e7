//! A Redis Cluster of the test's own: three masters with one replica each, six `redis-server`
//! processes on free ports of 127.0.0.1 with their data in a temporary folder, and a short
//! `cluster-node-timeout` so that a failover takes seconds. Never the shared cluster of
//! `scripts/services/redis-cluster.sh`, whose masters the other tests use.
//!
//! Dropping the guard SIGKILLs every process it started and removes the folder, whether the
//! test passed or panicked.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::support::free_port;

/// How long a node may stay unreachable before the others flag it as failing: short, so that
/// a failover takes a few seconds, and long enough that a busy 2-core machine does not fail a
/// live master over.
pub const NODE_TIMEOUT: Duration = Duration::from_millis(1_000);

/// How long any wait of this module (the cluster forming, a promotion, a resync) may take
/// before the test fails and says what it waited for.
const WAIT_LIMIT: Duration = Duration::from_secs(30);

/// The settings of every node: cluster mode with the short node timeout, no persistence (the
/// failover tests are about replication; a restarted node resyncs from its new master), and a
/// full resync sent at once rather than after Redis's default 5 s of waiting for more replicas.
const SETTINGS: &[&str] = &[
    "--cluster-enabled",
    "yes",
    "--cluster-config-file",
    "nodes.conf",
    "--appendonly",
    "no",
    "--save",
    "",
    "--repl-diskless-sync-delay",
    "0",
];

/// One `redis-server` of the cluster.
struct Node {
    port: u16,
    /// The cluster bus port, chosen free too (the default, port + 10,000, may be taken or out of
    /// range).
    bus_port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

/// A node as `CLUSTER NODES` describes it.
#[derive(Debug, Clone)]
pub struct NodeView {
    pub id: String,
    pub port: u16,
    pub master: bool,
    /// Flagged `fail` or `fail?` by the node that answered.
    pub failing: bool,
    /// The master's id, for a replica.
    pub master_id: Option<String>,
    /// Slot ranges, inclusive, for a master.
    pub slots: Vec<(u16, u16)>,
}

impl NodeView {
    pub fn serves(&self, slot: u16) -> bool {
        self.slots
            .iter()
            .any(|(first, last)| (*first..=*last).contains(&slot))
    }
}

/// Three masters, one replica each, started by the test; killed on drop.
pub struct OwnCluster {
    dir: PathBuf,
    nodes: Vec<Node>,
}

impl OwnCluster {
    /// Starts six nodes, creates the cluster with `redis-cli --cluster create
    /// --cluster-replicas 1`, and waits until every node says `cluster_state:ok` and every
    /// replica is in sync with its master.
    pub async fn start() -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "checkpoint-redis-failover-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("creating the cluster's temporary folder");
        // From here on, the guard cleans up whatever happens.
        let mut cluster = Self {
            dir,
            nodes: Vec::new(),
        };
        let mut taken = BTreeSet::new();
        for index in 0..6 {
            let node_dir = cluster.dir.join(format!("node-{index}"));
            std::fs::create_dir_all(&node_dir).expect("creating a node's folder");
            let mut node = Node {
                port: 0,
                bus_port: 0,
                dir: node_dir,
                child: None,
            };
            // A free port can be taken between the probe and the server's bind: try a few.
            let mut started = false;
            for _ in 0..5 {
                node.port = distinct_free_port(&mut taken);
                node.bus_port = distinct_free_port(&mut taken);
                if node.spawn().await {
                    started = true;
                    break;
                }
            }
            let log = node.log();
            cluster.nodes.push(node);
            assert!(started, "a cluster node did not start: {log}");
        }
        let output = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(
                cluster
                    .nodes
                    .iter()
                    .map(|node| format!("127.0.0.1:{}", node.port)),
            )
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|error| {
                panic!("cannot run redis-cli ({error}): install the Debian package redis-tools")
            });
        assert!(
            output.status.success(),
            "redis-cli --cluster create failed:\n{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        cluster.wait_until_healthy().await;
        cluster
    }

    /// The URL of every node, for `connect_cluster`.
    pub fn urls(&self) -> Vec<String> {
        self.nodes
            .iter()
            .map(|node| format!("redis://127.0.0.1:{}", node.port))
            .collect()
    }

    /// The slot of `key`, asked of a live node.
    pub async fn key_slot(&self, key: &str) -> u16 {
        let port = self.live_port();
        query(port, redis::cmd("CLUSTER").arg("KEYSLOT").arg(key))
            .await
            .unwrap_or_else(|error| panic!("CLUSTER KEYSLOT on {port}: {error}"))
    }

    /// `CLUSTER NODES` as a live node sees it.
    pub async fn topology(&self) -> Vec<NodeView> {
        let port = self.live_port();
        let text: String = query(port, redis::cmd("CLUSTER").arg("NODES"))
            .await
            .unwrap_or_else(|error| panic!("CLUSTER NODES on {port}: {error}"));
        parse_nodes(&text)
    }

    /// The port of the master serving `slot`.
    pub async fn master_of(&self, slot: u16) -> u16 {
        self.topology()
            .await
            .into_iter()
            .find(|node| node.master && node.serves(slot))
            .map(|node| node.port)
            .unwrap_or_else(|| panic!("no master serves slot {slot}"))
    }

    /// SIGKILLs the node on `port` (a crash: no chance to send anything more) and reaps it.
    /// Returns the moment of the kill.
    pub fn kill(&mut self, port: u16) -> Instant {
        let node = self.node_mut(port);
        let mut child = node.child.take().expect("the node runs");
        // std's `Child::kill` is SIGKILL, sent directly (no `kill` process to start first).
        child.kill().expect("SIGKILL");
        let killed = Instant::now();
        let _ = child.wait();
        killed
    }

    /// Closes the replication links of the master on `port` (`CLIENT KILL TYPE replica`).
    /// A running replica reconnects within milliseconds and catches up from the master's
    /// backlog; a paused one ([`signal`](Self::signal) `STOP`) stays cut off. Returns how many
    /// links were closed.
    pub async fn cut_replica_links(&self, port: u16) -> u64 {
        query(
            port,
            redis::cmd("CLIENT").arg("KILL").arg("TYPE").arg("replica"),
        )
        .await
        .unwrap_or_else(|error| panic!("CLIENT KILL TYPE replica on {port}: {error}"))
    }

    /// The port of the replica of the master on `port`.
    pub async fn replica_of(&self, port: u16) -> u16 {
        let topology = self.topology().await;
        let master = topology
            .iter()
            .find(|node| node.port == port)
            .unwrap_or_else(|| panic!("no node on {port}"));
        topology
            .iter()
            .find(|node| node.master_id.as_ref() == Some(&master.id))
            .map(|node| node.port)
            .unwrap_or_else(|| panic!("the master on {port} has no replica"))
    }

    /// Sends `signal` (`STOP`, `CONT`) to the node on `port`.
    pub fn signal(&mut self, port: u16, signal: &str) {
        let pid = self
            .node_mut(port)
            .child
            .as_ref()
            .expect("the node runs")
            .id();
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(pid.to_string())
            .status()
            .expect("running kill");
        assert!(status.success(), "kill -{signal} {pid} failed");
    }

    /// Waits until a node other than `killed` is the master of `slot`, unflagged, and every
    /// live node says `cluster_state:ok`. Returns the new master's port.
    pub async fn wait_for_promotion(&self, killed: u16, slot: u16) -> u16 {
        let started = Instant::now();
        loop {
            if let Some(port) = self.promoted(killed, slot).await {
                return port;
            }
            assert!(
                started.elapsed() < WAIT_LIMIT,
                "no replica was promoted within {WAIT_LIMIT:?} after killing {killed}: {:#?}",
                self.topology().await
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn promoted(&self, killed: u16, slot: u16) -> Option<u16> {
        let mut master = None;
        for node in self.nodes.iter().filter(|node| node.child.is_some()) {
            if !cluster_ok(node.port).await {
                return None;
            }
            let text: String = query(node.port, redis::cmd("CLUSTER").arg("NODES"))
                .await
                .ok()?;
            let serving = parse_nodes(&text)
                .into_iter()
                .find(|view| view.master && !view.failing && view.serves(slot))?;
            if serving.port == killed || master.is_some_and(|port| port != serving.port) {
                return None;
            }
            master = Some(serving.port);
        }
        master
    }

    /// Starts the killed node on `port` again, with its folder and settings: it comes back as
    /// a replica of the master that replaced it.
    pub async fn restart(&mut self, port: u16) {
        let node = self.node_mut(port);
        assert!(node.child.is_none(), "kill the node first");
        for _ in 0..20 {
            if node.spawn().await {
                return;
            }
            // The old socket may linger for a moment.
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("node {port} did not restart: {}", node.log());
    }

    /// Waits until every node runs and says `cluster_state:ok`, each view shows three masters
    /// with slots and three replicas, none flagged failing, and every replica's link to its
    /// master is up and not syncing: ready for the next failover.
    pub async fn wait_until_healthy(&self) {
        let started = Instant::now();
        loop {
            if self.healthy().await {
                return;
            }
            assert!(
                started.elapsed() < WAIT_LIMIT,
                "the cluster was not healthy within {WAIT_LIMIT:?}: {:#?}",
                self.topology().await
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn healthy(&self) -> bool {
        for node in &self.nodes {
            if node.child.is_none() || !cluster_ok(node.port).await {
                return false;
            }
            let Ok(text) = query::<String>(node.port, redis::cmd("CLUSTER").arg("NODES")).await
            else {
                return false;
            };
            let views = parse_nodes(&text);
            let masters = views
                .iter()
                .filter(|view| view.master && !view.slots.is_empty())
                .count();
            // Replicas of a master with slots, one each.
            let replicas = views
                .iter()
                .filter(|view| {
                    !view.master
                        && views.iter().any(|master| {
                            master.master
                                && !master.slots.is_empty()
                                && view.master_id.as_ref() == Some(&master.id)
                        })
                })
                .map(|view| view.master_id.clone())
                .collect::<BTreeSet<_>>()
                .len();
            if views.len() != 6 || masters != 3 || replicas != 3 {
                return false;
            }
            if views.iter().any(|view| view.failing) {
                return false;
            }
            let Ok(info) = query::<String>(node.port, redis::cmd("INFO").arg("replication")).await
            else {
                return false;
            };
            let field = |name: &str| {
                info.lines()
                    .find_map(|line| line.strip_prefix(name))
                    .map(str::trim)
                    .map(str::to_owned)
            };
            let in_sync = match field("role:").as_deref() {
                Some("master") => field("connected_slaves:").as_deref() == Some("1"),
                Some("slave") => {
                    field("master_link_status:").as_deref() == Some("up")
                        && field("master_sync_in_progress:").as_deref() == Some("0")
                }
                _ => false,
            };
            if !in_sync {
                return false;
            }
        }
        true
    }

    fn live_port(&self) -> u16 {
        self.nodes
            .iter()
            .find(|node| node.child.is_some())
            .map(|node| node.port)
            .expect("a live node")
    }

    fn node_mut(&mut self, port: u16) -> &mut Node {
        self.nodes
            .iter_mut()
            .find(|node| node.port == port)
            .unwrap_or_else(|| panic!("no node of this cluster on port {port}"))
    }
}

impl Drop for OwnCluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            if let Some(mut child) = node.child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Node {
    /// Starts the process and waits until it answers PING; false if it exited (a taken port)
    /// or did not answer within 10 s.
    async fn spawn(&mut self) -> bool {
        let mut command = Command::new("redis-server");
        command
            .arg("--port")
            .arg(self.port.to_string())
            .arg("--cluster-port")
            .arg(self.bus_port.to_string())
            .args(["--bind", "127.0.0.1", "--daemonize", "no"])
            .arg("--cluster-node-timeout")
            .arg(NODE_TIMEOUT.as_millis().to_string())
            .args(SETTINGS)
            .arg("--dir")
            .arg(&self.dir)
            .arg("--logfile")
            .arg(self.dir.join("redis.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(error) => panic!(
                "cannot run redis-server ({error}): the failover tests start a cluster of their \
                 own; install the Debian package redis-server"
            ),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return false;
            }
            if query::<String>(self.port, &redis::cmd("PING"))
                .await
                .is_ok()
            {
                self.child = Some(child);
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let _ = child.kill();
        let _ = child.wait();
        false
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("redis.log")).unwrap_or_default()
    }
}

/// A free port not handed out before in this cluster.
fn distinct_free_port(taken: &mut BTreeSet<u16>) -> u16 {
    loop {
        let port = free_port();
        if taken.insert(port) {
            return port;
        }
    }
}

/// One command on a fresh connection to the node on `port`, bounded by a second: the admin
/// side of the test never shares the store's connections and never hangs on a dead node.
async fn query<T: redis::FromRedisValue>(port: u16, command: &redis::Cmd) -> Result<T, String> {
    let attempt = async {
        let client = redis::Client::open(format!("redis://127.0.0.1:{port}"))
            .map_err(|error| error.to_string())?;
        let mut connection = client
            .get_multiplexed_async_connection()
            .await
            .map_err(|error| error.to_string())?;
        command
            .query_async(&mut connection)
            .await
            .map_err(|error| error.to_string())
    };
    tokio::time::timeout(Duration::from_secs(1), attempt)
        .await
        .map_err(|_| format!("node {port} did not answer within a second"))?
}

async fn cluster_ok(port: u16) -> bool {
    query::<String>(port, redis::cmd("CLUSTER").arg("INFO"))
        .await
        .is_ok_and(|info| info.lines().any(|line| line.trim() == "cluster_state:ok"))
}

/// Parses `CLUSTER NODES`: `<id> <ip:port@bus[,hostname]> <flags> <master> <ping-sent>
/// <pong-recv> <config-epoch> <link-state> <slot>...`.
fn parse_nodes(text: &str) -> Vec<NodeView> {
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            assert!(fields.len() >= 8, "a CLUSTER NODES line: {line}");
            let port = fields[1]
                .split('@')
                .next()
                .and_then(|addr| addr.rsplit(':').next())
                .and_then(|port| port.parse().ok())
                .unwrap_or(0);
            let flags: Vec<&str> = fields[2].split(',').collect();
            let slots = fields[8..]
                .iter()
                // Slots being migrated (`[slot->-id]`) never occur in these tests.
                .filter(|range| !range.starts_with('['))
                .map(|range| match range.split_once('-') {
                    Some((first, last)) => (
                        first.parse().expect("a slot"),
                        last.parse().expect("a slot"),
                    ),
                    None => {
                        let slot = range.parse().expect("a slot");
                        (slot, slot)
                    }
                })
                .collect();
            NodeView {
                id: fields[0].to_owned(),
                port,
                master: flags.contains(&"master"),
                failing: flags.contains(&"fail") || flags.contains(&"fail?"),
                master_id: (fields[3] != "-").then(|| fields[3].to_owned()),
                slots,
            }
        })
        .collect()
}
