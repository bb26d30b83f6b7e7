//! SQLite's one write lock per file, seen from outside the children: a probe that asks for it
//! without waiting (`BEGIN IMMEDIATE` with a busy timeout of 0), and a process that holds it
//! on purpose (`--lock-holder`) while the supervisor freezes it.
//!
//! A process frozen (SIGSTOP) inside a write transaction keeps the lock for the whole freeze:
//! every other process's writes wait (the writers' appends, the children's checkpoints,
//! lease renewals and acquires). The probe is how the supervisor knows that this happened,
//! rather than guessing it from what the children redid.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use sqlx::{Connection, raw_sql};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::BoxError;

pub use checkpoint_examples::sqlite_lock::{Probe, sqlite_file};

/// What the holder prints once it holds the write lock, and once it committed.
pub const LOCKED_LINE: &str = "locked";
pub const COMMITTED_LINE: &str = "committed";

/// Milliseconds since the Unix epoch: a clock every process of the machine shares, so that
/// the supervisor can place the children's handled lines against the freeze.
pub fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as u64)
}

/// The `--lock-holder` process: takes the file's write lock (`BEGIN IMMEDIATE`, then a write
/// inside the transaction), says so on stdout, and commits when a line arrives on stdin (the
/// supervisor sends it after the freeze), then says so and exits.
pub async fn hold(file: &Path) -> Result<(), BoxError> {
    let options = SqliteConnectOptions::new()
        .filename(file)
        .busy_timeout(crate::LOCK_HOLDER_BUSY_TIMEOUT);
    let mut connection = SqliteConnection::connect_with(&options).await?;
    raw_sql("CREATE TABLE IF NOT EXISTS fleet_lock_holder (at INTEGER NOT NULL)")
        .execute(&mut connection)
        .await?;
    raw_sql("BEGIN IMMEDIATE").execute(&mut connection).await?;
    raw_sql("INSERT INTO fleet_lock_holder (at) VALUES (unixepoch('subsec') * 1000)")
        .execute(&mut connection)
        .await?;
    say(LOCKED_LINE)?;
    // Blocking, on a thread of its own: the process does nothing else meanwhile.
    tokio::task::spawn_blocking(|| std::io::stdin().read_line(&mut String::new())).await??;
    raw_sql("COMMIT").execute(&mut connection).await?;
    say(COMMITTED_LINE)
}

fn say(line: &str) -> Result<(), BoxError> {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{line}")?;
    stdout.flush()?;
    Ok(())
}

/// What the supervisor saw of the write lock while a process was frozen.
#[derive(Debug, Clone, Default)]
pub struct FrozenLock {
    /// Probes of the lock during the freeze, and how many found it held.
    pub probes: u64,
    pub locked: u64,
    /// How long the freeze lasted (SIGSTOP to SIGCONT).
    pub frozen: Duration,
    /// When the lock was free again (after the frozen process committed), as [`wall_ms`].
    pub released_at_ms: u64,
}

impl FrozenLock {
    /// The evidence that the frozen process held the write lock: several probes, every one
    /// of them refused. The lock is otherwise held for a few milliseconds at a time (one
    /// append, one checkpoint, one renew): a run of refusals spread over the freeze is the
    /// frozen process's transaction, not the others' traffic.
    pub fn held_through(&self) -> bool {
        self.probes >= MIN_PROBES && self.locked == self.probes
    }
}

/// Probes that must all find the lock held before a freeze counts as one inside a write.
pub const MIN_PROBES: u64 = 5;
/// How often the supervisor probes the lock during a freeze.
pub const PROBE_EVERY: Duration = Duration::from_millis(50);

/// The supervisor's side of `--lock-holder`: starts the holder on `file`, waits until it
/// holds the write lock, freezes it (SIGSTOP) for `freeze` while probing the lock, wakes it
/// (SIGCONT), lets it commit, and returns what the probes saw.
pub async fn freeze_holder(
    file: &Path,
    probe: &mut Probe,
    freeze: Duration,
) -> Result<FrozenLock, BoxError> {
    let mut holder = tokio::process::Command::new(std::env::current_exe()?)
        .arg("--lock-holder")
        .arg(file)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let pid = holder.id().ok_or("the lock holder has no id")?;
    let stdout = holder.stdout.take().ok_or("the lock holder's stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    expect_line(&mut lines, LOCKED_LINE).await?;
    signal(pid, "STOP").await?;
    let stopped = std::time::Instant::now();
    println!("   lock holder (pid {pid}) holds the write lock: SIGSTOP for {freeze:?}");
    let mut seen = FrozenLock::default();
    while stopped.elapsed() < freeze {
        seen.probes += 1;
        seen.locked += u64::from(probe.locked().await?);
        tokio::time::sleep(PROBE_EVERY.min(freeze.saturating_sub(stopped.elapsed()))).await;
    }
    signal(pid, "CONT").await?;
    seen.frozen = stopped.elapsed();
    let mut stdin = holder.stdin.take().ok_or("the lock holder's stdin")?;
    tokio::io::AsyncWriteExt::write_all(&mut stdin, b"commit\n").await?;
    expect_line(&mut lines, COMMITTED_LINE).await?;
    seen.released_at_ms = wall_ms();
    let status = holder.wait().await?;
    if !status.success() {
        return Err(format!("the lock holder exited with {status}").into());
    }
    println!(
        "   SIGCONT, committed after a freeze of {:.1?}: {} of {} probes found the lock held",
        seen.frozen, seen.locked, seen.probes
    );
    Ok(seen)
}

/// Reads the holder's stdout until `expected` (within a few seconds: the holder waits at most
/// its busy timeout for the lock).
async fn expect_line(
    lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    expected: &str,
) -> Result<(), BoxError> {
    let wait = crate::LOCK_HOLDER_BUSY_TIMEOUT + Duration::from_secs(5);
    loop {
        match tokio::time::timeout(wait, lines.next_line()).await {
            Ok(Ok(Some(line))) if line == expected => return Ok(()),
            Ok(Ok(Some(_))) => {}
            Ok(Ok(None)) => return Err(format!("the lock holder ended before {expected:?}").into()),
            Ok(Err(error)) => return Err(error.into()),
            Err(_) => {
                return Err(format!("the lock holder did not say {expected:?} in {wait:?}").into());
            }
        }
    }
}

/// Sends `signal` to `pid` with the `kill` command.
async fn signal(pid: u32, signal: &str) -> Result<(), BoxError> {
    let status = tokio::process::Command::new("kill")
        .args([format!("-{signal}"), pid.to_string()])
        .status()
        .await?;
    if !status.success() {
        return Err(format!("kill -{signal} {pid} failed: {status}").into());
    }
    Ok(())
}
