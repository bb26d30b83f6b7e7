//! A PostgreSQL server of the test's own: `initdb` into a temporary folder, its own port, its
//! own processes, so that a test can restart, crash or pause it without touching the machine's
//! shared server that the other tests use.
//!
//! The binaries come from `PG_BIN_DIR` or the newest `/usr/lib/postgresql/*/bin`. PostgreSQL
//! refuses to run as root, so when the tests run as root the server runs as the `postgres` OS
//! user (through `runuser`) in a folder that user owns. Dropping the guard stops the server
//! (resuming it first if it was paused) and removes the folder, whether the test passed or not.

use std::net::TcpListener;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::str::FromStr;

use sqlx::postgres::PgConnectOptions;
use tokio::process::Command;

use crate::support;

/// The OS user the server runs as when the tests run as root.
const SERVER_USER: &str = "postgres";

/// A running server of the test's own; stopped and removed on drop.
pub struct OwnPostgres {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    as_root: bool,
}

impl OwnPostgres {
    /// Runs `initdb` and starts the server with `settings` (`name = value` lines added to its
    /// `postgresql.conf`). Panics, saying what is missing, when it cannot.
    pub async fn start(settings: &[&str]) -> Self {
        let server = Self::init().await;
        server.configure(settings, None);
        server.start_server().await;
        server
    }

    /// Runs `initdb` (trust authentication) into a new folder and sets the port, but does not
    /// start the server: the caller may [`configure`](Self::configure) it first.
    pub async fn init() -> Self {
        let bin = bin_dir();
        let as_root = std::fs::metadata("/proc/self")
            .map(|meta| meta.uid() == 0)
            .unwrap_or(false);
        // As root, the folder must be one the server's user can reach: /tmp, whatever TMPDIR
        // says (it may point under /root).
        let temp = if as_root {
            PathBuf::from("/tmp")
        } else {
            std::env::temp_dir()
        };
        let dir = temp.join(support::unique_ident("checkpoint-pg"));
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|error| panic!("cannot create {}: {error}", dir.display()));
        // From here on, the guard cleans up whatever happens.
        let server = Self {
            bin,
            dir,
            port: free_port(),
            as_root,
        };
        server.chown(&server.dir).await;
        let initdb = server.bin.join("initdb");
        server
            .run(
                &initdb.to_string_lossy(),
                &[
                    "-D",
                    &server.data().to_string_lossy(),
                    "-A",
                    "trust",
                    "-U",
                    "postgres",
                    "--no-sync",
                ],
                true,
            )
            .await;
        server.configure(
            &[
                &format!("port = {}", server.port),
                "listen_addresses = '127.0.0.1'",
                &format!("unix_socket_directories = '{}'", server.dir.display()),
            ],
            None,
        );
        server
    }

    /// Adds `settings` to `postgresql.conf` and, when given, replaces `pg_hba.conf` with `hba`.
    /// Takes effect at the next start.
    pub fn configure(&self, settings: &[&str], hba: Option<&str>) {
        let conf_path = self.data().join("postgresql.conf");
        let mut conf = std::fs::read_to_string(&conf_path)
            .unwrap_or_else(|error| panic!("cannot read {}: {error}", conf_path.display()));
        for setting in settings {
            conf.push('\n');
            conf.push_str(setting);
        }
        conf.push('\n');
        std::fs::write(&conf_path, conf)
            .unwrap_or_else(|error| panic!("cannot write {}: {error}", conf_path.display()));
        if let Some(hba) = hba {
            let hba_path = self.data().join("pg_hba.conf");
            std::fs::write(&hba_path, hba)
                .unwrap_or_else(|error| panic!("cannot write {}: {error}", hba_path.display()));
        }
    }

    /// Gives `path` (recursively) to the server's user when the tests run as root.
    pub async fn chown(&self, path: &Path) {
        if self.as_root {
            self.run(
                "chown",
                &["-R", SERVER_USER, &path.to_string_lossy()],
                false,
            )
            .await;
        }
    }

    #[cfg_attr(not(feature = "tls-rustls"), allow(dead_code))] // used by the TLS test
    /// Connect options for the superuser over the server's unix socket (trusted whatever
    /// `pg_hba.conf` says for TCP).
    pub fn socket_options(&self) -> PgConnectOptions {
        PgConnectOptions::new()
            .socket(&self.dir)
            .port(self.port)
            .username("postgres")
            .database("postgres")
    }

    #[cfg_attr(not(feature = "tls-rustls"), allow(dead_code))] // used by the TLS test
    /// The server's TCP port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The data folder.
    pub fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    #[cfg_attr(not(feature = "tls-rustls"), allow(dead_code))] // used by the TLS test
    /// The folder the test may write files into for the server (certificates, ...).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Connect options for the superuser `postgres`, database `postgres`, over TCP.
    pub fn options(&self) -> PgConnectOptions {
        PgConnectOptions::from_str(&format!(
            "postgres://postgres@127.0.0.1:{}/postgres",
            self.port
        ))
        .unwrap_or_else(|error| panic!("a valid URL: {error}"))
    }

    /// `pg_ctl start`, waiting until the server accepts connections.
    pub async fn start_server(&self) {
        let log = self.dir.join("server.log");
        self.pg_ctl(&["start", "-w", "-t", "60", "-l", &log.to_string_lossy()])
            .await;
    }

    /// `pg_ctl stop` in `mode`: `fast` (sessions ended, a clean shutdown) or `immediate`
    /// (every process quits at once with no checkpoint, as after `kill -9`; the next start runs
    /// crash recovery from the WAL).
    pub async fn stop_server(&self, mode: &str) {
        self.pg_ctl(&["stop", "-w", "-t", "60", "-m", mode]).await;
    }

    /// `pg_ctl restart -m fast`, waiting until the server accepts connections again.
    pub async fn restart_server(&self) {
        let log = self.dir.join("server.log");
        self.pg_ctl(&[
            "restart",
            "-w",
            "-t",
            "60",
            "-m",
            "fast",
            "-l",
            &log.to_string_lossy(),
        ])
        .await;
    }

    /// The process ids of the server: the postmaster (from `postmaster.pid`) and its children
    /// (from `/proc/*/stat`), nobody else's.
    pub fn pids(&self) -> Vec<u32> {
        let Some(postmaster) = std::fs::read_to_string(self.data().join("postmaster.pid"))
            .ok()
            .and_then(|text| {
                text.lines()
                    .next()
                    .and_then(|line| line.trim().parse().ok())
            })
        else {
            return Vec::new();
        };
        let mut pids = vec![postmaster];
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|name| name.parse::<u32>().ok())
            else {
                continue;
            };
            // `pid (comm) state ppid ...`: the command may hold spaces, so split after `)`.
            let parent = std::fs::read_to_string(entry.path().join("stat"))
                .ok()
                .and_then(|stat| {
                    let (_, rest) = stat.rsplit_once(')')?;
                    rest.split_whitespace().nth(1)?.parse::<u32>().ok()
                });
            if parent == Some(postmaster) {
                pids.push(pid);
            }
        }
        pids
    }

    /// Sends `signal` (`STOP`, `CONT`, ...) to every process of the server; returns to how
    /// many (a process may end between listing and signalling).
    pub fn signal_all(&self, signal: &str) -> usize {
        self.pids()
            .into_iter()
            .filter(|pid| {
                std::process::Command::new("kill")
                    .args([format!("-{signal}"), pid.to_string()])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|status| status.success())
            })
            .count()
    }

    async fn pg_ctl(&self, args: &[&str]) {
        let pg_ctl = self.bin.join("pg_ctl");
        let data = self.data();
        let mut all = vec!["-D", data.to_str().unwrap_or_default()];
        all.extend_from_slice(args);
        self.run(&pg_ctl.to_string_lossy(), &all, true).await;
    }

    /// Runs `program` (as the server's user when `as_server` and the tests run as root) and
    /// panics with its output when it fails.
    pub async fn run(&self, program: &str, args: &[&str], as_server: bool) {
        let mut command = if as_server && self.as_root {
            let mut command = Command::new("runuser");
            command.args(["-u", SERVER_USER, "--", program]);
            command
        } else {
            Command::new(program)
        };
        let output = command
            .args(args)
            // A folder the server's user may enter (the test's may be under /root).
            .current_dir(&self.dir)
            // pg_ctl's server inherits these: never let it hold the test's pipes open.
            .stdin(Stdio::null())
            .output()
            .await
            .unwrap_or_else(|error| panic!("cannot run {program}: {error}"));
        assert!(
            output.status.success(),
            "{program} {args:?} failed ({}):\n{}\n{}\nserver log:\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
            std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
        );
    }
}

