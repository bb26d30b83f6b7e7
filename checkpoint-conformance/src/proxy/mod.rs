//! The kit's one TCP proxy: a loopback relay in front of one server that counts round trips and
//! injects the network's faults, for every test that needs to see or break the wire.
//!
//! [`CountingProxy`](crate::round_trips::CountingProxy) and `harness::BlackHoleProxy` are this
//! proxy under the name of what a test uses it for.

mod relay;

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::net::{TcpListener, ToSocketAddrs};
use tokio::sync::watch;

use relay::{Shared, State, accept_loop};

/// A TCP proxy on loopback in front of one upstream server.
///
/// - **Counting**: one round trip is counted each time the server starts answering after the
///   client has sent something since the server last spoke. A request or response split over
///   several TCP segments counts once; requests a client pipelines before the first answer
///   count once together; data the server sends unprompted counts nothing. Point a client at
///   [`local_addr`](Self::local_addr), run one operation at a time, and read
///   [`round_trips`](Self::round_trips).
/// - **Cutting** ([`cut_all`](Self::cut_all)): every open connection is closed on both sides,
///   as a server or a load balancer dropping its connections would; new ones are relayed.
/// - **Black hole** ([`black_hole`](Self::black_hole)): every open connection stops relaying
///   in both directions and nothing is closed on either side (no FIN, no RST, no error), as
///   when the peer vanished without closing (a cut network path, a frozen host, a NAT that
///   forgot the connection). New connections are accepted and get nothing. A connection caught
///   in a black hole stays silent **for good**, also after [`forward`](Self::forward): only
///   connections made after `forward` are relayed, so a client recovers only if it gives up
///   the connections that stopped answering. The client's bytes sent into the black hole are
///   left unread, so a client that keeps writing eventually blocks, as towards a dead peer.
/// - **Freezing** ([`freeze`](Self::freeze)): nothing flows from the server to the client
///   until it thaws, then everything held flows in order, as with a server that hangs.
/// - **Delay** ([`set_delay`](Self::set_delay)): every chunk the server sends is handed to the
///   client that much later, in order (chunks read while earlier ones wait are not delayed
///   again), as a network far away would.
///
/// Dropping the proxy closes every connection, held ones included.
///
/// ```no_run
/// # async fn example() -> std::io::Result<()> {
/// use checkpoint_conformance::proxy::Proxy;
///
/// let proxy = Proxy::start("127.0.0.1:6379").await?;
/// // connect the client under test to proxy.local_addr(), warm it up, then:
/// proxy.reset();
/// // ... one store operation ...
/// assert_eq!(proxy.round_trips(), 1);
/// proxy.black_hole();
/// // ... calls time out ...
/// proxy.forward();
/// // ... calls work again once the client made new connections ...
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Proxy {
    local_addr: SocketAddr,
    state: watch::Sender<State>,
    shared: Arc<Shared>,
    accept: tokio::task::JoinHandle<()>,
}

impl Proxy {
    /// Starts a relaying proxy on `127.0.0.1` (a free port) in front of `upstream`.
    pub async fn start(upstream: impl ToSocketAddrs) -> io::Result<Self> {
        let upstream = tokio::net::lookup_host(upstream)
            .await?
            .next()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "upstream has no address"))?;
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let local_addr = listener.local_addr()?;
        let (state, watching) = watch::channel(State::default());
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

    /// Round trips counted since the start or the last [`reset`](Self::reset).
    pub fn round_trips(&self) -> u64 {
        self.shared.round_trips.load(Ordering::SeqCst)
    }

    /// Sets the round-trip count back to zero.
    pub fn reset(&self) {
        self.shared.round_trips.store(0, Ordering::SeqCst);
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

    /// Closes every connection open now, on both sides.
    pub fn cut_all(&self) {
        self.state.send_modify(|state| state.cuts += 1);
    }

    /// Connections closed by [`cut_all`](Self::cut_all) so far.
    pub fn cut(&self) -> u64 {
        self.shared.cut.load(Ordering::SeqCst)
    }

    /// Turns into a black hole (see the type's documentation). Does nothing when already in
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

    /// Relays connections made from now on. The connections caught in the black hole stay
    /// silent.
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

    /// Connections the black holes hold silent, open, now.
    pub fn held(&self) -> u64 {
        self.shared.held().connections
    }

    /// Holds back (`true`) or lets flow again (`false`) everything the server sends.
    pub fn freeze(&self, frozen: bool) {
        self.shared.frozen.store(frozen, Ordering::SeqCst);
    }

    /// Delays every chunk the server sends from now on by `delay` (saturating at about 584
    /// million years).
    pub fn set_delay(&self, delay: Duration) {
        let micros = u64::try_from(delay.as_micros()).unwrap_or(u64::MAX);
        self.shared.delay_micros.store(micros, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        // Aborting the accept loop drops its JoinSet, which aborts every connection's task;
        // the held sockets close here.
        self.accept.abort();
        self.shared.held().clear();
    }
}
