//! The completion log: one line per completed entry, appended by every worker process to one
//! file, read back by the supervisor to check that nothing was skipped and to count redos.

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
        let line = format!(
            "{partition} {position} {worker} {epoch} {}\n",
            unix_micros()
        );
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

/// Every completion in the log, in the order they were appended.
pub fn read(path: &Path) -> Result<Vec<Completion>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| format!("reading the completion log {}: {error}", path.display()))?;
    text.lines()
        .enumerate()
        .map(|(index, line)| {
            parse(line).ok_or_else(|| {
                format!(
                    "line {} of the completion log is malformed: {line:?}",
                    index + 1
                )
            })
        })
        .collect()
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
