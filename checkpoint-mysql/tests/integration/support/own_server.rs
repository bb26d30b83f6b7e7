//! A MariaDB server of the test's own: `mariadb-install-db` into a temporary folder, its own
//! port and socket, its own process, so that a test can stop, crash and start it again without
//! touching the machine's shared server that the other tests use.
//!
//! The programs are `mariadb-install-db` (on the `PATH`) and `mariadbd` (`/usr/sbin`, else the
//! `PATH`); `MARIADBD` names another server binary. Both run with `--no-defaults`, so no
//! `my.cnf` of the machine applies, and with a `tmpdir` of their own (see
//! [`OwnMariadb::tmp`]). As root, `mariadbd` needs `--user=root` (it refuses to run
//! as root otherwise); the data folder is root's then. Dropping the guard kills the server and
//! removes the folder, whether the test passed or not.
//!
//! [`OwnMariadb::start_with`] adds arguments of the test's own to `mariadbd` (TLS's
//! `--ssl-cert`, `--ssl-key`, `--ssl-ca` for example), on every start of the server.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::str::FromStr;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use sqlx::mysql::MySqlConnectOptions;
use sqlx::{Connection, MySqlConnection};

use crate::support;

/// How long a start or a stop may take before the test gives up.
const PATIENCE: Duration = Duration::from_secs(60);

/// A MariaDB server of the test's own; killed and removed on drop.
pub struct OwnMariadb {
    dir: PathBuf,
    port: u16,
    as_root: bool,
    /// Arguments for `mariadbd` beyond the usual ones, on every start.
    extra: Vec<String>,
    server: Mutex<Option<Child>>,
}

impl OwnMariadb {
    /// Creates a data folder, starts the server on a free port and creates the database
    /// `test`. Panics, saying what is missing, when it cannot.
    pub async fn start() -> Self {
        Self::start_with(&[]).await
    }

