//! A durable checkpoint store in one SQLite database file, on [sqlx].
//!
//! [`SqliteCheckpointStore`] implements [`CheckpointStore`](checkpoint_core::CheckpointStore)
//! and [`ExclusiveCheckpointStore`](checkpoint_core::ExclusiveCheckpointStore) with one SQL
//! statement per hot-path operation (the lease and admin operations are short transactions),
//! safe for many tasks and several processes on the same file, and
//! [`LeaseStore`](checkpoint_core::LeaseStore), partition leases judged by SQLite's clock
//! (see [Leases](#leases)), and [`ParkedStore`](checkpoint_core::parked::ParkedStore) (see
//! [Parked entries](#parked-entries)). It
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
//! [`SqliteCheckpointStore::migrate`] creates these five tables and an index, each if it does
//! not exist (`{table}` is the quoted table name, `"checkpoints"` unless
//! [`with_table`](SqliteCheckpointStore::with_table) says otherwise, and `{retired}`,
//! `{leases}`, `{leases_by_owner}`, `{lease_owners}` and `{parked}` the same name followed by
//! `_retired`, `_leases`, `_leases_by_owner`, `_lease_owners` and `_parked`):
//!
#![doc = concat!("```sql\n", include_str!("../sql/schema.sql"), "```")]
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
//! - `{retired}` holds one row, a tombstone, per retired subscription (see [Retired
//!   subscriptions](#retired-subscriptions)); `retired_at` is for people reading it. A file
//!   made before the tombstone table existed gets it from the next `migrate`.
//! - `{leases}` and `{lease_owners}` hold the [leases](#leases); a file made before they
//!   existed gets them from the next `migrate`, its checkpoints and tombstones untouched.
//! - `{parked}` holds the [parked entries](#parked-entries): `attempts` a `u32`,
//!   `parked_at_ms` milliseconds since the Unix epoch by the parking process's clock,
//!   `retry_requested` 0 or 1. A file made before it existed gets it from the next `migrate`,
//!   everything else untouched.
//!
//! # Costs
//!
//! One statement per operation of the hot path, whatever the size of a batch (a refused
//! `advance` adds a second); an embedded database has no network round trip to count:
//!
//! | operation | SQL |
//! | --- | --- |
//! | `save` | `INSERT .. ON CONFLICT DO UPDATE SET position = excluded.position WHERE position < excluded.position` |
//! | `save_all` | the same upsert over `json_each(?)`: the batch (deduplicated with [`highest_per_key`](checkpoint_core::batch::highest_per_key)) is one JSON text parameter |
//! | `load`, `list` | one `SELECT` |
//! | `claim` | `INSERT .. ON CONFLICT DO UPDATE SET query_fingerprint = COALESCE(query_fingerprint, excluded.query_fingerprint) RETURNING position, query_fingerprint` |
//! | `advance` | `UPDATE .. WHERE .. AND position = from`; only when it changes no row, a `SELECT` on the same connection for [`Error::Moved`](checkpoint_core::Error::Moved) |
//! | `groups`, `retired` | one `SELECT`, sorted |
//! | `start_at` | `BEGIN IMMEDIATE`; whether a tombstone or a checkpoint exists; if neither, one `INSERT` of every partition; `COMMIT` |
//! | `retire` | `BEGIN IMMEDIATE`; the tombstone; `DELETE` of the checkpoints; `COMMIT` |
//! | `purge` | `BEGIN IMMEDIATE`; whether a tombstone or a checkpoint exists; if a tombstone, it, any checkpoint left, and the subscription's leases and heartbeats deleted; `COMMIT` |
//! | `park` | `INSERT .. ON CONFLICT DO UPDATE` of the entry's record |
//! | `parked` | one `SELECT` by the group, in the primary key's order |
//! | `retry_parked`, `unpark` | one `UPDATE`, `DELETE` by the entry's key |
//!
//! The lease operations' costs are under [Leases](#leases).
//!
//! # Leases
//!
//! [`LeaseStore`](checkpoint_core::LeaseStore) keeps partition ownership beside the
//! checkpoints, in the same file:
//!
//! - `{leases}`: one row per (group, subscription, partition) ever leased. `owner` is the
//!   holder, `NULL` once released; `epoch` starts at 1 and grows by one at every grant to an
//!   owner that did not hold the lease live, and the row stays when the lease is released or
//!   expires, so an epoch is never handed out twice (until `purge`); `expires_at_ms` is when it
//!   expires; `handover_requested_by` the owner that asked for it. A lease is live while it
//!   has an owner and `expires_at_ms` is ahead of the clock. `{leases_by_owner}` finds an
//!   owner's leases without reading the subscription's others.
//! - `{lease_owners}`: one heartbeat per (group, subscription, owner), with its expiry: the
//!   live owners are those whose heartbeat has not expired.
//!
//! **One clock decides expiry: SQLite's, on the host that holds the file.** Every lease
//! operation reads the clock once, as integer milliseconds (`CAST(unixepoch('subsec') * 1000
//! AS INTEGER)`), in the statement that first needs it; a later statement of the same call
//! takes that instant from the heartbeat the first one wrote (its expiry less the duration), so
//! one instant judges every lease the call touches, and an expiry is that instant plus the
//! duration (rounded up to a millisecond). All processes sharing the file run on that host, so
//! they share that clock; no caller's clock is ever compared with another's. It is the host's
//! wall clock, as SQLite has no other: let it be slewed (NTP's default), not stepped, since a
//! step forward shortens every live lease by the step (a step back only lengthens them).
//!
//! The operations that write take the database's write lock before the clock is read: those of
//! several statements run in `BEGIN IMMEDIATE`, the others are one statement in autocommit,
//! which takes the lock when it starts. Acquirers in any task or process take turns, and
//! nothing they read changes before they write. `acquire` and `renew` check the tombstone
//! table in the same transaction ([`Error::Retired`](checkpoint_core::Error::Retired)); `purge`
//! of a retired subscription deletes its leases and heartbeats in its own.
//!
//! An embedded database has no round trip; its exchange is a **message to sqlx's worker
//! thread**, which runs the connection: each query (one statement, or several in one text,
//! which sqlx runs in turn with the one argument list), `BEGIN`, `COMMIT`, `ROLLBACK`, and the
//! pool's ping of the connection it hands out (sqlx's `test_before_acquire`, on by default) is
//! one message the caller waits for. Each lease operation sends the same messages whatever the
//! number of partitions or leases, refused or not (the `round_trips` tests count them, each
//! call's ping included):
//!
//! | operation | messages to the worker thread |
//! | --- | --- |
//! | `acquire` | `BEGIN IMMEDIATE`; one request: the heartbeat's upsert unless the subscription is retired, with the clock; an `UPDATE .. RETURNING` of the owner's live leases; an upsert of the partitions asked for over `json_each(?)`, granting only free or expired ones, `RETURNING` them; `COMMIT` (`ROLLBACK` when retired): 3, and the ping |
//! | `renew` | `BEGIN IMMEDIATE`; one request: the tombstone; the heartbeat's `UPDATE` if live, with the clock (none: [`Error::NotHeld`](checkpoint_core::Error::NotHeld)); an `UPDATE .. RETURNING` of the owner's live leases; `COMMIT` (`ROLLBACK` when refused): 3, and the ping, whatever their number (counted for 1 and 100) |
//! | `release`, `request_handover` | one `UPDATE` over `json_each(?)`, with the clock, in autocommit: 1, and the ping |
//! | `leave` | `BEGIN IMMEDIATE`; one request: the heartbeat's `DELETE`; one `UPDATE .. RETURNING`, with the clock; `COMMIT`: 3, and the ping |
//! | `leases` | one `SELECT` (one snapshot), with the clock: the live leases, then the live owners: 1, and the ping |
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use std::time::Duration;
//! use checkpoint_core::LeaseStore;
//! use checkpoint_sqlite::SqliteCheckpointStore;
//!
//! # let path = std::env::temp_dir().join(format!(
//! #     "checkpoint-sqlite-lease-doc-{}-{}.db",
//! #     std::process::id(),
//! #     std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos(),
//! # ));
//! let store = SqliteCheckpointStore::open(&path).await?;
//! store.migrate().await?;
//! let lease = Duration::from_secs(10);
//! let a = store.acquire("billing", "invoices", "worker-a", &[0, 1], lease).await?;
//! assert_eq!(a.granted.len(), 2);
//! let b = store.acquire("billing", "invoices", "worker-b", &[1, 2], lease).await?;
//! assert_eq!(b.refused, vec![1]); // worker-a holds it
//! assert_eq!(store.renew("billing", "invoices", "worker-a", lease).await?.len(), 2);
//! assert_eq!(store.leave("billing", "invoices", "worker-a").await?, vec![0, 1]);
//! # store.pool().close().await;
//! # for suffix in ["", "-wal", "-shm"] {
//! #     let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
//! # }
//! # Ok::<(), checkpoint_core::Error>(())
//! # }).unwrap();
//! ```
//!
//! # Parked entries
//!
//! [`ParkedStore`](checkpoint_core::parked::ParkedStore) keeps the entries a subscription's
//! handler failed on every retry in `{parked}`, one row per entry keyed by (group,
//! subscription, partition, position). Each operation is one statement in autocommit mode
//! (`sql/park.sql`, `parked.sql`, `retry_parked.sql`, `unpark.sql`): `park` is an upsert that
//! replaces the error, attempts and time of an entry parked already and clears its retry
//! request; `parked` reads the group in the primary key's order (subscriptions byte for byte:
//! the `BINARY` collation); `retry_parked` and `unpark` report whether they changed a row.
//! The records are independent of the checkpoints: `retire` and `purge` leave them.
//!
//! # Retired subscriptions
//!
//! The store implements [`CheckpointAdmin`](checkpoint_core::CheckpointAdmin), the
//! operations API. [`retire`](checkpoint_core::CheckpointAdmin::retire) writes a tombstone,
//! a row of `{retired}`, and deletes the subscription's checkpoints, in one write transaction.
//! Every statement that can create or move a checkpoint (`save`, `save_all`, `claim` and their
//! `*_in` forms) selects its row only `WHERE NOT EXISTS` a tombstone for its subscription, in
//! the same statement: no second statement, one primary-key probe of a small table. A save
//! under a retired name writes nothing and returns `Ok`; a claim returns no row, which the
//! store reports as [`Error::Retired`](checkpoint_core::Error::Retired); an advance finds no
//! row ([`Error::Moved`](checkpoint_core::Error::Moved) with nothing current).
//!
//! SQLite admits one writer at a time, and a statement reads the newest committed data when it
//! takes the write lock, so the tombstone check and the write are one atomic step: a save runs
//! wholly before a retire (and is deleted by it) or wholly after (and sees the tombstone), from
//! any task or process. `start_at`, `retire` and `purge` each run in one `BEGIN IMMEDIATE`
//! transaction, which takes the write lock before it reads: all-or-nothing, and what they
//! check cannot change before they write. A retire holds up other writers only for its own
//! short transaction.
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
//! SQLite admits one writer at a time per database file. Every write of a checkpoint here is a
//! single statement in autocommit mode, which takes the write lock for its own duration only
//! (`start_at`, `retire`, `purge` and the lease operations hold it for one short transaction); a
//! second writer waits for it up to the **busy timeout** ([`DEFAULT_BUSY_TIMEOUT`], 5 s)
//! instead of failing, so concurrent saves and batches, from tasks of one process or from
//! several processes, take turns. Each statement is atomic, so no interleaving can move a
//! checkpoint back. A writer that waits longer than the busy timeout gets a retryable error
//! ([`Error::is_retryable`](checkpoint_core::Error::is_retryable)).
//!
//! Several processes need the file on a local file system: WAL's shared memory does not work
//! over network file systems. A transaction of the caller that holds the write lock (see the
//! `*_in` methods) makes every other writer wait until it ends: keep such transactions short.
//! Inside a transaction `claim_in` and `advance_in` take the write lock and hold it until the
//! transaction ends. Inside a transaction begun with a plain `BEGIN` that has already read,
//! SQLite may fail `save_in` at once with `SQLITE_BUSY` (retryable) if another connection
//! wrote since that read; begin with `BEGIN IMMEDIATE` to take the write lock up front
//! instead (the subscriptions' transactional handlers do).
//!
//! # Many processes on one file: a process frozen inside a write
//!
//! One writer at a time holds the file's write lock, for every table in it: a log of
//! `checkpoint-source-sqlite` in the same file shares it with the checkpoints, the leases and
//! the parked entries. A process **frozen** while it holds the lock (SIGSTOP, a debugger, a
//! paused VM or container, a machine swapping) keeps it for the whole freeze, and every other
//! process's writes wait behind it: appends, checkpoint saves, lease **renewals** and
//! **acquires** (each up to the busy timeout, then a retryable error, and tried again). Reads
//! go on (WAL). A process **killed** inside a write costs nothing: the operating system drops
//! its file locks with it, and the next connection rolls its unfinished transaction back from
//! the WAL (checked on Linux with a holder SIGKILLed inside `BEGIN IMMEDIATE`, running or
//! stopped: the next `BEGIN IMMEDIATE` of another process succeeded at once, the holder's
//! insert gone, `PRAGMA integrity_check` ok).
//!
//! What a freeze costs a fleet of `checkpoint-worker` workers (a subscription's included),
//! none of which it touched:
//!
//! - **Up to the slack, nothing.** A worker renews every renew interval (by default the lease
//!   duration / `DEFAULT_RENEWS_PER_LEASE` = 5) and holds its leases until
//!   [`holder_deadline`](checkpoint_core::lease::holder_deadline), `safe_duration(lease)`
//!   after it sent the last renew that went through. That renew was sent at most one renew
//!   interval before the freeze, so the **slack** is `safe_duration(lease) − renew interval`:
//!   1.578 s for a 2 s lease, 7.898 s for the default 10 s one (less the time a waiting renew
//!   takes to win the lock once it is free). A freeze shorter than that ends before any
//!   holder's deadline: the renews waiting behind it go through, no lease is lost, nothing is
//!   handled twice.
//! - **Past it, every holder loses.** Each worker whose deadline passes while its renew waits
//!   stops its partitions (`Stop::Lost`, counted in its `losses`): it cannot know that the
//!   store will not give its leases away, since the lease time runs on SQLite's clock during
//!   the freeze. Once the lock is free the leases are acquired again (by the same workers or
//!   others), each from its stored checkpoint, and the entries the workers' handlers finished
//!   since the last checkpoint they stored before the freeze are **handled again**. Nothing is
//!   skipped, and no lease has two owners at once (nobody could write during the freeze).
//!
//! So on SQLite, and only there, "a kill or a freeze costs only the partitions of the process
//! it hit" holds for freezes up to the slack, and for kills always. Keeping it for longer
//! freezes needs lease time that does not run while the file is locked, and a worker that
//! suspends its partitions instead of losing them when its deadline passes behind the lock:
//! a follow-up, beyond this crate as it stands. Until then: keep your own write transactions
//! on the file short, do not pause processes that share it for longer than the slack, or
//! lengthen the lease (the slack grows with it, and so does a takeover after a crash).
//! `cargo run -p checkpoint-examples --bin subscription_fleet -- --freeze-in-write-ms 3500`
//! shows the cost (`--freeze-in-write-ms 500`: none).
//!
//! # Timeouts
//!
//! Every operation, the wait for a pooled connection included, fails with
//! [`Error::Timeout`](checkpoint_core::Error::Timeout) (retryable) once it has taken longer
//! than the store's timeout: [`DEFAULT_TIMEOUT`](checkpoint_core::DEFAULT_TIMEOUT) (5 s) unless
//! [`with_timeout`](SqliteCheckpointStore::with_timeout) sets another (a zero duration is
//! refused) or [`without_timeout`](SqliteCheckpointStore::without_timeout) lifts it. The
//! `*_in` methods have it too: a timed-out call leaves the caller's transaction in an unknown
//! state, so roll it back.
//!
//! SQLite's busy timeout ([`DEFAULT_BUSY_TIMEOUT`], a setting of each connection) bounds how
//! long one statement waits for another connection's write lock before a retryable
//! `SQLITE_BUSY`; the store's timeout bounds the whole call from outside (the wait for a
//! pooled connection, the statements). Set the busy timeout below the store's to get SQLite's
//! own error when the lock held the call up. A call the store's timeout ended is not
//! interrupted inside SQLite and may still take effect: every operation is safe to retry.
//!
//! # Tracing
//!
//! Every operation is one `tracing` span at DEBUG named `checkpoint.<operation>`
//! (`checkpoint.save`, `checkpoint.advance_in`, `checkpoint.migrate`, `checkpoint.acquire`,
//! ...) with the fields `backend = "sqlite"`, `table`, `group` and `subscription` where the
//! call has them, and the sizes: `batch_size` and `distinct_keys` (save_all), `partitions`
//! (start_at and the lease operations that name partitions), `count` (list, groups, retired,
//! parked; the leases granted, renewed, released or listed). No partition, position, lease
//! owner or error text is a field.
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

