//! The application: one reader per assignment. It dispatches positions from `resume_at()`
//! upward, checking `is_held()` before each (a zombie keeps checking and stops dispatching),
//! completes each after a short virtual delay, and on `Stop::Handover` stops dispatching, lets
//! its in-flight entries complete, records the gap-free position it stopped at and drops the
//! assignment; on `Stop::Lost` it stops at once, and records the loss.

use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use checkpoint_worker::{Assignment, Assignments, Stop};
use tokio::task::{AbortHandle, JoinSet};
use tokio::time::Instant;

use super::record::{Acquired, Final, Loss, Record};
use super::store::Faults;

/// A dispatch every this often per partition.
pub const DISPATCH_EVERY: Duration = Duration::from_millis(20);
/// Each entry completes this long after its dispatch (longer than a dispatch, so a handover
/// usually finds entries in flight).
pub const COMPLETE_AFTER: Duration = Duration::from_millis(35);

/// An assignment the application holds, seen by the checker without keeping it alive.
#[derive(Debug)]
pub struct Live {
    pub worker: usize,
    pub partition: u32,
    pub assignment: Weak<Assignment>,
}

/// Every assignment handed out, for the checker (dead ones are pruned as it goes).
#[derive(Debug, Default)]
pub struct Registry {
    live: Mutex<Vec<Live>>,
}

impl Registry {
    /// `(worker, partition)` of every live assignment that says it is held now.
    pub fn held(&self) -> Vec<(usize, u32)> {
        let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        live.retain(|entry| entry.assignment.strong_count() > 0);
        live.iter()
            .filter(|entry| {
                entry
                    .assignment
                    .upgrade()
                    .is_some_and(|assignment| assignment.is_held())
            })
            .map(|entry| (entry.worker, entry.partition))
            .collect()
    }

    fn add(&self, entry: Live) {
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(entry);
    }
}

/// What the application of one worker needs.
#[derive(Clone)]
pub struct App {
    pub worker: usize,
    pub registry: Arc<Registry>,
    pub record: Arc<Record>,
    pub faults: Arc<Faults>,
    /// The worker's application tasks, aborted when it crashes.
    pub tasks: Arc<Mutex<Vec<AbortHandle>>>,
}

impl App {
    /// Receives the worker's assignments and runs a reader for each.
    pub fn serve(self, mut assignments: Assignments) {
        let tasks = Arc::clone(&self.tasks);
        let receiver = tokio::spawn(async move {
            while let Some(assignment) = assignments.next().await {
                let assignment = Arc::new(assignment);
                self.registry.add(Live {
                    worker: self.worker,
                    partition: assignment.partition(),
                    assignment: Arc::downgrade(&assignment),
                });
                self.record.lock().acquired.push(Acquired {
                    worker: self.worker,
                    partition: assignment.partition(),
                    epoch: assignment.epoch(),
                    resume_at: assignment.resume_at(),
                    at: Instant::now(),
                });
                let reader = tokio::spawn(self.clone().read(assignment));
                self.lock_tasks().push(reader.abort_handle());
            }
        });
        tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(receiver.abort_handle());
    }

    /// Aborts every task of the application, as a crash would.
    pub fn abort(&self) {
        for task in self.lock_tasks().drain(..) {
            task.abort();
        }
    }

    fn lock_tasks(&self) -> std::sync::MutexGuard<'_, Vec<AbortHandle>> {
        self.tasks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// One reader: dispatch until stopped, then drain (handover) or stop at once (lost).
    async fn read(self, assignment: Arc<Assignment>) {
        let committer = assignment.committer().clone();
        let mut next = assignment.resume_at();
        // Dropping the set (a crash aborts this task) aborts the handlers too.
        let mut in_flight = JoinSet::new();
        let stop = loop {
            if let Some(stop) = assignment.stop() {
                break stop;
            }
            // A zombie finds out here, before it acts, and keeps checking.
            if assignment.is_held() {
                if committer.dispatched(next).await.is_err() {
                    break Stop::Lost;
                }
                let (handler, position) = (committer.clone(), next);
                in_flight.spawn(async move {
                    tokio::time::sleep(COMPLETE_AFTER).await;
                    let _ = handler.completed(position);
                });
                next += 1;
            }
            while in_flight.try_join_next().is_some() {}
            tokio::select! {
                _ = assignment.stopped() => {}
                () = tokio::time::sleep(DISPATCH_EVERY) => {}
            }
        };
        if let Stop::Handover { drain_deadline } = stop {
            while in_flight.join_next().await.is_some() {}
            self.record.lock().finals.push(Final {
                worker: self.worker,
                partition: assignment.partition(),
                epoch: assignment.epoch(),
                position: committer.gap_free(),
                dropped_at: Instant::now(),
                drain_deadline,
                injected: self.faults.injected(),
                write_ms: self.faults.write_ms(),
            });
        } else {
            self.record.lock().losses.push(Loss {
                worker: self.worker,
                partition: assignment.partition(),
                at: Instant::now(),
            });
        }
        drop(assignment);
    }
}
