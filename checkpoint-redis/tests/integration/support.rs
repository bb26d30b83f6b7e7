//! Where the servers come from (the single server, the cluster, servers of a test's own),
//! proxies that hold back or delay answers, and what the Redis-only checks share: the
//! connections they run on, a raw read of a stored value, and `on_single_and_cluster!`.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use checkpoint_conformance::proxy::Proxy;
use checkpoint_conformance::round_trips::CountingProxy;
use checkpoint_redis::{RedisCheckpointStore, RedisClusterCheckpointStore};
use redis::IntoConnectionInfo;
use redis::aio::ConnectionLike;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The environment variable with the single server's URL.
pub const URL_VAR: &str = "REDIS_URL";

/// The environment variable with the cluster's node URLs, comma-separated.
pub const CLUSTER_VAR: &str = "REDIS_CLUSTER_URLS";

/// The single server's URL: `REDIS_URL`, or else a Redis started with testcontainers once per
/// test binary (through the kit's `harness::server_url`). Panics with instructions when there
/// is neither.
pub async fn single_url() -> String {
    checkpoint_conformance::harness::server_url(URL_VAR, start_container)
}

/// Starts Redis in Docker; its URL, and the container to keep alive.
async fn start_container() -> Result<(String, impl Sized), String> {
    use testcontainers::runners::AsyncRunner;

    let container = testcontainers_modules::redis::Redis::default()
        .start()
        .await
        .map_err(|error| error.to_string())?;
    let host = container.get_host().await.map_err(|e| e.to_string())?;
    let port = container
        .get_host_port_ipv4(6379)
        .await
        .map_err(|e| e.to_string())?;
    Ok((format!("redis://{host}:{port}"), container))
}

/// The single server's address, for proxies.
pub async fn single_addr() -> SocketAddr {
    let url = single_url().await;
    let info = url
        .as_str()
        .into_connection_info()
        .expect("a valid REDIS_URL");
    match info.addr() {
        redis::ConnectionAddr::Tcp(host, port) => tokio::net::lookup_host((host.as_str(), *port))
            .await
            .expect("resolving the Redis host")
            .next()
            .expect("an address for the Redis host"),
        other => panic!("these tests need a TCP Redis URL, not {other}"),
    }
}

/// A store on the single server.
pub async fn single_store() -> RedisCheckpointStore {
    let url = single_url().await;
    RedisCheckpointStore::connect(&url)
        .await
        .unwrap_or_else(|error| panic!("cannot connect to {URL_VAR}: {error:?}"))
}

/// A store on the single server connected through the kit's counting proxy, and the proxy.
pub async fn counted_store() -> (RedisCheckpointStore, CountingProxy) {
    let proxy = CountingProxy::start(single_addr().await)
        .await
        .expect("starting the counting proxy");
    let store = RedisCheckpointStore::connect(&format!("redis://{}", proxy.local_addr()))
        .await
        .expect("connecting through the proxy");
    (store, proxy)
}

/// The cluster's node URLs from `REDIS_CLUSTER_URLS`. No container is started for a cluster:
/// without the variable every cluster test fails and says how to start one.
pub fn cluster_urls() -> Vec<String> {
    let urls = checkpoint_conformance::harness::server_url(CLUSTER_VAR, || async {
        Err::<(String, ()), _>(
            "no container is started for a cluster; `eval \"$(bash \
             scripts/services/redis-cluster.sh up)\"` starts a local one and sets the variable",
        )
    });
    let urls: Vec<String> = urls
        .split(',')
        .map(str::trim)
        .filter(|url| !url.is_empty())
        .map(str::to_owned)
        .collect();
    assert!(
        !urls.is_empty(),
        "{CLUSTER_VAR} names no node: set it to comma-separated node URLs"
    );
    urls
}

/// A store on the cluster.
pub async fn cluster_store() -> RedisClusterCheckpointStore {
    RedisClusterCheckpointStore::connect_cluster(cluster_urls())
        .await
        .unwrap_or_else(|error| panic!("cannot connect to {CLUSTER_VAR}: {error:?}"))
}

/// The kit's proxy in front of `upstream`, for the tests that hold back (freeze) or delay the
/// server's answers.
pub async fn proxy(upstream: SocketAddr) -> Proxy {
    Proxy::start(upstream)
        .await
        .unwrap_or_else(|error| panic!("cannot start the kit's proxy: {error}"))
}

/// A redis-server of the test's own, on a free port of 127.0.0.1 with its data in a temporary
/// folder, for the tests that stop, kill, pause or reconfigure a server: never the machine's
/// shared one. Dropping it kills the process (even a paused one) and removes the folder, so a
/// failing test cleans up too.
pub struct OwnRedis {
    port: u16,
    dir: std::path::PathBuf,
    args: Vec<String>,
    child: Option<std::process::Child>,
}

/// The persistence the crate doc recommends for checkpoints that must survive a crash: AOF,
/// fsynced before each reply, no RDB snapshots.
pub const DURABLE: &[&str] = &[
    "--appendonly",
    "yes",
    "--appendfsync",
    "always",
    "--save",
    "",
];

