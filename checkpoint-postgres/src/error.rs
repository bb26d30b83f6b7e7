//! Turning sqlx errors into the workspace's [`Error`], deciding honestly whether a retry may help.
//!
//! A value read back that no store writes is not a sqlx error: `layout` reports it as
//! a `checkpoint_core::UnexpectedValue`.

use checkpoint_core::{Error, Operation};

use crate::BACKEND;

/// A sqlx error as the workspace's [`Error::Backend`], with the sqlx error as its source.
pub(crate) fn backend(operation: Operation, error: sqlx::Error) -> Error {
    let retryable = is_retryable(&error);
    Error::backend(BACKEND, operation, retryable, error)
}

/// Whether the same call may succeed later.
///
/// Yes for a lost or refused connection (but not for an I/O error that says the peer's data
/// was wrong, such as a TLS certificate that fails verification), an exhausted pool, a server shutting down or short of
/// resources, a cancelled statement, a lock timeout, a deadlock or serialisation failure. No
/// for what will fail again the same way: a missing table, a refused permission, a violated
/// constraint, a misconfiguration.
fn is_retryable(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Io(io) => transient_io(io),
        sqlx::Error::PoolTimedOut | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(database) => database.code().is_some_and(|code| {
            // SQLSTATE classes and codes, see the PostgreSQL manual's appendix A.
            code.starts_with("08") // connection exception
                || code.starts_with("53") // insufficient resources
                || matches!(
                    &*code,
                    "40001" // serialization_failure
                        | "40P01" // deadlock_detected
                        | "55P03" // lock_not_available
                        | "57014" // query_canceled (statement_timeout)
                        | "57P01" // admin_shutdown
                        | "57P02" // crash_shutdown
                        | "57P03" // cannot_connect_now
                )
        }),
        _ => false,
    }
}

/// Whether the server refused an insert for a key that exists (SQLSTATE 23505,
/// unique_violation): for `start_at`, a checkpoint that a concurrent save created.
pub(crate) fn is_unique_violation(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Database(database) => database.code().is_some_and(|code| code == "23505"),
        _ => false,
    }
}

/// Whether `error` says the connection itself was lost (I/O failure, or the server
/// terminating the session), as opposed to a failure of the statement.
pub(crate) fn connection_lost(error: &Error) -> bool {
    let Error::Backend { source, .. } = error else {
        return false;
    };
    match source.downcast_ref::<sqlx::Error>() {
        Some(sqlx::Error::Io(io)) => transient_io(io),
        Some(sqlx::Error::Database(database)) => database.code().is_some_and(|code| {
            code.starts_with("08") // connection exception
                || matches!(&*code, "57P01" | "57P02" | "57P03") // server shutting down
        }),
        _ => false,
    }
}

/// Whether an I/O error is one of the network's (reset, refused, timed out, ...) rather than
/// a refusal that will repeat: sqlx reports a TLS certificate that fails verification as an
/// I/O error of kind `InvalidData`, and a retry meets the same certificate.
fn transient_io(error: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    !matches!(
        error.kind(),
        ErrorKind::InvalidData
            | ErrorKind::InvalidInput
            | ErrorKind::Unsupported
            | ErrorKind::PermissionDenied
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_and_pool_timeouts_are_retryable_configuration_is_not() {
        let io = sqlx::Error::Io(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "reset",
        ));
        assert!(backend(Operation::Save, io).is_retryable());
        assert!(backend(Operation::Save, sqlx::Error::PoolTimedOut).is_retryable());
        assert!(!backend(Operation::Save, sqlx::Error::PoolClosed).is_retryable());
        assert!(!backend(Operation::Load, sqlx::Error::RowNotFound).is_retryable());
        // How sqlx reports a server certificate that fails verification.
        let certificate = sqlx::Error::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "invalid peer certificate: UnknownIssuer",
        ));
        let error = backend(Operation::Connect, certificate);
        assert!(!error.is_retryable());
        assert!(!connection_lost(&error));
    }
}
