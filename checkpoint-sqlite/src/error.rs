//! How SQLite and sqlx failures become [`checkpoint_core::Error`].

use checkpoint_core::{Error, Operation};

use crate::BACKEND;

// Primary SQLite result codes (the low byte of an extended code), from sqlite3.h.
/// Another connection holds a lock the busy timeout did not outwait.
const SQLITE_BUSY: i32 = 5;
/// A conflict inside one connection's shared cache.
const SQLITE_LOCKED: i32 = 6;
/// The operating system reported an I/O error.
const SQLITE_IOERR: i32 = 10;
/// The disk is full: may succeed once space is freed.
const SQLITE_FULL: i32 = 13;
/// A race in the WAL locking protocol; SQLite's own documentation says to retry.
const SQLITE_PROTOCOL: i32 = 15;

/// The SQLite result code of a database error, extended (as sqlx reports it).
fn sqlite_code(error: &sqlx::Error) -> Option<i32> {
    match error {
        sqlx::Error::Database(database) => database.code()?.parse().ok(),
        _ => None,
    }
}

/// Whether SQLite reported `SQLITE_BUSY` (or `SQLITE_LOCKED`): another connection held the lock
/// for longer than the busy timeout.
pub(crate) fn is_busy(error: &sqlx::Error) -> bool {
    sqlite_code(error).is_some_and(|code| matches!(code & 0xff, SQLITE_BUSY | SQLITE_LOCKED))
}

/// Whether the same call may succeed later.
///
/// Retryable: a lock held too long by another writer (busy, locked), an I/O error, a full disk,
/// a WAL protocol race, an I/O error or crashed worker thread in sqlx, a pool that timed out.
/// Everything else (a missing table, a malformed database, a closed pool, a value that does not
/// decode) repeats on retry.
fn is_retryable(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(_) => sqlite_code(error).is_some_and(|code| {
            matches!(
                code & 0xff,
                SQLITE_BUSY | SQLITE_LOCKED | SQLITE_IOERR | SQLITE_FULL | SQLITE_PROTOCOL
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
