//! The kit's proxy: it counts request–response exchanges, not packets, and cuts, freezes,
//! delays and black-holes as its doc says.

use std::time::Duration;

use checkpoint_conformance::proxy::Proxy;
use checkpoint_conformance::round_trips::CountingProxy;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// A line server: answers every line with `ok\n`, written in two pieces to split the response.
async fn line_server() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (read, mut write) = socket.into_split();
                let mut lines = BufReader::new(read).lines();
                while let Ok(Some(_)) = lines.next_line().await {
                    let _ = write.write_all(b"o").await;
                    let _ = write.flush().await;
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                    let _ = write.write_all(b"k\n").await;
                }
            });
        }
    });
    addr
}

async fn answer(client: &mut TcpStream, lines: usize) {
    let mut received = Vec::new();
    let mut buffer = [0u8; 64];
    while received.iter().filter(|b| **b == b'\n').count() < lines {
        let n = client.read(&mut buffer).await.expect("read");
        assert!(n > 0, "the proxy closed the connection");
        received.extend_from_slice(&buffer[..n]);
    }
}

#[tokio::test]
async fn counts_one_per_exchange_and_one_for_a_pipeline() {
    let proxy = CountingProxy::start(line_server().await)
        .await
        .expect("proxy");
    let mut client = TcpStream::connect(proxy.local_addr())
        .await
        .expect("connect");
    for _ in 0..3 {
        // A request split over two writes is still one request.
        client.write_all(b"pi").await.expect("write");
        client.flush().await.expect("flush");
        client.write_all(b"ng\n").await.expect("write");
        answer(&mut client, 1).await;
    }
    assert_eq!(proxy.round_trips(), 3);
    proxy.reset();
    client.write_all(b"a\nb\n").await.expect("write");
    answer(&mut client, 2).await;
    // Two pipelined requests: the second answer may come after the client stopped speaking,
    // so the count is one exchange, not two.
    assert_eq!(proxy.round_trips(), 1);
    assert_eq!(proxy.connections(), 1);
}

/// One `ping` and its whole answer through a connection of `proxy`, timed.
async fn ping(client: &mut TcpStream) -> std::time::Duration {
    let began = std::time::Instant::now();
    client.write_all(b"ping\n").await.expect("write");
    answer(client, 1).await;
    began.elapsed()
}

#[tokio::test]
async fn cut_closes_open_connections_and_relays_new_ones() {
    let proxy = Proxy::start(line_server().await).await.expect("proxy");
    let mut client = TcpStream::connect(proxy.local_addr())
        .await
        .expect("connect");
    ping(&mut client).await;
    proxy.cut_all();
    let mut buffer = [0u8; 8];
    let read = tokio::time::timeout(Duration::from_secs(5), client.read(&mut buffer)).await;
    assert!(
        matches!(read, Ok(Ok(0) | Err(_))),
        "a cut connection must be closed, got {read:?}"
    );
    assert_eq!(proxy.cut(), 1);
    let mut again = TcpStream::connect(proxy.local_addr())
        .await
        .expect("connect");
    ping(&mut again).await;
    assert_eq!(proxy.connections(), 2);
}

#[tokio::test]
async fn frozen_answers_wait_for_the_thaw_and_delayed_ones_for_the_delay() {
    let proxy = Proxy::start(line_server().await).await.expect("proxy");
    let mut client = TcpStream::connect(proxy.local_addr())
        .await
        .expect("connect");
    ping(&mut client).await;

    proxy.freeze(true);
    client.write_all(b"ping\n").await.expect("write");
    let mut buffer = [0u8; 8];
    let held = tokio::time::timeout(Duration::from_millis(300), client.read(&mut buffer)).await;
    assert!(
        held.is_err(),
        "a frozen proxy let an answer through: {held:?}"
    );
    proxy.freeze(false);
    answer(&mut client, 1).await;

    proxy.set_delay(Duration::from_millis(200));
    let delayed = ping(&mut client).await;
    assert!(
        delayed >= Duration::from_millis(200),
        "answered after {delayed:?}"
    );
    proxy.set_delay(Duration::ZERO);
    assert_eq!(proxy.round_trips(), 3);
}

#[tokio::test]
async fn a_black_hole_holds_open_connections_silent_for_good() {
    let proxy = Proxy::start(line_server().await).await.expect("proxy");
    let mut client = TcpStream::connect(proxy.local_addr())
        .await
        .expect("connect");
    ping(&mut client).await;
    proxy.black_hole();
    client.write_all(b"ping\n").await.expect("write");
    let mut buffer = [0u8; 8];
    let silent = tokio::time::timeout(Duration::from_millis(300), client.read(&mut buffer)).await;
    assert!(
        silent.is_err(),
        "a black hole answered or closed: {silent:?}"
    );
    assert_eq!(proxy.held(), 1);
    proxy.forward();
    let still = tokio::time::timeout(Duration::from_millis(300), client.read(&mut buffer)).await;
    assert!(
        still.is_err(),
        "a held connection spoke after forward: {still:?}"
    );
    let mut fresh = TcpStream::connect(proxy.local_addr())
        .await
        .expect("connect");
    ping(&mut fresh).await;
    assert_eq!(proxy.relayed(), 2);
}
