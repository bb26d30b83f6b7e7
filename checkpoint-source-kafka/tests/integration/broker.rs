//! A broker of a test's own, which the test kills (SIGKILL) and starts again: the project's
//! `scripts/services/kafka.sh serve PORT FILE`, whose storage (a SQLite file) survives.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};

/// A broker process on a port of its own, over a storage file of its own.
pub struct Broker {
    port: u16,
    storage: PathBuf,
    child: Option<Child>,
}

impl Broker {
    /// Starts a broker on a free port with an empty storage and waits until it listens.
    pub async fn start(label: &str) -> Self {
        let port = free_port();
        let storage = std::env::temp_dir().join(format!(
            "checkpoint-kafka-{label}-{}-{port}/broker.db",
            std::process::id()
        ));
        let mut broker = Self {
            port,
            storage,
            child: None,
        };
        broker.restart().await;
        broker
    }

    /// `host:port`.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// SIGKILLs the broker (nothing flushed, no goodbye) and waits until it is gone.
    pub async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.start_kill().expect("SIGKILL the broker");
            child.wait().await.expect("the killed broker is reaped");
        }
    }

    /// Starts the broker (again) on the same port and storage; waits until it listens.
    pub async fn restart(&mut self) {
        self.kill().await;
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/services/kafka.sh");
        let child = Command::new("bash")
            .arg(script)
            .arg("serve")
            .arg(self.port.to_string())
            .arg(&self.storage)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start scripts/services/kafka.sh serve (is tansu installed? `bash scripts/services/kafka.sh install`)");
        self.child = Some(child);
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(self.address()).await.is_ok() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!(
            "the broker on {} did not listen within 10 s",
            self.address()
        );
    }
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address").port()
}
