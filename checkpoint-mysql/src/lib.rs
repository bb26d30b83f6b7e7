//! A checkpoint store in a MySQL or MariaDB database, on [sqlx].
//!
//! [`MysqlCheckpointStore`] implements [`CheckpointStore`](checkpoint_core::CheckpointStore)
//! and [`ExclusiveCheckpointStore`](checkpoint_core::ExclusiveCheckpointStore) with one SQL
//! statement per hot-path operation (`claim` and a refused `advance` add a read),
//! [`CheckpointAdmin`](checkpoint_core::CheckpointAdmin), [`LeaseStore`](checkpoint_core::LeaseStore)
//! (partition leases judged by the server's clock, see [Leases](#leases)) and
//! [`ParkedStore`](checkpoint_core::parked::ParkedStore). MySQL 8 and MariaDB 10.6 or later
//! (`JSON_TABLE`); tested on MariaDB 10.11. The `*_in` methods run on the caller's own
//! connection or transaction, so a read model and its checkpoint commit together; through
//! [`TransactionalStore`](checkpoint_core::transactional::TransactionalStore), a subscription's
//! transactional handler (`checkpoint-subscription`) does the same for each batch.
//!
//! ```no_run
//! # async fn example() -> Result<(), checkpoint_core::Error> {
//! use checkpoint_core::{Checkpoint, CheckpointStore, ExclusiveCheckpointStore, Fingerprint};
//! use checkpoint_mysql::MysqlCheckpointStore;
//!
//! let store = MysqlCheckpointStore::connect("mysql://app@127.0.0.1:3306/app").await?;
//! store.migrate().await?; // once, by a role that may CREATE (see Privileges)
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
//!     "mysql", checkpoint_core::Operation::Advance, true, e))?;
//! // ... write the read model with `&mut *tx` ...
//! store.advance_in(&mut tx, "billing", "ledger", 0, from, 25).await?;
//! tx.commit().await.map_err(|e| checkpoint_core::Error::backend(
//!     "mysql", checkpoint_core::Operation::Advance, true, e))?;
//! assert_eq!(store.load("billing", "ledger", 0).await?, Some(25));
//! # Ok(())
//! # }
//! ```
//!
//! # Schema
//!
//! [`MysqlCheckpointStore::migrate`] creates these five InnoDB tables, each if it does not
//! exist (`{table}` is the quoted table name, `` `checkpoints` `` unless
//! [`with_table`](MysqlCheckpointStore::with_table) says otherwise, and `{retired}`,
//! `{leases}`, `{leases_by_owner}`, `{lease_owners}` and `{parked}` the same name followed by
//! `_retired`, `_leases`, `_leases_by_owner`, `_lease_owners` and `_parked`):
//!
#![doc = concat!("```sql\n", include_str!("../sql/schema.sql"), "```")]
//!
//! - Names are `VARBINARY(512)` (the contract's limit is 512 bytes): compared byte for byte,
//!   with no collation and no trailing-space padding, so any two different valid names are
//!   different keys, sorted by bytes; the statements read them back as UTF-8 text.
//! - `BIGINT` is a signed 64-bit integer: every valid position (`0..=i64::MAX`) and every `u32`
//!   partition is stored exactly.
//! - `query_fingerprint` is the 32-byte [`Fingerprint`](checkpoint_core::Fingerprint) of an
//!   exclusive checkpoint's query, `NULL` for a checkpoint only ever saved monotonically.
//! - `updated_at` and `retired_at` are for people reading the tables; the store never reads
//!   them.
//! - `{leases}` and `{lease_owners}` hold the [leases](#leases), `{parked}` the parked entries
//!   (`attempts` a `u32`, `parked_at_ms` milliseconds since the Unix epoch by the parking
//!   process's clock).
//!
//! # Costs
//!
//! Round trips as the `round_trips` tests count them on the wire, once each statement is
//! prepared on its connection (sqlx prepares a statement at its first use on a connection, one
//! more exchange, and caches it). Through the store's pool, sqlx pings each connection as it
//! goes back to the pool, one more exchange the caller does not wait for.
//!
//! | operation | SQL | round trips |
//! | --- | --- | --- |
//! | `save` | `INSERT .. SELECT .. WHERE NOT EXISTS (tombstone) ON DUPLICATE KEY UPDATE position = GREATEST(position, VALUES(position))` | 1 |
//! | `save_all` | the same upsert over `JSON_TABLE(?)`: the batch (deduplicated and sorted with [`highest_per_key`](checkpoint_core::batch::highest_per_key)) is one JSON text parameter | 1, whatever its size (counted for 10,000) |
//! | `load`, `list` | one `SELECT` | 1 (counted for a list of 10,002) |
//! | `claim` | the upsert with `query_fingerprint = COALESCE(query_fingerprint, VALUES(query_fingerprint))`, then a `SELECT .. FOR UPDATE` of the row (MySQL has no `RETURNING`) | 2 |
//! | `advance` | `UPDATE .. WHERE .. AND position = from`; only when it changes no row, a `SELECT .. FOR UPDATE` on the same connection for [`Error::Moved`](checkpoint_core::Error::Moved) | 1; refused 2 |
//! | `groups`, `retired` | one `SELECT`, sorted | 1 |
//! | `start_at` | `BEGIN`; whether a tombstone or a checkpoint exists (locking reads); if neither, one `INSERT` of every partition over `JSON_TABLE(?)`; `COMMIT` | 4; refused 3 |
//! | `retire` | `BEGIN`; the tombstone; `DELETE` of the checkpoints; `COMMIT` | 4 |
//! | `purge` | `BEGIN`; whether a tombstone or a checkpoint exists (locking reads); if a tombstone, it, any checkpoint left, and the subscription's leases and heartbeats deleted; `COMMIT` | 7; nothing to purge or refused 3 |
//! | `park` | `INSERT .. ON DUPLICATE KEY UPDATE` of the entry's record | 1 |
//! | `parked` | one `SELECT` by the group, in the primary key's order | 1 |
//! | `retry_parked`, `unpark` | one `UPDATE`, `DELETE` by the entry's key | 1 |
//!
//! # Isolation
//!
//! The statements that can create a checkpoint (`save`, `save_all`, `claim`) check for a
//! tombstone in the same statement, `INSERT .. SELECT .. WHERE NOT EXISTS`. At `REPEATABLE
//! READ` (MySQL's and MariaDB's default) InnoDB reads that subquery with locks: a save waits
//! for a retire that wrote the tombstone and then sees it, and a retire waits for a save that
//! looked, so a retired subscription never gets a checkpoint back. At `READ COMMITTED` InnoDB
//! reads it without locks and that guarantee is gone. [`MysqlCheckpointStore::connect`] sets
//! every session of its pool to `REPEATABLE READ`; a pool of your own
//! ([`MysqlCheckpointStore::new`]) and the transactions you pass to the `*_in` methods need
//! that level (or `SERIALIZABLE`) too.
//!
//! # Deadlocks
//!
//! InnoDB's row and gap locks can make two transactions wait for each other; InnoDB then
//! rolls one back (error 1213). Every operation on the store's pool is run again, up to 5 times
//! in all after random pauses under 2 ms doubling to 50 ms, when that happens to it: it was
//! rolled back whole, and each is safe to run again. The batches lock their rows in key order
//! and the lease statements in partition order, which keeps such meetings rare. The `*_in`
//! methods return a deadlock as a retryable error instead: the caller's whole transaction was
//! rolled back with it.
//!
//! Inside the caller's transaction, `save_in` keeps its row locked until the transaction ends;
//! `claim_in`'s read locks the checkpoint's row, so a second process claiming it waits for
//! this one to commit or roll back; `advance_in` locks the row, so another advance of it waits
//! for the commit (up to the server's `innodb_lock_wait_timeout`) and then finds it moved.
//! Keep such transactions short.
//!
//! # Leases
//!
//! [`LeaseStore`](checkpoint_core::LeaseStore) keeps partition ownership beside the
//! checkpoints: `{leases}`, one row per (group, subscription, partition) ever leased (`owner`
//! `NULL` once released; `epoch` from 1, one more at every grant to an owner that did not hold
//! it live, never handed out twice until `purge`; `expires_at_ms`; `handover_requested_by`),
//! and `{lease_owners}`, one heartbeat per owner.
//!
//! **One clock decides expiry: the server's.** Every lease operation is one transaction whose
//! first statement reads the clock once, as integer milliseconds
//! (`TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000`: no time
//! zone enters it); every later statement gets that instant as a parameter, and an expiry is
//! that instant plus the duration (rounded up to a millisecond). No client's clock is ever
//! compared with another's.
//!
//! | operation | statements, each one round trip | round trips |
//! | --- | --- | --- |
//! | `acquire` | `BEGIN`; the clock and tombstone; the heartbeat's upsert; an `UPDATE` of the owner's live leases; an upsert of the partitions asked for over `JSON_TABLE(?)`, granting only free or expired ones (left out when none are asked for); a `SELECT` of the owner's live leases; `COMMIT` | 7 (6 asking for none), for 1 or 100 partitions |
//! | `renew` | `BEGIN`; the clock and tombstone; the heartbeat's `UPDATE` if live (none: [`Error::NotHeld`](checkpoint_core::Error::NotHeld), then `ROLLBACK`: 4); an `UPDATE` of the owner's live leases; their `SELECT`; `COMMIT` | 6, for 1 or 100 leases |
//! | `release` | `BEGIN`; the clock; a `SELECT .. FOR UPDATE` of those the owner holds live; their `UPDATE` (left out when none); `COMMIT` | 5 (4 when none is held) |
//! | `leave` | `BEGIN`; the clock; the heartbeat's `DELETE`; as `release` for all its leases; `COMMIT` | 6 |
//! | `request_handover` | `BEGIN`; the clock; one `UPDATE` over `JSON_TABLE(?)`; `COMMIT` | 4 |
//! | `leases` | `BEGIN`; in one snapshot: the clock; the live leases; the live owners; `COMMIT` | 5 |
//!
//! PostgreSQL sends each of these as one statement; MySQL has no `RETURNING` and no
//! statement that both writes and reads a table back, so a lease operation here is a short
//! transaction of several (the workspace's `BENCHMARKS.md` measures what that costs against a
//! save).
//!
//! # Privileges
//!
//! `migrate` needs `CREATE` on the database (MySQL checks it even when every table exists:
//! run it from a deployment step, not from the service). The store's runtime needs only
//! `SELECT, INSERT, UPDATE` on `{table}` and `{leases}`, `SELECT` on `{retired}`, and
//! `SELECT, INSERT, UPDATE, DELETE` on `{lease_owners}` (`leave` deletes the heartbeat) and
//! `{parked}`; the operations API (`start_at`, `retire`, `purge`) also `DELETE` on `{table}`
//! and `{leases}` and `INSERT, UPDATE, DELETE` on `{retired}`. `UPDATE` is needed wherever a
//! statement has `ON DUPLICATE KEY UPDATE`, even when it updates nothing. The runtime user,
//! as the tests make it:
//!
//! ```sql
//! CREATE USER 'checkpoints_app'@'%' IDENTIFIED BY '…';
//! GRANT SELECT, INSERT, UPDATE ON app.checkpoints TO 'checkpoints_app'@'%';
//! GRANT SELECT ON app.checkpoints_retired TO 'checkpoints_app'@'%';
//! GRANT SELECT, INSERT, UPDATE ON app.checkpoints_leases TO 'checkpoints_app'@'%';
//! GRANT SELECT, INSERT, UPDATE, DELETE ON app.checkpoints_lease_owners TO 'checkpoints_app'@'%';
//! GRANT SELECT, INSERT, UPDATE, DELETE ON app.checkpoints_parked TO 'checkpoints_app'@'%';
//! ```
//!
//! # TLS
//!
//! With the feature `tls-rustls`, the URL's `ssl-mode` (`required`, `verify_ca`,
//! `verify_identity`) and `ssl-ca` apply, as sqlx reads them.
//!
//! # Timeouts
//!
//! Every operation, the wait for a pooled connection and a deadlock's reruns included, fails
//! with [`Error::Timeout`](checkpoint_core::Error::Timeout) (retryable) once it has taken
//! longer than the store's timeout: [`DEFAULT_TIMEOUT`](checkpoint_core::DEFAULT_TIMEOUT) (5 s)
//! unless [`with_timeout`](MysqlCheckpointStore::with_timeout) sets another or
//! [`without_timeout`](MysqlCheckpointStore::without_timeout) lifts it. A lock held by another
//! transaction makes a statement wait up to the server's `innodb_lock_wait_timeout` (50 s by
//! default) before a retryable error; set it below the store's timeout to get the server's own
//! error. A call the store's timeout ended may still take effect on the server: every operation
//! is safe to retry.
//!
//! # Tracing
//!
//! Every operation is one `tracing` span at DEBUG named `checkpoint.<operation>` with the
//! fields `backend = "mysql"`, `table`, `group`, `subscription` and `partition` where the call
//! has them, and the sizes (`batch_size`, `distinct_keys`, `partitions`, `count`).
//!
//! # Errors
//!
//! Failures of sqlx or the server are [`Error::Backend`](checkpoint_core::Error::Backend)
//! with the sqlx error as `source`. They are retryable for a lost or killed connection, a pool
//! timeout, too many connections, a server shutting down or read-only, a lock wait timeout, a
//! deadlock and an interrupted statement; other errors (a missing table, a denied privilege)
//! are not.
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod engine;
mod error;
mod layout;
mod requests;

