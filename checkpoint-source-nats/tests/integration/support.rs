//! The server, a stream per test, and the lock that keeps tests out of a server restart.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_nats::jetstream;
use checkpoint_source_nats::{NatsSource, NatsSourceConfig};
use tokio::sync::{RwLock, RwLockReadGuard};

/// The server's URL when `NATS_URL` is unset.
pub const DEFAULT_URL: &str = "nats://127.0.0.1:4222";

/// How the machine starts its server (file storage, so stored messages survive a restart).
pub const START_SERVER: &[&str] = &[
    "start-stop-daemon",
    "--start",
    "--oknodo",
    "--background",
    "--exec",
    "/usr/sbin/nats-server",
    "--",
    "-a",
    "127.0.0.1",
    "-p",
    "4222",
    "-js",
    "-sd",
    "/var/lib/nats-server",
    "-l",
    "/var/log/nats-server.log",
];

/// Taken shared by every test, exclusively by the restart test.
pub static SERVER: RwLock<()> = RwLock::const_new(());

pub fn url() -> String {
    std::env::var("NATS_URL").unwrap_or_else(|_| DEFAULT_URL.to_owned())
}

/// A JetStream context on the test server; panics (fails the test) when it cannot connect.
pub async fn context() -> jetstream::Context {
    let url = url();
    let client = async_nats::ConnectOptions::new()
        .connection_timeout(Duration::from_secs(5))
        .connect(&url)
        .await
        .unwrap_or_else(|e| panic!("cannot connect to NATS at {url} (set NATS_URL): {e}"));
    jetstream::new(client)
}

/// A stream name no other test or run uses.
pub fn unique_stream(label: &str) -> String {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "T_{label}_{}_{}_{nanos}",
        std::process::id(),
        COUNT.fetch_add(1, Ordering::Relaxed)
    )
}

/// A test's own stream: [`TestStream::delete`] deletes it and checks the answer; a test that
/// fails before leaves the deletion to the drop.
pub struct TestStream {
    pub context: jetstream::Context,
    pub config: NatsSourceConfig,
    deleted: bool,
    _shared: Option<RwLockReadGuard<'static, ()>>,
}

impl TestStream {
    /// A new stream of `partitions` partitions made by `create_stream`, the server lock held.
    pub async fn new(label: &str, partitions: u32) -> Self {
        let guard = SERVER.read().await;
        let mut stream = Self::unlocked(label, partitions).await;
        stream._shared = Some(guard);
        stream
    }

    /// The same without the lock (for the restart test, which holds it exclusively).
    pub async fn unlocked(label: &str, partitions: u32) -> Self {
        let context = context().await;
        let name = unique_stream(label);
        let config = NatsSourceConfig::new(name.clone(), partitions)
            .unwrap()
            .with_subject_prefix(name.to_lowercase())
            .unwrap();
        NatsSource::create_stream(&context, &config).await.unwrap();
        Self {
            context,
            config,
            deleted: false,
            _shared: None,
        }
    }

    pub async fn source(&self) -> NatsSource {
        NatsSource::new_with_config(self.context.clone(), self.config.clone())
            .await
            .unwrap()
    }

    pub async fn delete(mut self) {
        self.deleted = true;
        self.context
            .delete_stream(self.config.stream())
            .await
            .unwrap();
    }
}

/// The test's seed: `CHECKPOINT_NATS_SEED`, or a random one; printed so that a failure
/// replays with it.
pub fn seed() -> u64 {
    std::env::var("CHECKPOINT_NATS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..))
}

impl Drop for TestStream {
    fn drop(&mut self) {
        if self.deleted {
            return;
        }
        // The test's runtime may be ending (or panicking): delete over a connection and a
        // runtime of their own, on a thread, ignoring failures (the server may be down).
        let stream = self.config.stream().to_owned();
        let deleting = std::thread::spawn(move || {
            if let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                runtime.block_on(async {
                    if let Ok(client) = async_nats::connect(url()).await {
                        let _ = jetstream::new(client).delete_stream(&stream).await;
                    }
                });
            }
        });
        let _ = deleting.join();
    }
}
