//! How SQLite and sqlx failures become [`SourceError`].

use checkpoint_core::source::SourceError;

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

/// Whether the same call may succeed later: a lock held too long, an I/O error, a full disk, a
/// WAL race, a pool that timed out. A missing table or a malformed database repeats.
fn is_retryable(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(database) => database
            .code()
            .and_then(|code| code.parse::<i32>().ok())
            .is_some_and(|code| {
                matches!(
                    code & 0xff,
                    SQLITE_BUSY | SQLITE_LOCKED | SQLITE_IOERR | SQLITE_FULL | SQLITE_PROTOCOL
                )
            }),
        _ => false,
    }
}

/// A sqlx failure during `operation`, with the sqlx error as its source; a table that is not
/// there is a [`SourceError::Setup`] naming what to do.
pub(crate) fn backend(operation: &'static str, table: &str, error: sqlx::Error) -> SourceError {
    if let sqlx::Error::Database(database) = &error
        && database.message().contains("no such table")
    {
        return missing_table(table);
    }
    SourceError::Backend {
        backend: BACKEND,
        operation,
        retryable: is_retryable(&error),
        source: Box::new(error),
    }
}

/// The event table (or its meta table) is not there.
pub(crate) fn missing_table(table: &str) -> SourceError {
    SourceError::Setup {
        backend: BACKEND,
        message: format!(
            "the event table \"{table}\" (or its meta table \"{table}_meta\") does not exist: \
             call `SqliteSource::migrate()` once to create them"
        ),
    }
}

/// The stored partition count is below the source's.
pub(crate) fn other_partition_count(table: &str, stored: u32, ours: u32) -> SourceError {
    SourceError::Setup {
        backend: BACKEND,
        message: format!(
            "the event table \"{table}\" has {stored} partitions (its meta table says), but this \
             source has {ours}: open it with {stored}, or grow the log to {ours} first with \
             `SqliteSource::grow_to({ours})` (a count only grows: entries stay in the partition \
             they were appended to)"
        ),
    }
}

/// The stored partition count went below one this source knew: something lowered it by hand.
pub(crate) fn count_went_down(table: &str, stored: u32, known: u32) -> SourceError {
    SourceError::Setup {
        backend: BACKEND,
        message: format!(
            "the meta table of \"{table}\" now says {stored} partitions, after {known}: a \
             partition count never decreases (partitions {stored}..{known} may hold entries); \
             set it back to {known} (`UPDATE \"{table}_meta\" SET value = {known} WHERE name = \
             'partitions'`)"
        ),
    }
}
