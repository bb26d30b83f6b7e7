//! The child processes: this very executable with `--child`, SIGKILLed (tokio's `start_kill`)
//! or stopped by closing their stdin, and watched so that one exiting on its own fails the
//! run.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};

use crate::BoxError;

/// How long a child may take to shut down gracefully (hand its partitions over) and exit.
const STOP_WITHIN: Duration = Duration::from_secs(20);

/// The running children, by id, and what they were told.
pub struct Children {
    store: String,
    source: String,
    run: String,
    running: BTreeMap<String, Child>,
    pub started: u64,
    pub killed: u64,
    pub exited: u64,
}

impl Children {
    /// No child yet; each will run over `source` (the topic's URL) into `store`.
    pub fn new(store: &str, source: &str, run: &str) -> Self {
        Self {
            store: store.to_owned(),
            source: source.to_owned(),
            run: run.to_owned(),
            running: BTreeMap::new(),
            started: 0,
            killed: 0,
            exited: 0,
        }
    }

    /// Starts the next child (`child-1`, `child-2`, …). Its output goes to the supervisor's;
    /// its stdin stays open until `stop_all` (the child shuts down when it closes).
    pub fn start(&mut self) -> Result<(), BoxError> {
        self.started += 1;
        let id = format!("child-{}", self.started);
        let child = Command::new(std::env::current_exe()?)
            .arg("--child")
            .args(["--store", &self.store, "--source", &self.source])
            .args(["--run", &self.run, "--id", &id])
            .stdin(Stdio::piped())
            // A supervisor that fails leaves no child behind.
            .kill_on_drop(true)
            .spawn()?;
        println!("   {id}: started, pid {}", child.id().unwrap_or_default());
        self.running.insert(id, child);
        Ok(())
    }

    /// The running children's ids.
    pub fn ids(&self) -> Vec<String> {
        self.running.keys().cloned().collect()
    }

    /// SIGKILLs child `id` and reaps it.
    pub async fn kill(&mut self, id: &str) -> Result<(), BoxError> {
        let mut child = self
            .running
            .remove(id)
            .ok_or_else(|| format!("{id} is not running"))?;
        child.start_kill()?;
        child.wait().await?;
        self.killed += 1;
        Ok(())
    }

    /// Fails if a child exited that the supervisor did not stop.
    pub fn check_running(&mut self) -> Result<(), BoxError> {
        for (id, child) in &mut self.running {
            if let Some(status) = child.try_wait()? {
                return Err(format!("{id} exited on its own ({status})").into());
            }
        }
        Ok(())
    }

    /// Stops every child gracefully (closes its stdin) and waits for it: each must exit 0.
    pub async fn stop_all(&mut self) -> Result<(), BoxError> {
        for child in self.running.values_mut() {
            drop(child.stdin.take());
        }
        for (id, mut child) in std::mem::take(&mut self.running) {
            let status = tokio::time::timeout(STOP_WITHIN, child.wait())
                .await
                .map_err(|_| format!("{id} did not stop within {STOP_WITHIN:?}"))??;
            if !status.success() {
                return Err(format!("{id} exited with {status} when stopped").into());
            }
            self.exited += 1;
        }
        Ok(())
    }
}
