//! How client errors become [`checkpoint_core::Error`], and this crate's own error sources.

use std::fmt;
use std::time::Duration;

use checkpoint_core::{Error, Operation};
use redis::{ErrorKind, RedisError, RetryMethod};

/// The backend name in every [`Error::Backend`] and [`Error::Timeout`] of this crate.
pub const BACKEND: &str = "redis";

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

/// The server answered with data this store never writes: a foreign field or value in a
/// checkpoint hash, or a script reply of an unexpected shape.
///
/// The source of a non-retryable [`Error::Backend`]: something else writes into this store's
/// keys (choose another [`key prefix`](crate::RedisCheckpointStore::with_key_prefix)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnexpectedData {
    pub(crate) what: String,
}

impl UnexpectedData {
    pub(crate) fn new(what: impl Into<String>) -> Self {
        Self { what: what.into() }
    }
}

impl fmt::Display for UnexpectedData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unexpected data in the checkpoint store: {}", self.what)
    }
}

impl std::error::Error for UnexpectedData {}

/// [`UnexpectedData`] as a non-retryable [`Error::Backend`].
pub(crate) fn unexpected(operation: Operation, what: impl Into<String>) -> Error {
    Error::backend(BACKEND, operation, false, UnexpectedData::new(what))
}
