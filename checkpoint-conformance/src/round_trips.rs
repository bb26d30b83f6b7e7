//! Counting round trips on the wire, so a test can assert them instead of assuming them.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream, ToSocketAddrs};
use tokio::task::JoinSet;

/// A TCP proxy on loopback that counts request→response exchanges between its clients and one
/// upstream server.
///
/// One exchange is counted each time the server starts answering after the client has sent
/// something since the server last spoke. A request or response split over several TCP
/// segments counts once; requests a client pipelines before the first answer count once
/// together (one round trip); data the server sends unprompted counts nothing. Point a client
/// at [`local_addr`](Self::local_addr), run one operation at a time, and read
/// [`round_trips`](Self::round_trips).
///
/// ```no_run
/// # async fn example() -> std::io::Result<()> {
/// use checkpoint_conformance::round_trips::CountingProxy;
///
/// let proxy = CountingProxy::start("127.0.0.1:6379").await?;
/// // connect the client under test to proxy.local_addr(), warm it up, then:
/// proxy.reset();
/// // ... one store operation ...
/// assert_eq!(proxy.round_trips(), 1);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct CountingProxy {
    local_addr: SocketAddr,
    round_trips: Arc<AtomicU64>,
    connections: Arc<AtomicU64>,
    accept: tokio::task::JoinHandle<()>,
}

impl CountingProxy {
    /// Starts a proxy on `127.0.0.1` (a free port) in front of `upstream`.
    pub async fn start(upstream: impl ToSocketAddrs) -> io::Result<Self> {
        let upstream = tokio::net::lookup_host(upstream)
            .await?
            .next()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "upstream has no address"))?;
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let local_addr = listener.local_addr()?;
        let round_trips = Arc::new(AtomicU64::new(0));
        let connections = Arc::new(AtomicU64::new(0));
        let accept = tokio::spawn(accept_loop(
            listener,
            upstream,
            Arc::clone(&round_trips),
            Arc::clone(&connections),
        ));
        Ok(Self {
            local_addr,
            round_trips,
            connections,
            accept,
        })
    }

    /// The loopback address clients connect to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Exchanges counted since the start or the last [`reset`](Self::reset).
    pub fn round_trips(&self) -> u64 {
        self.round_trips.load(Ordering::SeqCst)
    }

    /// Connections accepted since the start.
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::SeqCst)
    }

    /// Sets the count back to zero.
    pub fn reset(&self) {
        self.round_trips.store(0, Ordering::SeqCst);
    }
}

impl Drop for CountingProxy {
    fn drop(&mut self) {
        // Aborting the accept loop drops its JoinSet, which aborts every connection it pumps.
        self.accept.abort();
    }
}

async fn accept_loop(
    listener: TcpListener,
    upstream: SocketAddr,
    round_trips: Arc<AtomicU64>,
    connections: Arc<AtomicU64>,
) {
    let mut pumps = JoinSet::new();
    while let Ok((client, _)) = listener.accept().await {
        connections.fetch_add(1, Ordering::SeqCst);
        let Ok(server) = TcpStream::connect(upstream).await else {
            continue; // the client sees its connection close, as with an unreachable server
        };
        let _ = client.set_nodelay(true);
        let _ = server.set_nodelay(true);
        let (client_read, client_write) = client.into_split();
        let (server_read, server_write) = server.into_split();
        // Set when the client has spoken since the server last answered.
        let request_pending = Arc::new(AtomicBool::new(false));
        let pending = Arc::clone(&request_pending);
        pumps.spawn(pump(client_read, server_write, move || {
            pending.store(true, Ordering::SeqCst);
        }));
        let counter = Arc::clone(&round_trips);
        pumps.spawn(pump(server_read, client_write, move || {
            if request_pending.swap(false, Ordering::SeqCst) {
                counter.fetch_add(1, Ordering::SeqCst);
            }
        }));
        // Reap pumps that have finished so a long-lived proxy does not grow.
        while pumps.try_join_next().is_some() {}
    }
}

/// Copies bytes from `from` to `to`, calling `on_data` before forwarding each chunk (so the
/// request flag is set before the server can possibly answer it).
async fn pump(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, on_data: impl Fn()) {
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                on_data();
                if to.write_all(&buffer[..n]).await.is_err() {
                    break;
                }
            }
        }
    }
    let _ = to.shutdown().await;
}