    /// [`start`](Self::start) with `extra` arguments for `mariadbd` after the usual ones (a
    /// later one wins), on this and every later [`start_server`](Self::start_server). This
    /// module's own connections keep sqlx's default `ssl-mode` (`preferred`): built with the
    /// `tls-rustls` feature, to a server that offers TLS, they are encrypted (the certificate
    /// unchecked), so `--require-secure-transport` does not lock them out then.
    pub async fn start_with(extra: &[String]) -> Self {
        let as_root = std::fs::read_to_string("/proc/self/status").is_ok_and(|status| {
            status
                .lines()
                .any(|line| line.starts_with("Uid:") && line.split_whitespace().nth(1) == Some("0"))
        });
        let dir = PathBuf::from("/tmp").join(support::unique_ident("cp_maria"));
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|error| panic!("cannot create {}: {error}", dir.display()));
        // From here on, the guard cleans up whatever happens.
        let server = Self {
            dir,
            port: free_port(),
            as_root,
            extra: extra.to_vec(),
            server: Mutex::new(None),
        };
        std::fs::create_dir_all(server.tmp())
            .unwrap_or_else(|error| panic!("cannot create {}: {error}", server.tmp().display()));
        let mut install = Command::new("mariadb-install-db");
        install
            .args([
                "--no-defaults",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
                &format!("--datadir={}", server.data().display()),
                // Passed on to the bootstrap server: see `tmp`.
                &format!("--tmpdir={}", server.tmp().display()),
            ])
            .env("TMPDIR", server.tmp());
        if as_root {
            install.arg("--user=root");
        }
        let output = install
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|error| {
                panic!(
                    "the restart test starts a MariaDB server of its own and needs \
                     mariadb-install-db (the mariadb-server package): {error}"
                )
            });
        assert!(
            output.status.success(),
            "mariadb-install-db failed ({}):\n{}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        server.start_server().await;
        let mut admin = server.admin().await;
        sqlx::raw_sql("CREATE DATABASE IF NOT EXISTS test")
            .execute(&mut admin)
            .await
            .unwrap_or_else(|error| panic!("CREATE DATABASE test: {error}"));
        server
    }

    /// The data folder.
    pub fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// The server's `tmpdir`, in its folder. Never `/tmp`: a starting `mariadbd` deletes every
    /// `#sql*` file in its `tmpdir` as left over from an earlier run, including the live
    /// temporary tables of any other server that shares it (the machine's shared server uses
    /// `/tmp`), which breaks that server's statements.
    pub fn tmp(&self) -> PathBuf {
        self.dir.join("tmp")
    }

    /// Connect options for `root` (no password), database `test`, over TCP.
    pub fn options(&self) -> MySqlConnectOptions {
        MySqlConnectOptions::from_str(&format!("mysql://root@127.0.0.1:{}/test", self.port))
            .unwrap_or_else(|error| panic!("a valid URL: {error}"))
    }

    /// A plain connection as `root` to the database `mysql` (not `test`, where the stores'
    /// sessions are: a test can tell them apart by the processlist's `DB`).
    pub async fn admin(&self) -> MySqlConnection {
        MySqlConnection::connect_with(&self.options().database("mysql"))
            .await
            .unwrap_or_else(|error| panic!("cannot connect to the server of our own: {error}"))
    }

    /// Whether the server's log reports a crash (a fatal signal), and the lines that do.
    pub fn crashes(&self) -> Vec<String> {
        self.log()
            .lines()
            .filter(|line| line.contains("got signal") || line.contains("Assertion"))
            .map(str::to_owned)
            .collect()
    }

    /// The server's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child().as_ref().map(Child::id)
    }

    fn child(&self) -> std::sync::MutexGuard<'_, Option<Child>> {
        self.server.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts `mariadbd` on the data folder and waits until it accepts connections.
    pub async fn start_server(&self) {
        let log = self.dir.join("server.log");
        let mut command = Command::new(mariadbd());
        command.args([
            "--no-defaults".to_owned(),
            format!("--datadir={}", self.data().display()),
            format!("--port={}", self.port),
            format!("--socket={}", self.dir.join("server.sock").display()),
            format!("--pid-file={}", self.dir.join("server.pid").display()),
            format!("--log-error={}", log.display()),
            format!("--tmpdir={}", self.tmp().display()),
            "--bind-address=127.0.0.1".to_owned(),
            "--skip-name-resolve".to_owned(),
            "--innodb-buffer-pool-size=32M".to_owned(),
            "--max-connections=100".to_owned(),
        ]);
        if self.as_root {
            command.arg("--user=root");
        }
        command.args(&self.extra);
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .env("TMPDIR", self.tmp())
            .current_dir(&self.dir)
            .spawn()
            .unwrap_or_else(|error| panic!("cannot run {}: {error}", mariadbd().display()));
        *self.child() = Some(child);
        let started = Instant::now();
        loop {
            if let Some(status) = self.child().as_mut().and_then(|c| c.try_wait().ok()?) {
                panic!("mariadbd exited at its start ({status}):\n{}", self.log());
            }
            if MySqlConnection::connect_with(&self.options().database("mysql"))
                .await
                .is_ok()
            {
                return;
            }
            assert!(
                started.elapsed() < PATIENCE,
                "mariadbd did not accept connections within {PATIENCE:?}:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Stops the server: cleanly with SIGTERM (sessions ended, InnoDB shut down), or as a crash
    /// with SIGKILL (the next start runs InnoDB's crash recovery from its redo log). Waits until
    /// the process has exited.
    pub async fn stop_server(&self, crash: bool) {
        let Some(mut child) = self.child().take() else {
            panic!("the server of our own is not running");
        };
        if crash {
            child
                .kill()
                .unwrap_or_else(|error| panic!("SIGKILL mariadbd: {error}"));
        } else {
            let status = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .unwrap_or_else(|error| panic!("cannot run kill: {error}"));
            assert!(status.success(), "kill -TERM mariadbd: {status}");
        }
        let started = Instant::now();
        loop {
            match child.try_wait() {
                Ok(Some(_)) => return,
                Ok(None) if started.elapsed() < PATIENCE => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                other => panic!(
                    "mariadbd did not stop within {PATIENCE:?} ({other:?}):\n{}",
                    self.log()
                ),
            }
        }
    }

    /// The server's error log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }
}

impl Drop for OwnMariadb {
    fn drop(&mut self) {
        if let Some(mut child) = self.child().take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `MARIADBD`, or `/usr/sbin/mariadbd` when it exists, else `mariadbd` from the `PATH`.
fn mariadbd() -> PathBuf {
    if let Some(path) = std::env::var_os("MARIADBD") {
        return PathBuf::from(path);
    }
    let usual = PathBuf::from("/usr/sbin/mariadbd");
    if usual.exists() {
        usual
    } else {
        PathBuf::from("mariadbd")
    }
}

/// A port nothing listens on right now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .unwrap_or_else(|error| panic!("cannot find a free port: {error}"))
}

/// The kit's crash of a server of our own (`sql_family::faults`).
impl checkpoint_conformance::sql_family::faults::CrashingServer for OwnMariadb {
    async fn crash(&self) {
        self.stop_server(true).await;
    }

    async fn start(&self) {
        self.start_server().await;
    }
}
