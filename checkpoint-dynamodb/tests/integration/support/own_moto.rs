//! DynamoDB-compatible servers of a test's own, for faults that must not touch the shared
//! server (`DYNAMODB_ENDPOINT`): restarts, pauses, cut connections.
//!
//! Each is moto started with `scripts/services/dynamodb.sh serve PORT` (the same virtualenv and
//! the same one-lock launcher as `up`), on a free loopback port, killed when the guard drops,
//! whether the test passed or panicked. The script `exec`s the server, so the child's pid is
//! the server's own: `SIGSTOP` pauses the server itself, not a shell around it.

use std::fs::File;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a fresh server may take to answer (moto imports its whole backend catalogue).
const STARTUP: Duration = Duration::from_secs(60);

/// A moto server of the test's own; killed on drop.
pub struct OwnMoto {
    port: u16,
    child: Option<Child>,
    log: PathBuf,
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or_else(|| panic!("the crate has no parent directory"))
        .to_path_buf()
}

/// A port nothing listens on at the moment: bound, read, released.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .unwrap_or_else(|error| panic!("cannot find a free port: {error}"))
}

impl OwnMoto {
    /// Starts a server on a free port and waits until it accepts connections.
    pub fn start() -> Self {
        let mut server = Self {
            port: free_port(),
            child: None,
            log: PathBuf::new(),
        };
        server.start_again();
        server
    }

    /// The endpoint URL.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The listening address.
    pub fn address(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    fn pid(&self) -> u32 {
        self.child
            .as_ref()
            .map(Child::id)
            .unwrap_or_else(|| panic!("the server on port {} is not running", self.port))
    }

    /// Kills the server (`SIGKILL`, as a crash would) and waits until it is gone.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port (after [`kill`](Self::kill)).
    pub fn start_again(&mut self) {
        assert!(self.child.is_none(), "the server is still running");
        let script = repo_root().join("scripts/services/dynamodb.sh");
        let state = repo_root().join(".local/dynamodb");
        std::fs::create_dir_all(&state)
            .unwrap_or_else(|error| panic!("cannot create {}: {error}", state.display()));
        // The server logs every request: into a file, never into a pipe nobody reads.
        self.log = state.join(format!("own-{}.log", self.port));
        let log = File::create(&self.log)
            .unwrap_or_else(|error| panic!("cannot create {}: {error}", self.log.display()));
        let log_err = log
            .try_clone()
            .unwrap_or_else(|error| panic!("cannot clone the log handle: {error}"));
        let child = Command::new("bash")
            .arg(&script)
            .arg("serve")
            .arg(self.port.to_string())
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .spawn()
            .unwrap_or_else(|error| panic!("cannot run {}: {error}", script.display()));
        self.child = Some(child);
        let started = Instant::now();
        loop {
            if TcpStream::connect_timeout(&self.address(), Duration::from_millis(200)).is_ok() {
                return;
            }
            let exited = self
                .child
                .as_mut()
                .and_then(|child| child.try_wait().ok().flatten());
            if let Some(status) = exited {
                self.child = None;
                panic!(
                    "the test's own moto server exited ({status}) before answering; run \
                     `bash scripts/services/dynamodb.sh up` once to install it. Its output:\n{}",
                    std::fs::read_to_string(&self.log).unwrap_or_default()
                );
            }
            if started.elapsed() > STARTUP {
                panic!(
                    "the test's own moto server did not answer on port {} within {STARTUP:?}; \
                     see {}",
                    self.port,
                    self.log.display()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sends a signal to the server process.
    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(signal)
            .arg(self.pid().to_string())
            .status()
            .unwrap_or_else(|error| panic!("cannot run kill {signal}: {error}"));
        assert!(status.success(), "kill {signal} failed: {status}");
    }

    /// Pauses the server (`SIGSTOP`): the kernel still accepts connections, nothing answers.
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Resumes a paused server (`SIGCONT`).
    pub fn resume(&self) {
        self.signal("-CONT");
    }
}

impl Drop for OwnMoto {
    fn drop(&mut self) {
        // SIGKILL also ends a stopped process.
        self.kill();
        let _ = std::fs::remove_file(&self.log);
    }
}