/// MySQL and MariaDB, an engine of [`SqlStore`](checkpoint_sql::SqlStore): the store is
/// [`MysqlCheckpointStore`].
#[derive(Debug, Clone, Copy)]
pub struct MysqlEngine;

/// A checkpoint store in a MySQL or MariaDB database: [`SqlStore`](checkpoint_sql::SqlStore)
/// on [`MysqlEngine`].
///
/// Cheap to clone: clones share the pool. See the [crate documentation](crate) for the schema,
/// the isolation level it needs, timeouts and deadlocks. Open it with
/// [`connect`](checkpoint_sql::SqlStore::connect) (`mysql://user:password@host:port/database`,
/// `ssl-mode=…` and the other options sqlx reads) or over a pool of yours with
/// [`new`](checkpoint_sql::SqlStore::new); the store's guarantees then need two of the pool's
/// settings, both sqlx's and the servers' defaults: sessions at `REPEATABLE READ` (the
/// tombstone checks are locking reads only at that level or `SERIALIZABLE`; see
/// [Isolation](crate#isolation)), and `found_rows` on (matched rows counted, not only changed
/// ones).
pub type MysqlCheckpointStore = checkpoint_sql::SqlStore<MysqlEngine>;

/// The backend name carried by every error of this crate: `"mysql"` (MariaDB too).
pub const BACKEND: &str = "mysql";

/// The table used unless [`MysqlCheckpointStore::with_table`] names another.
pub const DEFAULT_TABLE: &str = "checkpoints";

/// The size of the pool [`MysqlCheckpointStore::connect`] creates (sqlx's default).
pub const DEFAULT_MAX_CONNECTIONS: u32 = 10;

/// The README's example, compiled as a doc test so that it cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
