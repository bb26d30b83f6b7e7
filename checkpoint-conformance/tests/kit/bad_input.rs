//! The bad-input driver passes a store that validates before any I/O, and catches one that
//! sends first or whose own entry point skips validation.
//!
//! The stores here are the reference in-memory store behind a wire of the test's own: every
//! call the store lets through sends one byte through a counting proxy to an echo server and
//! waits for it back, so the proxy sees a round trip exactly when a request would leave.

use async_trait::async_trait;
use checkpoint_conformance::harness::bad_input::{
    BadAdminInput, BadInput, Call, MoreEntryPoints, Reply,
};
use checkpoint_conformance::round_trips::CountingProxy;
use checkpoint_core::door::BoxFuture;
use checkpoint_core::layer::{Around, Layered};
use checkpoint_core::{Error, InMemoryCheckpointStore};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Mutex;

/// An echo server on loopback, and a proxy that counts the exchanges with it.
async fn wire() -> (CountingProxy, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("binding");
    let upstream = listener.local_addr().expect("an address");
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut byte = [0u8; 1];
                while socket.read_exact(&mut byte).await.is_ok() {
                    if socket.write_all(&byte).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    let proxy = CountingProxy::start(upstream).await.expect("a proxy");
    let stream = TcpStream::connect(proxy.local_addr())
        .await
        .expect("connecting through the proxy");
    stream.set_nodelay(true).expect("nodelay");
    (proxy, stream)
}

/// The in-memory store, with one round trip per call it lets through.
type WiredStore = Layered<InMemoryCheckpointStore, Wire>;

/// The layer of a [`WiredStore`]: a round trip on the wire around each call.
struct Wire {
    wire: Mutex<TcpStream>,
    /// Sends before validating, as a broken store would.
    sends_first: bool,
}

async fn wired_store(sends_first: bool) -> (WiredStore, CountingProxy) {
    let (proxy, stream) = wire().await;
    let wire = Wire {
        wire: Mutex::new(stream),
        sends_first,
    };
    (Layered::new(InMemoryCheckpointStore::new(), wire), proxy)
}

impl Wire {
    async fn exchange(&self) {
        let mut wire = self.wire.lock().await;
        let mut byte = [7u8];
        wire.write_all(&byte).await.expect("sending");
        wire.read_exact(&mut byte).await.expect("the echo");
    }
}

/// Runs each call on the inner store, with a round trip unless it was refused as invalid (or
/// always, for a store that sends first).
impl Around for Wire {
    fn around<'a, T: Send + 'static>(
        &'a self,
        _call: checkpoint_core::layer::Call<'a>,
        request: BoxFuture<'a, T>,
    ) -> BoxFuture<'a, T> {
        Box::pin(async move {
            if self.sends_first {
                self.exchange().await;
            }
            let result = request.await;
            if !self.sends_first && !matches!(result, Err(Error::InvalidInput(_))) {
                self.exchange().await;
            }
            result
        })
    }
}

/// The store's own entry points, as a backend's `*_in` family would be: the trait's calls
/// again, and an advance built without being sent.
struct Again<'a> {
    store: &'a WiredStore,
    /// A `save_in` that accepts anything, as a broken one would.
    save_skips_validation: bool,
}

#[async_trait(?Send)]
impl MoreEntryPoints for Again<'_> {
    async fn send(&mut self, call: Call<'_>) -> Option<(&'static str, Result<Reply, Error>)> {
        if self.save_skips_validation
            && let Call::Save { .. } = call
        {
            return Some(("save_in", Ok(Reply::Done)));
        }
        Some(("again", call.on(self.store).await))
    }

    fn build(&mut self, call: Call<'_>) -> Vec<(&'static str, Result<(), Error>)> {
        match call {
            Call::Advance {
                group,
                subscription,
                from,
                to,
                ..
            } => vec![(
                "advance_built",
                checkpoint_core::validation::validate_advance(group, subscription, from, to),
            )],
            _ => Vec::new(),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_validates_first_passes_with_valid_and_invalid_inputs() {
    let (store, proxy) = wired_store(false).await;
    let report = BadInput::new(&store, &proxy)
        .cases_between(64, 64)
        .run(&mut ())
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    assert!(report.refused > 0 && report.performed > 0, "{report}");

    let mut again = Again {
        store: &store,
        save_skips_validation: false,
    };
    let with_more = BadInput::new(&store, &proxy)
        .cases_between(64, 64)
        .run(&mut again)
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    assert!(
        with_more.refused > report.refused,
        "{with_more} after {report}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_only_makes_no_valid_call() {
    let (store, proxy) = wired_store(false).await;
    let report = BadInput::new(&store, &proxy)
        .cases_between(64, 64)
        .refusals_only()
        .run(&mut ())
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    assert_eq!(report.performed, 0, "{report}");
    assert!(report.refused >= 64, "{report}");
    assert_eq!(proxy.round_trips(), 0, "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_sends_before_validating_is_caught() {
    let (store, proxy) = wired_store(true).await;
    let failure = BadInput::new(&store, &proxy)
        .cases_between(64, 64)
        .run(&mut ())
        .await
        .expect_err("a request for invalid input");
    assert!(
        failure
            .message()
            .contains("sent a request for invalid input"),
        "{failure}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_own_entry_point_that_skips_validation_is_caught() {
    let (store, proxy) = wired_store(false).await;
    let mut again = Again {
        store: &store,
        save_skips_validation: true,
    };
    let failure = BadInput::new(&store, &proxy)
        .cases_between(64, 64)
        .run(&mut again)
        .await
        .expect_err("an invalid save accepted");
    // Caught either way, whichever the seed draws first: an invalid save it accepted, or a
    // valid one it answered without a request (it never reached a store at all).
    let message = failure.message();
    assert!(
        message.contains("save_in should be refused")
            || message.contains("save_in of valid input made no request"),
        "{failure}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_wire_the_same_checks_run_uncounted() {
    let store = InMemoryCheckpointStore::new();
    let report = BadInput::uncounted(&store)
        .cases_between(64, 64)
        .run(&mut ())
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    assert!(report.refused > 0 && report.performed > 0, "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operations_api_validates_first() {
    let (store, proxy) = wired_store(false).await;
    let report = BadAdminInput::new(&store, &proxy)
        .cases_between(64, 64)
        .run()
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    assert!(report.refused > 0 && report.performed > 0, "{report}");
    let uncounted = InMemoryCheckpointStore::new();
    BadAdminInput::uncounted(&uncounted)
        .cases_between(64, 64)
        .run()
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operations_api_that_sends_before_validating_is_caught() {
    let (store, proxy) = wired_store(true).await;
    let failure = BadAdminInput::new(&store, &proxy)
        .cases_between(64, 64)
        .run()
        .await
        .expect_err("a request for invalid input");
    assert!(
        failure
            .message()
            .contains("sent a request for invalid input"),
        "{failure}"
    );
}

#[tokio::test]
async fn every_invalid_lease_call_is_refused_by_the_reference_store() {
    let store = checkpoint_core::InMemoryCheckpointStore::new();
    let refused = checkpoint_conformance::harness::bad_input::bad_lease_input(&store, None)
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    assert_eq!(refused, 20);
}
