//! The worker processes the supervisor runs: started from this very executable in `worker`
//! mode, signalled with the `kill` command, and watched so that one exiting on its own fails
//! the run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::process::{Child, Command};

use crate::BoxError;

/// The running worker processes, by worker id.
pub struct Fleet {
    store: String,
    group: String,
    completions: PathBuf,
    /// Passed to every worker as `--write-delay-ms`.
    write_delay: Duration,
    /// Passed to every worker as `--lease-ms`.
    lease: Duration,
    children: BTreeMap<String, Child>,
}

impl Fleet {
    pub fn new(
        store: &str,
        group: &str,
        completions: &Path,
        write_delay: Duration,
        lease: Duration,
    ) -> Self {
        Self {
            store: store.to_owned(),
            group: group.to_owned(),
            completions: completions.to_owned(),
            write_delay,
            lease,
            children: BTreeMap::new(),
        }
    }

    /// Starts a worker process under `worker_id`. Its stdin stays open while the supervisor
    /// lives (the worker shuts down when it closes); its output goes to the supervisor's.
    pub fn start(&mut self, worker_id: &str) -> Result<u32, BoxError> {
        let child = Command::new(std::env::current_exe()?)
            .arg("worker")
            .args(["--store", &self.store, "--group", &self.group])
            .args(["--worker-id", worker_id])
            .arg("--completions")
            .arg(&self.completions)
            .args([
                "--write-delay-ms".to_owned(),
                self.write_delay.as_millis().to_string(),
                "--lease-ms".to_owned(),
                self.lease.as_millis().to_string(),
            ])
            .stdin(Stdio::piped())
            // A supervisor that fails leaves no worker behind (SIGKILL works on a stopped one).
            .kill_on_drop(true)
            .spawn()?;
        let pid = child.id().ok_or("the worker process has no id")?;
        self.children.insert(worker_id.to_owned(), child);
        Ok(pid)
    }

    /// The workers' lease duration.
    pub fn lease(&self) -> Duration {
        self.lease
    }

    /// Sends `signal` (`KILL`, `STOP`, `CONT`, `TERM`) to the worker with the `kill` command.
    pub async fn signal(&self, worker_id: &str, signal: &str) -> Result<(), BoxError> {
        let child = self
            .children
            .get(worker_id)
            .ok_or_else(|| format!("no worker {worker_id}"))?;
        let pid = child
            .id()
            .ok_or_else(|| format!("{worker_id} has exited"))?;
        let status = Command::new("kill")
            .args([format!("-{signal}"), pid.to_string()])
            .status()
            .await?;
        if !status.success() {
            return Err(format!("kill -{signal} {pid} ({worker_id}) failed: {status}").into());
        }
        Ok(())
    }

    /// Waits up to `timeout` for the worker to exit, and forgets it.
    pub async fn exited(
        &mut self,
        worker_id: &str,
        timeout: Duration,
    ) -> Result<ExitStatus, BoxError> {
        let child = self
            .children
            .get_mut(worker_id)
            .ok_or_else(|| format!("no worker {worker_id}"))?;
        let status = tokio::time::timeout(timeout, child.wait())
            .await
            .map_err(|_| format!("{worker_id} did not exit within {timeout:?}"))??;
        self.children.remove(worker_id);
        Ok(status)
    }

    /// Fails if a worker exited that the supervisor did not stop.
    pub fn check_running(&mut self) -> Result<(), BoxError> {
        for (worker_id, child) in &mut self.children {
            if let Some(status) = child.try_wait()? {
                return Err(format!("{worker_id} exited on its own ({status})").into());
            }
        }
        Ok(())
    }

    /// The workers still running, sorted.
    pub fn running(&self) -> Vec<String> {
        self.children.keys().cloned().collect()
    }
}
