//! The worker's error type.

use checkpoint_committer::CommitterError;
use checkpoint_core::Error;

/// What a [`Worker`](crate::Worker) refused or failed to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkerError {
    /// A setting or name no worker accepts (a group, subscription or worker id the store would
    /// refuse, no partitions, a renew interval that leaves no second try before the deadline).
    /// Nothing was started.
    #[error(transparent)]
    Invalid(Error),

    /// A setting that contradicts another one; the message says which.
    #[error("invalid worker settings: {0}")]
    Settings(String),

    /// A worker was started outside a tokio runtime.
    #[error("a worker needs a tokio runtime: start it from within one")]
    NoRuntime,

    /// The committer could not be started, or was given for another group.
    #[error(transparent)]
    Committer(#[from] CommitterError),

    /// The store refused to lease the subscription at all (it is retired): the worker stopped.
    #[error("the store refused the worker's leases")]
    Refused(#[source] Error),

    /// The worker had already stopped (after [`shutdown`](crate::Worker::shutdown), or the
    /// subscription was retired).
    #[error("the worker has stopped")]
    Stopped,

    /// Leaving the subscription (ending the heartbeat) failed at shutdown. Every partition was
    /// handed over or let go before; the heartbeat expires on its own after the lease duration.
    #[error("leaving the subscription failed; the heartbeat expires on its own")]
    Leave(#[source] Error),
}
