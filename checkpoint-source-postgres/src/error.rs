//! Turning sqlx errors into [`SourceError`], deciding honestly whether a retry may help.

use std::future::Future;
use std::time::Duration;

use checkpoint_core::source::SourceError;

use crate::BACKEND;

/// A sqlx error as [`SourceError::Backend`], with the sqlx error as its source.
pub(crate) fn backend(operation: &'static str, error: sqlx::Error) -> SourceError {
    SourceError::Backend {
        backend: BACKEND,
        operation,
        retryable: is_retryable(&error),
        source: Box::new(error),
    }
}

/// A write's sqlx error: the `{table}_limit` trigger's refusal of a transaction past 2^20
/// entries in a partition as [`SourceError::Setup`] with the server's message (which names the
/// limit, the partition and what to do; retrying cannot help), any other as [`backend`].
pub(crate) fn write_error(operation: &'static str, error: sqlx::Error) -> SourceError {
    match error.as_database_error() {
        Some(database)
            if database.code().as_deref() == Some(crate::position::TOO_MANY_ENTRIES_SQLSTATE) =>
        {
            setup(database.message().to_owned())
        }
        _ => backend(operation, error),
    }
}

/// Whether the same call may succeed later: a lost or refused connection, an exhausted pool,
/// a server shutting down or short of resources, a cancelled statement. Not what fails again
/// the same way (a missing table, a refused permission, a misconfiguration).
fn is_retryable(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Io(io) => !matches!(
            io.kind(),
            std::io::ErrorKind::InvalidData
                | std::io::ErrorKind::InvalidInput
                | std::io::ErrorKind::Unsupported
                | std::io::ErrorKind::PermissionDenied
        ),
        sqlx::Error::PoolTimedOut | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(database) => database.code().is_some_and(|code| {
            // SQLSTATE classes and codes, see the PostgreSQL manual's appendix A.
            code.starts_with("08") // connection exception
                || code.starts_with("53") // insufficient resources
                || matches!(
                    &*code,
                    "40001" | "40P01" | "55P03" | "57014" | "57P01" | "57P02" | "57P03"
                )
        }),
        _ => false,
    }
}

/// Runs `request`, failing it with [`SourceError::Timeout`] after `limit` when there is one.
pub(crate) async fn within<T>(
    operation: &'static str,
    limit: Option<Duration>,
    request: impl Future<Output = Result<T, SourceError>>,
) -> Result<T, SourceError> {
    let Some(after) = limit else {
        return request.await;
    };
    tokio::time::timeout(after, request)
        .await
        .unwrap_or(Err(SourceError::Timeout {
            backend: BACKEND,
            operation,
            after,
        }))
}

/// A [`SourceError::Setup`] of this backend.
pub(crate) fn setup(message: String) -> SourceError {
    SourceError::Setup {
        backend: BACKEND,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lost_connections_are_retryable_configuration_is_not() {
        let io = sqlx::Error::Io(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "reset",
        ));
        assert!(backend("read", io).is_retryable());
        assert!(backend("read", sqlx::Error::PoolTimedOut).is_retryable());
        assert!(!backend("read", sqlx::Error::PoolClosed).is_retryable());
    }
}