/// No persistence at all: a restart loses everything.
pub const VOLATILE: &[&str] = &["--appendonly", "no", "--save", ""];

impl OwnRedis {
    /// Starts `redis-server` with `persistence` (and any other arguments) on a free port.
    pub async fn start(persistence: &[&str]) -> Self {
        Self::start_with(persistence, |_| Vec::new()).await
    }

    /// Like [`start`](Self::start), with more arguments that `setup` returns after preparing
    /// files in the server's folder (certificates, for example).
    pub async fn start_with(
        persistence: &[&str],
        setup: impl FnOnce(&std::path::Path) -> Vec<String>,
    ) -> Self {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "checkpoint-redis-test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("creating the server's temporary folder");
        let mut server = Self {
            port: 0,
            dir,
            args: persistence.iter().map(|a| (*a).to_owned()).collect(),
            child: None,
        };
        let extra = setup(&server.dir);
        server.args.extend(extra);
        // A free port can be taken between the probe and the server's bind: try a few.
        for _ in 0..5 {
            server.port = free_port();
            if server.spawn().await {
                return server;
            }
        }
        panic!("redis-server did not start: {}", server.log());
    }

    /// `redis://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The folder the server keeps its data (and the test its files) in.
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("the server runs").id()
    }

    /// A plain connection of the test's own (not the store's), for admin commands.
    pub async fn admin(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.url())
            .expect("the server's URL")
            .get_multiplexed_async_connection()
            .await
            .expect("an admin connection to the test's own server")
    }

    /// Sends `signal` (`STOP`, `CONT`, `KILL`, `TERM`) to the server process.
    pub fn signal(&self, signal: &str) {
        let status = std::process::Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.pid().to_string())
            .status()
            .expect("running kill");
        assert!(status.success(), "kill -{signal} failed");
    }

    /// Stops the server with `signal` (`TERM`: a clean shutdown that flushes the AOF; `KILL`:
    /// a crash) and waits until the process is gone.
    pub async fn stop(&mut self, signal: &str) {
        self.signal(signal);
        let mut child = self.child.take().expect("the server runs");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match child.try_wait() {
                Ok(Some(_)) => return,
                Ok(None) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("redis-server did not stop on SIG{signal}");
                }
            }
        }
    }

    /// Starts the server again on the same port and folder, with the same settings.
    pub async fn restart(&mut self) {
        assert!(self.child.is_none(), "stop the server first");
        for _ in 0..20 {
            if self.spawn().await {
                return;
            }
            // The old socket may linger for a moment.
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("redis-server did not restart: {}", self.log());
    }

    /// Starts the process and waits until it answers PING (and has loaded its data); false if
    /// it exited (a taken port) or did not answer within 10 s.
    async fn spawn(&mut self) -> bool {
        let log = self.dir.join("redis.log");
        let mut command = std::process::Command::new("redis-server");
        command
            .arg("--port")
            .arg(self.port.to_string())
            .args(["--bind", "127.0.0.1", "--daemonize", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .arg("--logfile")
            .arg(&log)
            .args(&self.args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(error) => panic!(
                "cannot run redis-server ({error}): the fault tests start servers of their own; \
                 install the Debian package redis-server"
            ),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return false;
            }
            if ping(self.port).await {
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

/// Whether a server on `port` answers `PING` with `PONG` (not `LOADING`).
async fn ping(port: u16) -> bool {
    let attempt = async {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).await.ok()?;
        stream.write_all(b"PING\r\n").await.ok()?;
        let mut reply = [0u8; 7];
        stream.read_exact(&mut reply).await.ok()?;
        Some(&reply == b"+PONG\r\n")
    };
    matches!(
        tokio::time::timeout(Duration::from_secs(1), attempt).await,
        Ok(Some(true))
    )
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SIGKILL ends a stopped (SIGSTOP) process too.
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A port of 127.0.0.1 that was free a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("finding a free port")
        .port()
}

/// The connections the store runs on in these tests.
pub trait Conn: ConnectionLike + Clone + Send + Sync + 'static {}
impl<C: ConnectionLike + Clone + Send + Sync + 'static> Conn for C {}

/// Raw `HGET` of the stored value, to see exactly what the scripts wrote.
pub async fn raw_value<C: Conn>(
    store: &RedisCheckpointStore<C>,
    group: &str,
    field: &str,
) -> Option<String> {
    let mut connection = store.connection().clone();
    redis::cmd("HGET")
        .arg(store.group_key(group).expect("a valid group"))
        .arg(field)
        .query_async(&mut connection)
        .await
        .expect("HGET")
}

/// Expands to one `#[tokio::test]` per check on the single server (`single::<check>`) and one
/// on the cluster (`cluster::<check>`), each with a fresh store. A check is an
/// `async fn(&RedisCheckpointStore<C>)` of the invoking module.
#[macro_export]
macro_rules! on_single_and_cluster {
    ($($check:ident)*) => {
        mod single {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $check() {
                    super::$check(&$crate::support::single_store().await).await;
                }
            )*
        }
        mod cluster {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $check() {
                    super::$check(&$crate::support::cluster_store().await).await;
                }
            )*
        }
    };
}
