//! The counting proxy counts request–response exchanges, not packets.

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
