//! A durable checkpoint store in one SQLite database file, on [sqlx].
//!
//! [`SqliteCheckpointStore`] implements [`CheckpointStore`](checkpoint_core::CheckpointStore)
//! and [`ExclusiveCheckpointStore`](checkpoint_core::ExclusiveCheckpointStore) with one SQL
//! statement per operation, safe for many tasks and several processes on the same file. It
//! suits a service that keeps its read models in SQLite too: the `*_in` methods run on the
//! caller's own connection or transaction, so a read model and its checkpoint commit together.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use checkpoint_core::{Checkpoint, CheckpointStore, ExclusiveCheckpointStore, Fingerprint};
//! use checkpoint_sqlite::SqliteCheckpointStore;
//!
//! let path = std::env::temp_dir().join(format!(
//!     "checkpoint-sqlite-doc-{}-{}.db",
//!     std::process::id(),
//!     std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos(),
//! ));
//! let store = SqliteCheckpointStore::open(&path).await?;
//! store.migrate().await?;
//!
//! // Monotonic checkpoints: a save only ever moves forward.
//! store
//!     .save_all("billing", &[Checkpoint::new("invoices", 0, 10), Checkpoint::new("invoices", 1, 7)])
//!     .await?;
//! store.save("billing", "invoices", 0, 3).await?; // a zombie's late save: changes nothing
//! assert_eq!(store.load("billing", "invoices", 0).await?, Some(10));
//!
//! // An exclusive checkpoint, advanced in the same transaction as the read model it covers.
//! let query = Fingerprint::from_bytes([7; 32]);
//! let from = store.claim("billing", "ledger", 0, query, 0).await?;
//! let mut tx = store.pool().begin().await.map_err(|e| checkpoint_core::Error::backend(
//!     "sqlite", checkpoint_core::Operation::Advance, false, e))?;
//! // ... write the read model with `&mut *tx` ...
//! store.advance_in(&mut tx, "billing", "ledger", 0, from, 25).await?;
//! tx.commit().await.map_err(|e| checkpoint_core::Error::backend(
//!     "sqlite", checkpoint_core::Operation::Advance, true, e))?;
//! assert_eq!(store.load("billing", "ledger", 0).await?, Some(25));
//!
//! store.pool().close().await;
//! # for suffix in ["", "-wal", "-shm"] {
//! #     let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
//! # }
//! # Ok::<(), checkpoint_core::Error>(())
//! # }).unwrap();
//! ```
//!
//! # Schema
//!
//! [`SqliteCheckpointStore::migrate`] creates this table (named `checkpoints` unless
//! [`with_table`](SqliteCheckpointStore::with_table) says otherwise) if it does not exist:
//!
//! ```sql
//! CREATE TABLE IF NOT EXISTS "checkpoints" (
//!     group_name        TEXT    NOT NULL,
//!     subscription      TEXT    NOT NULL,
//!     partition_id      INTEGER NOT NULL,
//!     position          INTEGER NOT NULL,
//!     query_fingerprint BLOB    NULL,
//!     updated_at        TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
//!     PRIMARY KEY (group_name, subscription, partition_id)
//! ) WITHOUT ROWID
//! ```
//!
//! - Names are `TEXT` compared with SQLite's default `BINARY` collation: byte for byte, so any
//!   two different valid names are different keys (NUL, the one character SQLite text cannot
//!   hold faithfully, is rejected by validation).
//! - `INTEGER` is a signed 64-bit integer: every valid position (`0..=i64::MAX`) and every
//!   `u32` partition is stored exactly.
//! - `query_fingerprint` is the 32-byte [`Fingerprint`](checkpoint_core::Fingerprint) of an
//!   exclusive checkpoint's query, `NULL` for a checkpoint only ever saved monotonically.
//! - `WITHOUT ROWID` keeps each row in the primary-key B-tree itself: one lookup per key.
//! - `updated_at` (UTC, ISO 8601) is for people reading the table; the store never reads it.
//!
//! # Statements per operation
//!
//! | operation | SQL |
//! | --- | --- |
//! | `save` | `INSERT .. ON CONFLICT DO UPDATE SET position = excluded.position WHERE position < excluded.position` |
//! | `save_all` | the same upsert over `json_each(?)`: the whole batch (deduplicated with [`highest_per_key`](checkpoint_core::batch::highest_per_key)) is one JSON text parameter, so one statement whatever its size |
//! | `load`, `list` | one `SELECT` |
//! | `claim` | `INSERT .. ON CONFLICT DO UPDATE SET query_fingerprint = COALESCE(query_fingerprint, excluded.query_fingerprint) RETURNING position, query_fingerprint` |
//! | `advance` | `UPDATE .. SET position = to WHERE .. AND position = from`; only when it changes no row, a `SELECT` on the same connection to report where the checkpoint is ([`Error::Moved`](checkpoint_core::Error::Moved)) |
//!
//! SQLite's `RETURNING` sees only the new row, so a failed compare-and-set cannot report the
//! old position from the same statement; the follow-up `SELECT` is local (there is no network
//! round trip to an embedded database) and only runs on the failure path.
//!
//! # Durability
//!
//! [`SqliteCheckpointStore::open`] uses the settings of
//! [`connect_options`](SqliteCheckpointStore::connect_options):
//!
//! - **WAL journal mode.** Readers never block the writer and the writer never blocks readers;
//!   a commit appends to the `-wal` file beside the database. Keep the `-wal` and `-shm`
//!   files with the database file: copying the database file alone can lose recent commits.
//! - **`synchronous = FULL`.** Each commit waits until the WAL is on disk, so a save that
//!   returned survives a crash of the process, of the operating system, or a power loss
//!   (provided the disk honours flushes). A crash can only lose a save that had not returned.
//!   `synchronous = NORMAL` is faster but lets an operating-system crash or power loss undo the
//!   last commits, moving checkpoints back to an earlier position; it is an opt-in through
//!   [`open_with`](SqliteCheckpointStore::open_with), never the default. A process crash alone
//!   loses nothing in either mode.
//! - A store over the caller's own pool ([`SqliteCheckpointStore::new`]) uses that pool's
//!   settings: configure them the same way for the same guarantees.
//!
//! # Several tasks and processes
//!
//! SQLite admits one writer at a time per database file. Every write here is a single
//! statement in autocommit mode, which takes the write lock for its own duration only; a
//! second writer waits for it up to the **busy timeout** (5 s by default) instead of failing, so
//! concurrent saves and batches, from tasks of one process or from several processes, take
//! turns. Each statement is atomic, so no interleaving can move a checkpoint back. A writer
//! that waits longer than the busy timeout gets a retryable error
//! ([`Error::is_retryable`](checkpoint_core::Error::is_retryable)).
//!
//! Several processes need the file on a local file system: WAL's shared memory does not work
//! over network file systems. A transaction of the caller that holds the write lock (see the
//! `*_in` methods) makes every other writer wait until it ends: keep such transactions short.
//!
//! # Errors
//!
//! Failures of sqlx or SQLite are [`Error::Backend`](checkpoint_core::Error::Backend) with the
//! sqlx error as `source`. They are retryable when the database was busy or locked, on I/O
//! errors, a full disk, a WAL protocol race, a crashed sqlx worker or a pool timeout; other
//! errors (a missing table, a corrupt file) are not.
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod error;
mod sql;
mod store;

pub use error::BACKEND;
pub use store::{
    DEFAULT_BUSY_TIMEOUT, DEFAULT_MAX_CONNECTIONS, DEFAULT_TABLE, SqliteCheckpointStore,
};