mod engine;
mod error;
mod layout;
mod requests;

use std::time::Duration;

/// SQLite, an engine of [`SqlStore`](checkpoint_sql::SqlStore): the store is
/// [`SqliteCheckpointStore`].
#[derive(Debug, Clone, Copy)]
pub struct SqliteEngine;

/// A durable checkpoint store in one SQLite database file: [`SqlStore`](checkpoint_sql::SqlStore)
/// on [`SqliteEngine`].
///
/// Cheap to clone: clones share the pool. See the [crate documentation](crate) for the schema,
/// the durability settings, timeouts and use from several processes. Open it with
/// [`open`](checkpoint_sql::SqlStore::open) (a path), [`open_with`](checkpoint_sql::SqlStore::open_with)
/// (settings from [`connect_options`](checkpoint_sql::SqlStore::connect_options)) or
/// [`new`](checkpoint_sql::SqlStore::new) (a pool of yours: configure it as `connect_options`
/// does, WAL, `synchronous = FULL` and a busy timeout; sqlx's defaults leave a new file in
/// rollback-journal mode, where readers and the writer block each other).
pub type SqliteCheckpointStore = checkpoint_sql::SqlStore<SqliteEngine>;

/// The backend name carried by every error of this crate: `"sqlite"`.
pub const BACKEND: &str = "sqlite";

/// The table used unless [`SqliteCheckpointStore::with_table`] names another.
pub const DEFAULT_TABLE: &str = "checkpoints";

/// How long a connection waits for another connection's write lock before failing with
/// `SQLITE_BUSY` (a retryable error), in [`SqliteCheckpointStore::connect_options`]. See
/// [Timeouts](crate#timeouts) for how it relates to the store's timeout.
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The size of the pool [`SqliteCheckpointStore::open`] creates. Writers take turns on one
/// lock whatever the size; more connections only let more reads run beside a write.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 8;

/// The README's example, compiled as a doc test so that it cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
