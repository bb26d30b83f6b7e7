//! A loopback TCP proxy that can cut every open connection on demand, closing both sides, as a
//! server or a load balancer dropping its connections would.
//!
//! The SDK speaks HTTP/1.1 over pooled connections; DynamoDB (and any proxy before it) may drop
//! them at any time. Cutting here is the client-visible part of that: requests in flight lose
//! their connection before the response, and the next request must open a new one.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// The proxy; stops accepting when dropped (open connections are cut with it).
pub struct CuttingProxy {
    address: SocketAddr,
    /// Each cut bumps the generation; every connection task watches it and closes both sockets.
    generation: watch::Sender<u64>,
    cut: Arc<AtomicU64>,
    accepted: Arc<AtomicU64>,
    acceptor: tokio::task::JoinHandle<()>,
}

impl CuttingProxy {
    /// A proxy on a free loopback port in front of `upstream`.
    pub async fn start(upstream: SocketAddr) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?;
        let (generation, _) = watch::channel(0_u64);
        let cut = Arc::new(AtomicU64::new(0));
        let accepted = Arc::new(AtomicU64::new(0));
        let acceptor = tokio::spawn({
            let generation = generation.clone();
            let (cut, accepted) = (cut.clone(), accepted.clone());
            async move {
                while let Ok((mut client, _)) = listener.accept().await {
                    accepted.fetch_add(1, Ordering::SeqCst);
                    let mut cuts = generation.subscribe();
                    cuts.borrow_and_update();
                    let cut = cut.clone();
                    tokio::spawn(async move {
                        let Ok(mut server) = TcpStream::connect(upstream).await else {
                            return;
                        };
                        tokio::select! {
                            _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                            _ = cuts.changed() => {
                                cut.fetch_add(1, Ordering::SeqCst);
                            }
                        }
                        // Dropping both sockets here closes both sides.
                    });
                }
            }
        });
        Ok(Self {
            address,
            generation,
            cut,
            accepted,
            acceptor,
        })
    }

    /// The address clients connect to.
    pub fn local_addr(&self) -> SocketAddr {
        self.address
    }

    /// Cuts every connection open now.
    pub fn cut_all(&self) {
        self.generation.send_modify(|generation| *generation += 1);
    }

    /// Connections cut so far.
    pub fn cut(&self) -> u64 {
        self.cut.load(Ordering::SeqCst)
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for CuttingProxy {
    fn drop(&mut self) {
        self.acceptor.abort();
        self.cut_all();
    }
}
