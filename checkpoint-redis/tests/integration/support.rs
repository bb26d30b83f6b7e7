//! Where the servers come from, and a proxy that can stop answering.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use checkpoint_redis::{RedisCheckpointStore, RedisClusterCheckpointStore};
use redis::IntoConnectionInfo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The single server's URL: `REDIS_URL`, or else a Redis started with testcontainers.
pub async fn single_url() -> String {
    if let Ok(url) = std::env::var("REDIS_URL") {
        return url;
    }
    static CONTAINER_URL: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();
    CONTAINER_URL
        .get_or_init(|| async {
            use testcontainers::runners::AsyncRunner;
            let container = testcontainers_modules::redis::Redis::default()
                .start()
                .await
                .unwrap_or_else(|error| {
                    panic!(
                        "no Redis server for the tests: set REDIS_URL (for example \
                         REDIS_URL=redis://127.0.0.1:6379), or make a Docker engine available \
                         for testcontainers (starting a container failed: {error})"
                    )
                });
            let host = container.get_host().await.expect("the container's host");
            let port = container
                .get_host_port_ipv4(6379)
                .await
                .expect("the container's Redis port");
            // Each test runs in a runtime of its own; the container must outlive all of them,
            // so it is never dropped (it stays until the Docker engine removes it).
            std::mem::forget(container);
            format!("redis://{host}:{port}")
        })
        .await
        .clone()
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
        .unwrap_or_else(|error| panic!("cannot connect to REDIS_URL: {error:?}"))
}

/// The cluster's node URLs from `REDIS_CLUSTER_URLS`.
pub fn cluster_urls() -> Vec<String> {
    let urls = std::env::var("REDIS_CLUSTER_URLS").unwrap_or_default();
    let urls: Vec<String> = urls
        .split(',')
        .map(str::trim)
        .filter(|url| !url.is_empty())
        .map(str::to_owned)
        .collect();
    assert!(
        !urls.is_empty(),
        "no Redis Cluster for the tests: set REDIS_CLUSTER_URLS to comma-separated node URLs; \
         `eval \"$(bash scripts/services/redis-cluster.sh up)\"` starts a local cluster and \
         prints the line to set it"
    );
    urls
}

/// A store on the cluster.
pub async fn cluster_store() -> RedisClusterCheckpointStore {
    RedisClusterCheckpointStore::connect_cluster(cluster_urls())
        .await
        .unwrap_or_else(|error| panic!("cannot connect to REDIS_CLUSTER_URLS: {error:?}"))
}

/// A loopback TCP proxy whose answers can be held back: while frozen, nothing flows from the
/// server to the client, as with a server that hangs.
pub struct FreezingProxy {
    pub addr: SocketAddr,
    frozen: Arc<AtomicBool>,
}

impl FreezingProxy {
    pub async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("binding a proxy");
        let addr = listener.local_addr().expect("the proxy's address");
        let frozen = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&frozen);
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(upstream).await else {
                    continue;
                };
                let (mut client_read, mut client_write) = client.into_split();
                let (mut server_read, mut server_write) = server.into_split();
                tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
                });
                let flag = Arc::clone(&flag);
                tokio::spawn(async move {
                    let mut buffer = vec![0u8; 64 * 1024];
                    while let Ok(n) = server_read.read(&mut buffer).await {
                        if n == 0 {
                            break;
                        }
                        while flag.load(Ordering::SeqCst) {
                            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                        }
                        if client_write.write_all(&buffer[..n]).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        Self { addr, frozen }
    }

    pub fn freeze(&self, frozen: bool) {
        self.frozen.store(frozen, Ordering::SeqCst);
    }
}
