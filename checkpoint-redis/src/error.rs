//! How client errors become [`checkpoint_core::Error`], deciding whether a retry may help, and
//! the error source only this backend has ([`ReplicaAckError`]). A stored value this store never
//! writes is a [`checkpoint_core::UnexpectedValue`] (read back in `layout.rs`).

use std::fmt;
use std::time::Duration;

use checkpoint_core::{Error, Operation, UnexpectedValue};
use redis::{ErrorKind, RedisError, RetryMethod};

use crate::BACKEND;

/// A client error as [`Error::Backend`], its source kept.
///
/// Retryable unless the client says the same request can never succeed (`NoRetry`: a script
/// error, a wrong type, a refused command) or authentication failed (retrying with the same
/// credentials cannot help). I/O errors, dropped connections, `LOADING`, `TRYAGAIN`, failover
/// redirects and `READONLY` after a failover are retryable.
pub(crate) fn backend(operation: Operation, error: RedisError) -> Error {
    let retryable = !matches!(error.kind(), ErrorKind::AuthenticationFailed)
        && !matches!(error.retry_method(), RetryMethod::NoRetry);
    Error::backend(BACKEND, operation, retryable, error)
}

/// A value read back that this store cannot have written (see `layout.rs`), as the
/// non-retryable error of `operation`: retrying reads the same value again.
pub(crate) fn unexpected(operation: Operation) -> impl FnOnce(UnexpectedValue) -> Error {
    move |value| value.into_error(BACKEND, operation)
}

/// Fewer replicas acknowledged a write than
/// [`with_replica_ack`](crate::RedisCheckpointStore::with_replica_ack) asks for.
///
/// The write is applied on the primary; it is only less durable than asked: a failover before
/// it reaches a replica may lose it. It is the source of a retryable [`Error::Backend`];
/// retrying is safe because every write of this store is idempotent or a compare-and-set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaAckError {
    /// The replicas asked for.
    pub requested: u32,
    /// The replicas that acknowledged within the timeout.
    pub acknowledged: u64,
    /// The `WAIT` timeout.
    pub timeout: Duration,
}

impl fmt::Display for ReplicaAckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "only {} of the {} requested replicas acknowledged the write within {:?}; it is \
             applied on the primary, but a failover before it reaches a replica may lose it",
            self.acknowledged, self.requested, self.timeout
        )
    }
}

impl std::error::Error for ReplicaAckError {}
