//! A log source over an event table in SQLite, on [sqlx]: read a partition from a checkpoint
//! without ever skipping a committed entry. The embedded default's log, for the quick start,
//! the examples and services that keep their events in SQLite.
//!
//! [`SqliteSource`] implements [`Source`](checkpoint_core::source::Source): `read` a partition
//! from a position (inclusive) in position order, `wait` for new entries, `head` for lag.
//! [`append`](SqliteSource::append) writes an entry in a transaction of its own,
//! [`append_in`](SqliteSource::append_in) inside the caller's transaction (so an entry commits
//! with the state change it records).
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use checkpoint_core::source::Source;
//! use checkpoint_source_sqlite::SqliteSource;
//! use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool};
//!
//! let path = std::env::temp_dir().join(format!(
//!     "checkpoint-source-sqlite-doc-{}-{}.db",
//!     std::process::id(),
//!     std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos(),
//! ));
//! let options = SqliteConnectOptions::new()
//!     .filename(&path)
//!     .create_if_missing(true)
//!     .journal_mode(SqliteJournalMode::Wal);
//! let pool = SqlitePool::connect_with(options).await.unwrap();
//!
//! let source = SqliteSource::new(pool, 4).with_table("orders_log")?;
//! source.migrate().await?;
//! source.append(2, Some("order-17"), b"created").await?;
//! source.append(2, Some("order-17"), b"paid").await?;
//!
//! // A subscription resumes at its checkpoint (the first position not completed).
//! let checkpoint = 0;
//! let page = source.read(2, checkpoint, 100).await?;
//! assert_eq!(page.entries.len(), 2);
//! assert_eq!(page.entries[1].payload, b"paid");
//! assert_eq!(source.head(2).await?, Some(page.entries[1].position));
//! // Nothing new yet: `wait` would now block until the next append (here or in another
//! // process), so bound it.
//! let waited = tokio::time::timeout(std::time::Duration::from_millis(100), source.wait(2, page.next)).await;
//! assert!(waited.is_err());
//!
//! source.pool().close().await;
//! # for suffix in ["", "-wal", "-shm"] {
//! #     let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
//! # }
//! # Ok::<(), checkpoint_core::source::SourceError>(())
//! # }).unwrap();
//! ```
//!
//! # Schema
//!
//! [`SqliteSource::migrate`] creates (unless they exist) the event table and a meta table
//! holding the partition count (`{table}` is the quoted table name, `"events"` unless
//! [`with_table`](SqliteSource::with_table) says otherwise, `{meta}` the same name followed by
//! `_meta`), and stores the count the first time:
//!
#![doc = concat!("```sql\n", include_str!("../sql/schema.sql"), "```")]
//!
//! Positions start at 1 and are dense within a partition: [`append`](SqliteSource::append)
//! takes `MAX(position) + 1` of the partition, inside the writing transaction:
//!
//! ```sql
//! INSERT INTO {table} (partition, position, key, payload, appended_at)
//! SELECT ?1, COALESCE(MAX(position), 0) + 1, ?2, ?3, <now in ms> FROM {table} WHERE partition = ?1
//! RETURNING position
//! ```
//!
//! A read is `WHERE partition = ? AND position >= ? ORDER BY position LIMIT ?`, on the primary
//! key; `head` is `MAX(position)` of the partition, and `heads` the same for every partition
//! asked in one statement (a correlated `MAX` per element of a JSON array: one seek to the end
//! of each partition in the primary key), so from one snapshot: atomic across partitions.
//!
//! # Why no committed entry is ever skipped
//!
//! The clause (CONTRACT.md, "Sources"): once a read returned `next = n`, no entry below `n`
//! that the reads did not return ever appears later. It holds because **positions commit in
//! order**:
//!
//! 1. SQLite has one write lock per database file, across connections and processes. A
//!    transaction holds it from its first write to its commit or rollback; the helpers begin
//!    with `BEGIN IMMEDIATE`, which takes it at once.
//! 2. The position is computed by the `INSERT` itself, under that lock, from the partition's
//!    rows as the writer sees them; and a writer sees every committed row, since in WAL mode a
//!    transaction whose snapshot is older than the last commit cannot write at all
//!    (`SQLITE_BUSY_SNAPSHOT`).
//! 3. So a transaction that takes position `p` of a partition commits (or rolls back) before
//!    any other can take `p + 1`: no position is ever committed below one already committed.
//!    A rolled-back position is taken again by the next append, never left as a gap that could
//!    fill later.
//! 4. A read is one statement, on one snapshot of the database: a prefix of the commit order,
//!    hence of each partition's positions. `next` is the position after the last entry read
//!    (`from` on an empty page), and every entry committed later has a higher position.
//!
//! PostgreSQL's sequences lack step 3 (a sequence value is taken at insert and becomes visible
//! at commit, so positions commit out of order); SQLite's single writer gives it for free.
//! The clause assumes every entry is written by `append`, `append_in` or the same statement:
//! a row inserted with a position of its own choosing can land below what a reader read. The
//! tests show it with several processes appending to one file while a reader checks every
//! read, and with the source kit of `checkpoint-conformance`.
//!
//! # Waking
//!
//! SQLite has no notification between processes. `wait` resolves at once when a read from
//! `from` would return something; otherwise it sleeps until an append through this process's
//! helpers (at once) or until the poll interval ([`DEFAULT_POLL_INTERVAL`], 50 ms;
//! [`with_poll_interval`](SqliteSource::with_poll_interval)) passes, and then asks `PRAGMA
//! data_version` on one connection kept for that: it changes only when another connection
//! committed, so at rest a poll reads no table. After [`append_in`](SqliteSource::append_in)
//! in your own transaction, [`notify_appended`](SqliteSource::notify_appended) wakes this
//! process's readers at once.
//!
//! # Partitions that grow
//!
//! The partition count is a configuration the writers can raise: it lives in the meta table,
//! and an entry belongs to the partition number it was appended to, whatever the count, so
//! raising it moves nothing. [`grow_to`](SqliteSource::grow_to) raises it (one `UPDATE ...
//! WHERE value < n` under the write lock; never lowers it); a new partition starts empty, its
//! positions from 1, and is read from its start.
//! [`discover_partitions`](checkpoint_core::source::Source::discover_partitions) reads the
//! count (one `SELECT` of the meta table) and raises the source's; a subscription calls it
//! every discovery interval and leases the new partitions without a restart. An append to a
//! partition beyond the count known is refused before any I/O, as any bad input: a writer of
//! another process calls `discover_partitions` once the log grew. A source opened with fewer
//! partitions than the log has takes the stored count at its first call.
//!
//! # Errors
//!
//! A missing table is [`SourceError::Setup`](checkpoint_core::source::SourceError::Setup)
//! saying to call `migrate()`; a source opened with more partitions than the table has is
//! `Setup` naming both counts and `grow_to`; both are checked once per source, before its
//! first read. A stored count lowered by hand is `Setup` at the next look-up, and the source
//! keeps the count it knew. Bad input (a
//! partition out of range, `max` = 0, `from` above `i64::MAX`) is refused before any I/O.
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod error;
mod growth;
mod read;
mod source;
mod table;
mod writer;

use std::time::Duration;

pub use source::SqliteSource;

/// The backend's name in errors.
pub const BACKEND: &str = "sqlite";

/// The event table's name unless [`SqliteSource::with_table`] says otherwise.
pub const DEFAULT_TABLE: &str = "events";

/// How long [`SqliteSource::open`]'s connections wait for another writer's lock before an
/// append fails (retryable).
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// How often `wait` looks for other processes' appends unless
/// [`SqliteSource::with_poll_interval`] says otherwise.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(50);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_table_name_is_valid() {
        assert!(table::Statements::for_table(DEFAULT_TABLE).is_ok());
    }
}
