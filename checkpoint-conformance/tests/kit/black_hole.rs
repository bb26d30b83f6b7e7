//! The black-hole proxy relays, then holds every connection open and silent for good, accepts
//! new ones without relaying them, and relays the connections made after it forwards again.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use checkpoint_conformance::harness::BlackHoleProxy;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// How long a read waits before it counts as "nothing came".
const SILENCE: Duration = Duration::from_millis(300);

/// A line server that answers every line with `ok\n`, and counts its connections.
async fn line_server() -> (std::net::SocketAddr, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let accepted = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&accepted);
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let (read, mut write) = socket.into_split();
                let mut lines = BufReader::new(read).lines();
                while let Ok(Some(_)) = lines.next_line().await {
                    if write.write_all(b"ok\n").await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    (addr, accepted)
}

/// What a request on `client` gets within [`SILENCE`].
#[derive(Debug, PartialEq, Eq)]
enum Heard {
    Answer,
    Closed,
    Nothing,
}

async fn ask(client: &mut TcpStream) -> Heard {
    client.write_all(b"ping\n").await.expect("write");
    let mut received = Vec::new();
    let mut buffer = [0u8; 16];
    let read = async {
        loop {
            match client.read(&mut buffer).await {
                Ok(0) | Err(_) => return Heard::Closed,
                Ok(n) => {
                    received.extend_from_slice(&buffer[..n]);
                    if received.ends_with(b"\n") {
                        return Heard::Answer;
                    }
                }
            }
        }
    };
    tokio::time::timeout(SILENCE, read)
        .await
        .unwrap_or(Heard::Nothing)
}

#[tokio::test]
async fn black_hole_holds_connections_silent_for_good_and_forwards_new_ones_after() {
    let (server, accepted) = line_server().await;
    let proxy = BlackHoleProxy::start(server).await.expect("proxy");
    let mut before = TcpStream::connect(proxy.local_addr())
        .await
        .expect("connect");
    assert_eq!(ask(&mut before).await, Heard::Answer);
    assert!(!proxy.is_black_hole());

    proxy.black_hole();
    assert!(proxy.is_black_hole());
    // An open connection hears nothing, and is not closed.
    assert_eq!(ask(&mut before).await, Heard::Nothing);
    // A new one is accepted (connect succeeds) but never reaches the server.
    let mut during = TcpStream::connect(proxy.local_addr())
        .await
        .expect("a connection is accepted in a black hole");
    assert_eq!(ask(&mut during).await, Heard::Nothing);
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
    assert_eq!(proxy.held(), 2);

    proxy.forward();
    assert!(!proxy.is_black_hole());
    // The connections of the black hole stay silent for good: they are half-open.
    assert_eq!(ask(&mut before).await, Heard::Nothing);
    assert_eq!(ask(&mut during).await, Heard::Nothing);
    // A new connection is relayed again.
    let mut after = TcpStream::connect(proxy.local_addr())
        .await
        .expect("connect");
    assert_eq!(ask(&mut after).await, Heard::Answer);
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
    assert_eq!(
        (proxy.connections(), proxy.relayed(), proxy.held()),
        (3, 2, 2)
    );

    // A second black hole catches the connection made after the first one.
    proxy.black_hole();
    assert_eq!(ask(&mut after).await, Heard::Nothing);
    assert_eq!(proxy.held(), 3);

    // Dropping the proxy closes everything it held.
    drop(proxy);
    for client in [&mut before, &mut during, &mut after] {
        let mut buffer = [0u8; 16];
        let read = tokio::time::timeout(Duration::from_secs(5), client.read(&mut buffer)).await;
        assert!(
            matches!(read, Ok(Ok(0) | Err(_))),
            "a held connection closes with the proxy: {read:?}"
        );
    }
}
