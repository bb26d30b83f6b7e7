//! What happened in a run, as the application and the store wrappers saw it: the checker's
//! evidence for the handover invariant (5), beside what it samples at every tick.

use std::sync::{Mutex, MutexGuard, PoisonError};

use tokio::time::Instant;

/// An assignment the application received.
#[derive(Debug, Clone)]
pub struct Acquired {
    pub worker: usize,
    pub partition: u32,
    pub epoch: u64,
    pub resume_at: u64,
    pub at: Instant,
}

/// The end of a graceful handover, as the application saw it: its in-flight entries completed,
/// the gap-free position it stopped at, and when it dropped the assignment.
#[derive(Debug, Clone)]
pub struct Final {
    pub worker: usize,
    pub partition: u32,
    pub epoch: u64,
    pub position: u64,
    pub dropped_at: Instant,
    pub drain_deadline: Instant,
    /// Errors the worker's store had injected when the assignment was dropped.
    pub injected: u64,
    /// How long a checkpoint write of the worker took, there and back, when the assignment was
    /// dropped.
    pub write_ms: u64,
}

/// A lease release the store executed (only the partitions it released).
#[derive(Debug, Clone)]
pub struct Release {
    pub worker: usize,
    pub partition: u32,
    pub at: Instant,
    /// Errors the worker's store had injected by then.
    pub injected: u64,
    /// How long a checkpoint write of the worker took then, there and back.
    pub write_ms: u64,
}

/// A `Stop::Lost` the application received.
#[derive(Debug, Clone)]
pub struct Loss {
    pub worker: usize,
    pub partition: u32,
    pub at: Instant,
}

/// A checkpoint save the store executed (by any worker: a save above a drained position is
/// a late one whoever made it).
#[derive(Debug, Clone)]
pub struct Save {
    pub partition: u32,
    pub position: u64,
    pub at: Instant,
}

/// Everything recorded so far, in the order it happened.
#[derive(Debug, Default)]
pub struct Events {
    pub acquired: Vec<Acquired>,
    pub finals: Vec<Final>,
    pub releases: Vec<Release>,
    pub saves: Vec<Save>,
    pub losses: Vec<Loss>,
}

/// The shared record of a run.
#[derive(Debug, Default)]
pub struct Record {
    events: Mutex<Events>,
}

impl Record {
    pub fn lock(&self) -> MutexGuard<'_, Events> {
        self.events.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
