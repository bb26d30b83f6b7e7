//! The child processes: started from this very executable with `--child`, signalled with the
//! `kill` command, and watched so that one exiting on its own fails the run.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::process::{Child, Command};

use crate::BoxError;

/// Where the children read and write: passed to each on its command line.
#[derive(Debug, Clone)]
pub struct Setup {
    pub store: String,
    pub source: String,
    pub log: String,
    pub group: String,
    pub dir: PathBuf,
}

impl Setup {
    /// The file of handled entries of child `id`.
    pub fn handled(&self, id: &str) -> PathBuf {
        self.dir.join(format!("handled-{id}.log"))
    }
}

/// The running children, by id.
pub struct Fleet {
    setup: Setup,
    children: BTreeMap<String, Child>,
    /// Every child ever started, with its pid.
    pub started: BTreeMap<String, u32>,
}

impl Fleet {
    pub fn new(setup: Setup) -> Self {
        Self {
            setup,
            children: BTreeMap::new(),
            started: BTreeMap::new(),
        }
    }

    /// Starts child `id`. Its stdin stays open while the supervisor lives (the child shuts
    /// down when it closes); its output goes to the supervisor's.
    pub fn start(&mut self, id: &str) -> Result<u32, BoxError> {
        let setup = &self.setup;
        let child = Command::new(std::env::current_exe()?)
            .arg("--child")
            .args(["--store", &setup.store, "--source", &setup.source])
            .args(["--log", &setup.log, "--group", &setup.group, "--id", id])
            .arg("--handled")
            .arg(setup.handled(id))
            .stdin(Stdio::piped())
            // A supervisor that fails leaves no child behind (SIGKILL works on a stopped one).
            .kill_on_drop(true)
            .spawn()?;
        let pid = child.id().ok_or("the child process has no id")?;
        self.children.insert(id.to_owned(), child);
        self.started.insert(id.to_owned(), pid);
        println!("   {id}: pid {pid}");
        Ok(pid)
    }

    /// Sends `signal` (`KILL`, `STOP`, `CONT`, `TERM`) to child `id` with the `kill` command.
    pub async fn signal(&self, id: &str, signal: &str) -> Result<(), BoxError> {
        let pid = self
            .children
            .get(id)
            .and_then(Child::id)
            .ok_or_else(|| format!("{id} is not running"))?;
        let status = Command::new("kill")
            .args([format!("-{signal}"), pid.to_string()])
            .status()
            .await?;
        if !status.success() {
            return Err(format!("kill -{signal} {pid} ({id}) failed: {status}").into());
        }
        Ok(())
    }

    /// Waits up to `timeout` for child `id` to exit, and forgets it.
    pub async fn exited(&mut self, id: &str, timeout: Duration) -> Result<ExitStatus, BoxError> {
        let child = self
            .children
            .get_mut(id)
            .ok_or_else(|| format!("no child {id}"))?;
        let status = tokio::time::timeout(timeout, child.wait())
            .await
            .map_err(|_| format!("{id} did not exit within {timeout:?}"))??;
        self.children.remove(id);
        Ok(status)
    }

    /// SIGTERM to child `id`, then waits for it: a graceful stop must exit 0.
    pub async fn stop(&mut self, id: &str, timeout: Duration) -> Result<(), BoxError> {
        self.signal(id, "TERM").await?;
        let status = self.exited(id, timeout).await?;
        if !status.success() {
            return Err(format!("{id} exited with {status} after SIGTERM").into());
        }
        Ok(())
    }

    /// Fails if a child exited that the supervisor did not stop.
    pub fn check_running(&mut self) -> Result<(), BoxError> {
        for (id, child) in &mut self.children {
            if let Some(status) = child.try_wait()? {
                return Err(format!("{id} exited on its own ({status})").into());
            }
        }
        Ok(())
    }

    /// The children still running, sorted.
    pub fn running(&self) -> Vec<String> {
        self.children.keys().cloned().collect()
    }
}
