//! How MySQL, MariaDB and sqlx failures become [`checkpoint_core::Error`].

use checkpoint_core::{Error, Operation};
use sqlx::mysql::MySqlDatabaseError;

use crate::BACKEND;

// Server error numbers, from MySQL's and MariaDB's error references.
/// Too many connections.
const ER_CON_COUNT_ERROR: u16 = 1040;
/// The server is shutting down.
const ER_SERVER_SHUTDOWN: u16 = 1053;
/// A lock wait outlasted `innodb_lock_wait_timeout`.
const ER_LOCK_WAIT_TIMEOUT: u16 = 1205;
/// InnoDB chose this transaction as a deadlock's victim and rolled it back.
const ER_LOCK_DEADLOCK: u16 = 1213;
/// A stored procedure of that name exists (`CREATE PROCEDURE`).
const ER_SP_ALREADY_EXISTS: u16 = 1304;
/// The server is read-only (`--read-only`, often a replica during a failover).
const ER_OPTION_PREVENTS_STATEMENT: u16 = 1290;
/// The statement was interrupted (`KILL QUERY`).
const ER_QUERY_INTERRUPTED: u16 = 1317;
/// The connection was killed (MariaDB: `KILL`).
const ER_CONNECTION_KILLED: u16 = 1927;
/// The server has gone away, or the connection was lost during a statement (client errors a
/// proxy may relay).
const CR_SERVER_GONE_ERROR: u16 = 2006;
const CR_SERVER_LOST: u16 = 2013;

/// The server's error number of a database error.
fn error_number(error: &sqlx::Error) -> Option<u16> {
    match error {
        sqlx::Error::Database(database) => database
            .try_downcast_ref::<MySqlDatabaseError>()
            .map(MySqlDatabaseError::number),
        _ => None,
    }
}

/// Whether InnoDB rolled the transaction back as a deadlock's victim: running it again is
/// what InnoDB's documentation says to do.
pub(crate) fn is_deadlock(error: &Error) -> bool {
    let Error::Backend { source, .. } = error else {
        return false;
    };
    source.downcast_ref::<sqlx::Error>().and_then(error_number) == Some(ER_LOCK_DEADLOCK)
}

/// Whether `CREATE PROCEDURE` failed because a routine of that name exists.
pub(crate) fn is_existing_routine(error: &sqlx::Error) -> bool {
    error_number(error) == Some(ER_SP_ALREADY_EXISTS)
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

/// Whether the same call may succeed later.
///
/// Retryable: a lost or killed connection (I/O, but not a certificate that fails
/// verification), a pool that timed out, too many connections,
/// a server shutting down or read-only, a lock wait timeout, a deadlock, an interrupted
/// statement. Everything else (a missing table, a denied privilege, a value that does not
/// decode) repeats on retry.
fn is_retryable(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Io(io) => transient_io(io),
        sqlx::Error::PoolTimedOut | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(_) => error_number(error).is_some_and(|number| {
            matches!(
                number,
                ER_CON_COUNT_ERROR
                    | ER_SERVER_SHUTDOWN
                    | ER_LOCK_WAIT_TIMEOUT
                    | ER_LOCK_DEADLOCK
                    | ER_OPTION_PREVENTS_STATEMENT
                    | ER_QUERY_INTERRUPTED
                    | ER_CONNECTION_KILLED
                    | CR_SERVER_GONE_ERROR
                    | CR_SERVER_LOST
            )
        }),
        _ => false,
    }
}

/// A sqlx failure during `operation`, with the sqlx error as its source.
pub(crate) fn backend(operation: Operation, error: sqlx::Error) -> Error {
    let retryable = is_retryable(&error);
    Error::backend(BACKEND, operation, retryable, error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_certificate_that_fails_verification_is_final_a_lost_connection_is_not() {
        let certificate = sqlx::Error::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "invalid peer certificate: BadSignature",
        ));
        assert!(!backend(Operation::Connect, certificate).is_retryable());
        let lost = sqlx::Error::Io(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
        assert!(backend(Operation::Save, lost).is_retryable());
        let reset = sqlx::Error::Io(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        assert!(backend(Operation::Save, reset).is_retryable());
    }
}
