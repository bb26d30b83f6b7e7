//! One connection of the proxy: relayed both ways, counted, delayed or frozen, until either
//! side ends, a cut closes it or a black hole holds it open and silent.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;

/// How much a relay reads at once.
const CHUNK: usize = 64 * 1024;

/// How often a frozen relay looks whether it has thawed.
const THAW_POLL: Duration = Duration::from_millis(5);

/// What every connection watches: the faults switched on so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct State {
    /// Black holes begun since the start: a connection relays only while this is the count
    /// it started under.
    pub holes: u64,
    /// Whether the proxy is in a black hole now.
    pub black_hole: bool,
    /// Cuts since the start: a connection closes when this changes.
    pub cuts: u64,
}

/// What the proxy shares with its connections.
#[derive(Debug, Default)]
pub(super) struct Shared {
    pub round_trips: AtomicU64,
    pub accepted: AtomicU64,
    pub relayed: AtomicU64,
    pub cut: AtomicU64,
    pub frozen: AtomicBool,
    pub delay_micros: AtomicU64,
    /// The sockets of every connection caught in a black hole, kept open until the proxy is
    /// dropped (dropping one would close it).
    held: Mutex<Held>,
}

/// Connections a black hole holds open.
#[derive(Debug, Default)]
pub(super) struct Held {
    pub connections: u64,
    streams: Vec<TcpStream>,
    reads: Vec<OwnedReadHalf>,
    writes: Vec<OwnedWriteHalf>,
}

impl Held {
    /// Closes every held socket.
    pub fn clear(&mut self) {
        self.streams.clear();
        self.reads.clear();
        self.writes.clear();
    }
}

impl Shared {
    pub fn held(&self) -> MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn hold_stream(&self, stream: TcpStream) {
        let mut held = self.held();
        held.connections += 1;
        held.streams.push(stream);
    }

    fn delay(&self) -> Duration {
        Duration::from_micros(self.delay_micros.load(Ordering::SeqCst))
    }
}

pub(super) async fn accept_loop(
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
                shared.hold_stream(client);
                return;
            }
            let Ok(server) = TcpStream::connect(upstream).await else {
                return; // the client sees its connection close, as with an unreachable server
            };
            if watching.borrow().holes != started.holes {
                shared.hold_stream(client);
                shared.hold_stream(server);
                return;
            }
            shared.relayed.fetch_add(1, Ordering::SeqCst);
            relay(client, server, watching, started, &shared).await;
        });
        // Reap connections that have ended so a long-lived proxy does not grow.
        while connections.try_join_next().is_some() {}
    }
}

/// What ended a relay early.
enum Interrupted {
    BlackHole,
    Cut,
}

/// Relays both directions until either side ends (then the other is shut down, as a plain
/// proxy does), a cut closes both sides, or a black hole begins (then all four halves are
/// held open and silent).
async fn relay(
    client: TcpStream,
    server: TcpStream,
    mut watching: watch::Receiver<State>,
    started: State,
    shared: &Shared,
) {
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    // Set when the client has spoken since the server last answered.
    let request_pending = AtomicBool::new(false);
    let interrupted =
        watching.wait_for(|state| state.holes != started.holes || state.cuts != started.cuts);
    let pumps = async {
        tokio::join!(
            requests(&mut client_read, &mut server_write, &request_pending),
            answers(
                &mut server_read,
                &mut client_write,
                &request_pending,
                shared
            ),
        )
    };
    let why = tokio::select! {
        biased;
        now = interrupted => match now {
            Ok(state) if state.holes != started.holes => Some(Interrupted::BlackHole),
            // A cut, or the proxy is gone: either way the sockets close.
            _ => Some(Interrupted::Cut),
        },
        _ = pumps => None,
    };
    match why {
        Some(Interrupted::BlackHole) => {
            let mut held = shared.held();
            held.connections += 1;
            held.reads.extend([client_read, server_read]);
            held.writes.extend([client_write, server_write]);
        }
        Some(Interrupted::Cut) => {
            shared.cut.fetch_add(1, Ordering::SeqCst);
        }
        None => {}
    }
}

/// The client's bytes to the server, marking a request pending before each chunk goes on (so
/// the mark is set before the server can possibly answer it); shuts the server's side down
/// when the client ends.
async fn requests(from: &mut OwnedReadHalf, to: &mut OwnedWriteHalf, pending: &AtomicBool) {
    let mut buffer = vec![0u8; CHUNK];
    while let Ok(n @ 1..) = from.read(&mut buffer).await {
        pending.store(true, Ordering::SeqCst);
        if to.write_all(&buffer[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}

/// The server's bytes to the client: a round trip counted when the server starts answering a
/// pending request, each chunk handed on after the delay set when it was read and once the
/// proxy is not frozen; shuts the client's side down when the server ends.
async fn answers(
    from: &mut OwnedReadHalf,
    to: &mut OwnedWriteHalf,
    pending: &AtomicBool,
    shared: &Shared,
) {
    let (chunks, mut due) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let read = async move {
        let mut buffer = vec![0u8; CHUNK];
        while let Ok(n @ 1..) = from.read(&mut buffer).await {
            if pending.swap(false, Ordering::SeqCst) {
                shared.round_trips.fetch_add(1, Ordering::SeqCst);
            }
            if chunks
                .send((Instant::now() + shared.delay(), buffer[..n].to_vec()))
                .is_err()
            {
                break;
            }
        }
    };
    let write = async {
        while let Some((at, bytes)) = due.recv().await {
            tokio::time::sleep_until(at).await;
            while shared.frozen.load(Ordering::SeqCst) {
                tokio::time::sleep(THAW_POLL).await;
            }
            if to.write_all(&bytes).await.is_err() {
                break;
            }
        }
        let _ = to.shutdown().await;
    };
    tokio::join!(read, write);
}
