//! The application the workers' rows run on every assignment: it reads entries from where the
//! assignment resumes, dispatches and completes them through the assignment's committer handle,
//! and records every completion, so that an entry completed twice (redone after a handover) is
//! counted. On a graceful stop it finishes the batch in flight (its drain), then drops the
//! assignment and notes when.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use checkpoint_worker::{Assignment, Assignments, Stop};
use tokio::task::{JoinHandle, JoinSet};

/// Entries dispatched together, then completed together: the batch a drain finishes.
const BATCH: u64 = 4;
/// A batch's handlers' work.
const WORK: Duration = Duration::from_millis(1);
/// Between batches, as a reader waits for the log: it keeps the entries to a few hundred a
/// second per partition, so that the workers' own work, not the application, is measured.
const PAUSE: Duration = Duration::from_millis(20);

/// What each assignment's task does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Work {
    /// Nothing: wait for the stop, then drop (the rows that measure ownership only).
    Idle,
    /// Dispatch and complete entries, recorded in the ledger.
    Entries,
}

/// Every entry completed, by (partition, position), across all workers of a fleet.
#[derive(Debug, Default)]
pub(super) struct Ledger {
    completed: Mutex<HashSet<(u32, u64)>>,
    redone: AtomicU64,
}

impl Ledger {
    fn record(&self, partition: u32, position: u64) {
        let fresh = self
            .completed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert((partition, position));
        if !fresh {
            self.redone.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Entries completed more than once so far.
    pub(super) fn redone(&self) -> u64 {
        self.redone.load(Ordering::Relaxed)
    }

    /// Distinct entries completed so far.
    pub(super) fn entries(&self) -> usize {
        self.completed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

/// When a worker's application dropped assignments after a graceful stop.
#[derive(Debug, Default)]
pub(super) struct Drops(Mutex<Vec<Instant>>);

impl Drops {
    fn push(&self, at: Instant) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(at);
    }

    /// The last drop, if any.
    pub(super) fn last(&self) -> Option<Instant> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .max()
            .copied()
    }
}

/// Runs every assignment of one worker on its own task. Aborting the returned task aborts them
/// all (the `JoinSet` that holds them is dropped), as a crash of the process would.
pub(super) fn serve(
    mut assignments: Assignments,
    work: Work,
    ledger: Arc<Ledger>,
    drops: Arc<Drops>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut tasks = JoinSet::new();
        loop {
            tokio::select! {
                next = assignments.next() => match next {
                    Some(assignment) => {
                        tasks.spawn(run(assignment, work, Arc::clone(&ledger), Arc::clone(&drops)));
                    }
                    None => break,
                },
                Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            }
        }
        while tasks.join_next().await.is_some() {}
    })
}

async fn run(assignment: Assignment, work: Work, ledger: Arc<Ledger>, drops: Arc<Drops>) {
    if work == Work::Entries {
        process(&assignment, &ledger).await;
    }
    if let Stop::Handover { .. } = assignment.stopped().await {
        drops.push(Instant::now());
    }
}

/// Batches of entries until the worker says stop; the batch in flight is finished first.
async fn process(assignment: &Assignment, ledger: &Ledger) {
    let committer = assignment.committer().clone();
    let partition = assignment.partition();
    let mut next = assignment.resume_at();
    while assignment.is_held() {
        for position in next..next + BATCH {
            if committer.dispatched(position).await.is_err() {
                return;
            }
        }
        tokio::time::sleep(WORK).await;
        for position in next..next + BATCH {
            if committer.completed(position).is_err() {
                return;
            }
            ledger.record(partition, position);
        }
        next += BATCH;
        tokio::select! {
            _ = assignment.stopped() => return,
            () = tokio::time::sleep(PAUSE) => {}
        }
    }
}
