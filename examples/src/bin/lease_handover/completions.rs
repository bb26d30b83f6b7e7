//! The completion log: one line per completed entry, appended by every worker process to one
//! file, read back by the supervisor to check that nothing was skipped and to count redos.
//! The workers also log there each lease they lose (`lost …`) and, when they exit, their
//! stats (`exit …`): a loss that no step of the scenario caused is a finding of the run.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// One completion: which entry, by whom, under which lease, and when (wall clock, so that the
/// supervisor can compare it with when it woke a frozen worker up).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    pub partition: u32,
    pub position: u64,
    pub worker: String,
    pub epoch: u64,
    pub unix_micros: u128,
}

/// A lease a worker lost (`Stop::Lost`): seen by the partition's task, when it was told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loss {
    pub partition: u32,
    pub epoch: u64,
    pub worker: String,
    pub unix_micros: u128,
}

/// A worker's stats as it exited gracefully (a killed worker writes none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exit {
    pub worker: String,
    /// `WorkerStats::losses`: every partition it lost, whether its task saw the loss or not.
    pub losses: u64,
    /// `WorkerStats::renew_failures`: lease requests that failed.
    pub lease_failures: u64,
    pub final_write_failures: u64,
    pub drain_timeouts: u64,
    /// Checkpoint writes its store slowed (`--write-delay-ms`).
    pub slowed_writes: u64,
}

/// Everything the log holds, each kind in the order it was appended.
#[derive(Debug, Default)]
pub struct Journal {
    pub completions: Vec<Completion>,
    pub losses: Vec<Loss>,
    pub exits: Vec<Exit>,
}

/// The log, opened for appending.
#[derive(Debug)]
pub struct CompletionLog(File);

impl CompletionLog {
    /// Opens (or creates) the log at `path` with `O_APPEND`: every write lands at the end of
    /// the file, whichever process makes it, so lines of concurrent workers never overwrite or
    /// split each other.
    pub fn open(path: &Path) -> std::io::Result<Self> {
        OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
            .map(Self)
    }

    /// Appends one line in one `write`: a worker killed at any instant leaves whole lines.
    pub fn append(
        &self,
        partition: u32,
        position: u64,
        worker: &str,
        epoch: u64,
    ) -> std::io::Result<()> {
        self.append_line(&format!(
            "{partition} {position} {worker} {epoch} {}\n",
            unix_micros()
        ))
    }

    /// Appends the loss of `worker`'s lease of `partition` under `epoch`, now.
    pub fn lost(&self, partition: u32, epoch: u64, worker: &str) -> std::io::Result<()> {
        self.append_line(&format!(
            "lost {partition} {epoch} {worker} {}\n",
            unix_micros()
        ))
    }

    /// Appends a worker's stats at its exit.
    pub fn exit(&self, exit: &Exit) -> std::io::Result<()> {
        self.append_line(&format!(
            "exit {} {} {} {} {} {}\n",
            exit.worker,
            exit.losses,
            exit.lease_failures,
            exit.final_write_failures,
            exit.drain_timeouts,
            exit.slowed_writes
        ))
    }

    fn append_line(&self, line: &str) -> std::io::Result<()> {
        let written = (&self.0).write(line.as_bytes())?;
        if written != line.len() {
            return Err(std::io::Error::other(format!(
                "a short append ({written} of {} bytes)",
                line.len()
            )));
        }
        Ok(())
    }
}

/// Microseconds since the Unix epoch, now.
pub fn unix_micros() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_micros())
}

/// Every line of the log, by kind, in the order they were appended.
pub fn read(path: &Path) -> Result<Journal, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| format!("reading the completion log {}: {error}", path.display()))?;
    let mut journal = Journal::default();
    for (index, line) in text.lines().enumerate() {
        let parsed = match line.split_once(' ') {
            Some(("lost", rest)) => parse_loss(rest).map(|loss| journal.losses.push(loss)),
            Some(("exit", rest)) => parse_exit(rest).map(|exit| journal.exits.push(exit)),
            _ => parse(line).map(|completion| journal.completions.push(completion)),
        };
        if parsed.is_none() {
            return Err(format!(
                "line {} of the completion log is malformed: {line:?}",
                index + 1
            ));
        }
    }
    Ok(journal)
}

fn parse_loss(line: &str) -> Option<Loss> {
    let mut fields = line.split(' ');
    let loss = Loss {
        partition: fields.next()?.parse().ok()?,
        epoch: fields.next()?.parse().ok()?,
        worker: fields.next()?.to_owned(),
        unix_micros: fields.next()?.parse().ok()?,
    };
    fields.next().is_none().then_some(loss)
}

fn parse_exit(line: &str) -> Option<Exit> {
    let mut fields = line.split(' ');
    let worker = fields.next()?.to_owned();
    let mut number = || fields.next()?.parse::<u64>().ok();
    let exit = Exit {
        worker,
        losses: number()?,
        lease_failures: number()?,
        final_write_failures: number()?,
        drain_timeouts: number()?,
        slowed_writes: number()?,
    };
    fields.next().is_none().then_some(exit)
}

fn parse(line: &str) -> Option<Completion> {
    let mut fields = line.split(' ');
    let completion = Completion {
        partition: fields.next()?.parse().ok()?,
        position: fields.next()?.parse().ok()?,
        worker: fields.next()?.to_owned(),
        epoch: fields.next()?.parse().ok()?,
        unix_micros: fields.next()?.parse().ok()?,
    };
    fields.next().is_none().then_some(completion)
}
