//! Turning async-nats errors into [`SourceError`]s that keep their source.

use std::future::Future;
use std::time::Duration;

use checkpoint_core::source::SourceError;

/// The backend name every error of this crate carries.
pub(crate) const BACKEND: &str = "nats";

/// A failed request to the server, with the client library's error as its source. Requests
/// of a source change nothing (reads) or are retried by the caller knowingly (appends), so a
/// failure is retryable unless the caller says otherwise.
pub(crate) fn backend(
    operation: &'static str,
    retryable: bool,
    error: impl std::error::Error + Send + Sync + 'static,
) -> SourceError {
    SourceError::Backend {
        backend: BACKEND,
        operation,
        retryable,
        source: Box::new(error),
    }
}

/// A setup problem: what was found and what to do about it.
pub(crate) fn setup(message: impl Into<String>) -> SourceError {
    SourceError::Setup {
        backend: BACKEND,
        message: message.into(),
    }
}

/// An error the source found itself (not the client's): a message it cannot read, a
/// delivery that went missing.
#[derive(Debug)]
pub(crate) struct Unexpected(pub(crate) String);

impl std::fmt::Display for Unexpected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unexpected {}

/// Runs `request` within `limit`; when the limit elapses first the request is dropped and the
/// call fails with [`SourceError::Timeout`].
pub(crate) async fn within<T>(
    operation: &'static str,
    limit: Duration,
    request: impl Future<Output = Result<T, SourceError>>,
) -> Result<T, SourceError> {
    tokio::time::timeout(limit, request)
        .await
        .unwrap_or(Err(SourceError::Timeout {
            backend: BACKEND,
            operation,
            after: limit,
        }))
}

/// [`backend`] for the client's boxed errors (`async_nats::Error`).
pub(crate) fn boxed(
    operation: &'static str,
    retryable: bool,
    error: Box<dyn std::error::Error + Send + Sync + 'static>,
) -> SourceError {
    SourceError::Backend {
        backend: BACKEND,
        operation,
        retryable,
        source: error,
    }
}