impl Drop for OwnPostgres {
    fn drop(&mut self) {
        // A paused server would never act on the stop: resume it first.
        self.signal_all("CONT");
        let pg_ctl = self.bin.join("pg_ctl");
        let data = self.data();
        let data = data.to_string_lossy();
        let args = ["-D", &*data, "stop", "-w", "-t", "30", "-m", "immediate"];
        let mut command = if self.as_root {
            let mut command = std::process::Command::new("runuser");
            command.args(["-u", SERVER_USER, "--"]).arg(&pg_ctl);
            command
        } else {
            std::process::Command::new(&pg_ctl)
        };
        let _ = command
            .args(args)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `PG_BIN_DIR`, or the newest `/usr/lib/postgresql/<version>/bin` that has `pg_ctl`.
fn bin_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("PG_BIN_DIR") {
        return PathBuf::from(dir);
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = entry.path().join("bin");
            bin.join("pg_ctl").exists().then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin).unwrap_or_else(|| {
        panic!(
            "the fault tests start PostgreSQL servers of their own and need initdb and pg_ctl: \
             install the PostgreSQL server package (they are looked for in \
             /usr/lib/postgresql/*/bin) or set PG_BIN_DIR to the folder that holds them"
        )
    })
}

/// A port nothing listens on right now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .unwrap_or_else(|error| panic!("cannot find a free port: {error}"))
}

/// The kit's crash of a server of our own (`sql_family::faults`).
impl checkpoint_conformance::sql_family::faults::CrashingServer for OwnPostgres {
    async fn crash(&self) {
        self.stop_server("immediate").await;
    }

    async fn start(&self) {
        self.start_server().await;
    }
}
