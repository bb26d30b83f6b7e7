//! A loopback TCP proxy that can turn into a black hole: the peer vanished without closing
//! anything, as behind a cut network path or in front of a frozen or replaced host.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream, ToSocketAddrs};
use tokio::sync::watch;
use tokio::task::JoinSet;

/// A TCP proxy on loopback in front of one upstream server that can be switched into a black
/// hole and back.
///
/// - **Forwarding** (at the start, and after [`forward`](Self::forward)): every connection is
///   relayed to the upstream server in both directions.
/// - **Black hole** ([`black_hole`](Self::black_hole)): every open connection stops relaying
///   in both directions, and nothing is closed on either side: no FIN, no RST, no error. The
///   client's connection stays established and never hears from the server again, as when the
///   peer vanished without closing (a cut network path, a frozen host, a NAT that forgot the
///   connection). New connections are accepted and get nothing; they never reach the server.
///
/// A connection caught in a black hole stays silent **for good**, also after
/// [`forward`](Self::forward): a half-open connection never answers again. Only connections
/// made after `forward` are relayed, so a client recovers only if it gives up the connections
/// that stopped answering and opens new ones. Every held connection is closed when the proxy
/// is dropped.
///
/// The client's bytes sent into the black hole are left unread, so a client that keeps
/// writing eventually fills the socket buffers and blocks, as it would towards a dead peer.
///
/// ```no_run
/// # async fn example() -> std::io::Result<()> {
/// use checkpoint_conformance::harness::BlackHoleProxy;
///
/// let proxy = BlackHoleProxy::start("127.0.0.1:6379").await?;
/// // connect the client under test to proxy.local_addr(), then:
/// proxy.black_hole();
/// // ... calls time out ...
/// proxy.forward();
/// // ... calls work again once the client made new connections ...
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct BlackHoleProxy {
    local_addr: SocketAddr,
    state: watch::Sender<State>,
    shared: Arc<Shared>,
    accept: tokio::task::JoinHandle<()>,
}

/// What the connections watch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct State {
    /// Black holes begun since the start: a connection relays only while this is the count
    /// it started under.
    holes: u64,
    /// Whether the proxy is in a black hole now.
    black_hole: bool,
}

/// What the proxy shares with its tasks.
#[derive(Debug, Default)]
struct Shared {
    /// Connections accepted since the start.
    accepted: AtomicU64,
    /// Connections relayed to the server since the start.
    relayed: AtomicU64,
    /// The sockets of every connection caught in a black hole, kept open until the proxy is
    /// dropped (dropping one would close it).
    held: Mutex<Held>,
}

#[derive(Debug, Default)]
struct Held {
    connections: u64,
    streams: Vec<TcpStream>,
    reads: Vec<OwnedReadHalf>,
    writes: Vec<OwnedWriteHalf>,
}

impl Shared {
    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl BlackHoleProxy {
    /// Starts a forwarding proxy on `127.0.0.1` (a free port) in front of `upstream`.
    pub async fn start(upstream: impl ToSocketAddrs) -> io::Result<Self> {
        let upstream = tokio::net::lookup_host(upstream)
            .await?
            .next()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "upstream has no address"))?;
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let local_addr = listener.local_addr()?;
        let (state, watching) = watch::channel(State {
            holes: 0,
            black_hole: false,
        });
        let shared = Arc::new(Shared::default());
        let accept = tokio::spawn(accept_loop(
            listener,
            upstream,
            watching,
            Arc::clone(&shared),
        ));
        Ok(Self {
            local_addr,
            state,
            shared,
            accept,
        })
    }

    /// The loopback address clients connect to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Turns into a black hole: every open connection stops relaying for good, without being
    /// closed, and new connections are accepted and get nothing. Does nothing when already in
    /// one.
    pub fn black_hole(&self) {
        self.state.send_if_modified(|state| {
            if state.black_hole {
                return false;
            }
            state.black_hole = true;
            state.holes += 1;
            true
        });
    }

    /// Forwards connections made from now on. The connections caught in the black hole stay
    /// silent (see the type's documentation).
    pub fn forward(&self) {
        self.state.send_if_modified(|state| {
            let changed = state.black_hole;
            state.black_hole = false;
            changed
        });
    }

    /// Whether the proxy is in a black hole now.
    pub fn is_black_hole(&self) -> bool {
        self.state.borrow().black_hole
    }

    /// Connections accepted since the start.
    pub fn connections(&self) -> u64 {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// Connections relayed to the upstream server since the start (those accepted in a black
    /// hole never are).
    pub fn relayed(&self) -> u64 {
        self.shared.relayed.load(Ordering::SeqCst)
    }

    /// Connections the black holes hold silent, open, now.
    pub fn held(&self) -> u64 {
        self.shared.held().connections
    }
}

impl Drop for BlackHoleProxy {
    fn drop(&mut self) {
        // Aborting the accept loop drops its JoinSet, which aborts every connection's task;
        // the held sockets close when the last task lets go of `shared`.
        self.accept.abort();
        let mut held = self.shared.held();
        held.streams.clear();
        held.reads.clear();
        held.writes.clear();
    }
}

async fn accept_loop(
    listener: TcpListener,
    upstream: SocketAddr,
    state: watch::Receiver<State>,
    shared: Arc<Shared>,
) {
    let mut connections = JoinSet::new();
    while let Ok((client, _)) = listener.accept().await {
        shared.accepted.fetch_add(1, Ordering::SeqCst);
        // The state the connection starts under, marked seen in its own receiver.
        let mut watching = state.clone();
        let started = *watching.borrow_and_update();
        let shared = Arc::clone(&shared);
        connections.spawn(async move {
            if started.black_hole {
                hold_stream(&shared, client);
                return;
            }
            let Ok(server) = TcpStream::connect(upstream).await else {
                return; // the client sees its connection close, as with an unreachable server
            };
            if watching.borrow().holes != started.holes {
                hold_stream(&shared, client);
                hold_stream(&shared, server);
                return;
            }
            shared.relayed.fetch_add(1, Ordering::SeqCst);
            relay(client, server, watching, started.holes, &shared).await;
        });
        // Reap connections that have ended so a long-lived proxy does not grow.
        while connections.try_join_next().is_some() {}
    }
}

fn hold_stream(shared: &Shared, stream: TcpStream) {
    let mut held = shared.held();
    held.connections += 1;
    held.streams.push(stream);
}

/// Relays both directions until either side ends (then the other is shut down, as a plain
/// proxy does) or a black hole begins (then all four halves are held open and silent).
async fn relay(
    client: TcpStream,
    server: TcpStream,
    mut watching: watch::Receiver<State>,
    holes: u64,
    shared: &Shared,
) {
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let black_hole = watching.wait_for(|state| state.holes != holes);
    let pumps = async {
        tokio::join!(
            pump(&mut client_read, &mut server_write),
            pump(&mut server_read, &mut client_write),
        )
    };
    tokio::select! {
        biased;
        begun = black_hole => {
            // An error means the proxy is gone: everything closes anyway.
            if begun.is_ok() {
                let mut held = shared.held();
                held.connections += 1;
                held.reads.extend([client_read, server_read]);
                held.writes.extend([client_write, server_write]);
            }
        }
        _ = pumps => {}
    }
}

/// Copies bytes from `from` to `to` until `from` ends, then shuts `to` down.
async fn pump(from: &mut OwnedReadHalf, to: &mut OwnedWriteHalf) {
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buffer[..n]).await.is_err() {
                    break;
                }
            }
        }
    }
    let _ = to.shutdown().await;
}
