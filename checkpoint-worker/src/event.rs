//! What reaches the lease keeper from the worker handle and the assignments.

use tokio::sync::oneshot;

use crate::WorkerError;

/// What reaches the keeper from the worker handle and the assignments.
#[derive(Debug)]
pub(crate) enum Event {
    /// The application dropped the assignment of `partition` under `epoch`.
    Dropped { partition: u32, epoch: u64 },
    /// Hand everything over, leave, and answer (if anyone waits).
    Shutdown(Option<oneshot::Sender<Result<(), WorkerError>>>),
    /// The partition count was raised: balance now rather than at the next round.
    Grown,
}
