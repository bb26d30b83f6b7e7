//! A checkpoint store in a MySQL or MariaDB database, on [sqlx].
//!
//! [`MysqlCheckpointStore`] implements [`CheckpointStore`](checkpoint_core::CheckpointStore)
//! and [`ExclusiveCheckpointStore`](checkpoint_core::ExclusiveCheckpointStore) with one SQL
//! statement per hot-path operation (`claim` and a refused `advance` add a read),
//! [`CheckpointAdmin`](checkpoint_core::CheckpointAdmin), [`LeaseStore`](checkpoint_core::LeaseStore)
//! (partition leases judged by the server's clock, each operation one `CALL` of a stored
//! procedure, see [Leases](#leases)) and
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
//! store.migrate().await?; // once, by a role that may CREATE and CREATE ROUTINE (see Privileges)
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
//! Then it creates seven stored procedures, each unless one of its name exists: `{table}`'s
//! name followed by `_acquire_v1`, `_renew_v1`, `_release_v1`, `_leave_v1`, `_handover_v1`,
//! `_leases_v1` (the [leases](#leases)) and `_groups_v1` (`groups`, see [Costs](#costs)), all
//! `SQL SECURITY INVOKER` (see [Privileges](#privileges)). The suffix `_v1` is their version: a
//! later release that changes a procedure gives it a new one, so `migrate` creates the new
//! procedures beside the old ones and the processes still running the old release keep
//! calling theirs; drop the old ones once none runs. A procedure is never replaced in place
//! (MySQL has no `CREATE OR REPLACE PROCEDURE`, and `DROP PROCEDURE` also drops the `EXECUTE`
//! granted on it). Their text is in the crate's `sql/procedures/`;
//! [`schema_sql`](MysqlCheckpointStore::schema_sql) prints tables and procedures as a script
//! for the `mysql` client (the procedures under `DELIMITER $$`, a command of that client).
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
//! | `groups` | one `CALL` of `{table}_groups_v1`, which walks both tables' primary keys group by group (each step one index dive per table: the first `group_name` after the last one found) in one read-only transaction, and answers one result set per group: its cost follows the number of groups, not of rows, whatever the optimizer's statistics know (a `SELECT DISTINCT` gets its loose index scan only once they know the table) | 1 |
//! | `retired` | one `SELECT`, sorted | 1 |
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
//! rolled back whole, and each is safe to run again (inside a lease procedure too: its handler
//! rolls back and `RESIGNAL`s the server's error, so the `CALL` fails with that same 1213). The
//! batches lock their rows in key order and the lease procedures in partition order, which
//! keeps such meetings rare. The `*_in`
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
//! **One clock decides expiry: the server's.** Every lease operation is one transaction, run
//! by its stored procedure, that reads the clock once, as integer milliseconds
//! (`TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000`: no time
//! zone enters it); every later statement of the procedure uses that instant, and an expiry is
//! that instant plus the duration (rounded up to a millisecond). No client's clock is ever
//! compared with another's.
//!
//! **One round trip each: a stored procedure per operation, called with one prepared
//! `CALL`.** The procedure runs the whole transaction on the server (`START TRANSACTION` …
//! `COMMIT`, and an exit handler that rolls it back and `RESIGNAL`s any error, so no
//! transaction is ever left open on the connection) and answers with result sets; a refusal
//! (a retired subscription: [`Error::Retired`](checkpoint_core::Error::Retired); a renew
//! without a live heartbeat: [`Error::NotHeld`](checkpoint_core::Error::NotHeld)) is a status
//! in that answer, not an error message to parse. The alternatives: a single statement is
//! impossible here (MySQL has no `RETURNING`, MariaDB none on `UPDATE`, neither a
//! data-modifying CTE: no statement extends an owner's leases and reads them back); a multi-statement text request would be one
//! exchange too, but takes no bound parameters (every name spliced into SQL text), is parsed
//! at every call, and a statement failing in its middle stops the rest with the transaction
//! left open, one more round trip to roll back. The procedures' cost is elsewhere: `migrate`
//! needs `CREATE ROUTINE`, the run-time user `EXECUTE` on them (see
//! [Privileges](#privileges)), and a change to one takes a new version (see [Schema](#schema)).
//! The rows are locked in partition order. Since a procedure's `START TRANSACTION`
//! would commit whatever transaction is open on its connection, the lease operations and
//! `groups` run only on the store's pool (there is no `*_in` variant of them); call the
//! procedures yourself only outside a transaction.
//!
//! | operation | the procedure's transaction (one `CALL`) | round trips |
//! | --- | --- | --- |
//! | `acquire` | the clock and the tombstone (retired: status, rolled back); the heartbeat's upsert; an `UPDATE` of the owner's live leases; an upsert of the partitions asked for over `JSON_TABLE`, granting only free or expired ones (left out when none are asked for); the status; a `SELECT .. FOR UPDATE` of the owner's live leases | 1, for 1, 3 or 100 partitions or none |
//! | `renew` | the clock and the tombstone; the heartbeat, read with a lock (not live: status NotHeld, rolled back); its `UPDATE`; an `UPDATE` of the owner's live leases; the status; their `SELECT .. FOR UPDATE` | 1, for 1 or 100 leases, refused too |
//! | `release` | the clock; a `SELECT .. FOR UPDATE` of those asked for the owner holds live (the answer); their `UPDATE` | 1, none held too |
//! | `leave` | the clock; the heartbeat's `DELETE`; as `release` for all its leases | 1 |
//! | `request_handover` | the clock; one `UPDATE` over `JSON_TABLE` | 1 |
//! | `leases` | read-only, one snapshot: the clock; the live leases; the live owners | 1 |
//!
//! The workspace's `BENCHMARKS.md` measures what they cost against a save.
//!
//! # Privileges
//!
//! `migrate` needs `CREATE` and `CREATE ROUTINE` on the database (MySQL checks `CREATE` even
//! when every table exists: run it from a deployment step, not from the service); dropping a
//! procedure of an old version takes `ALTER ROUTINE` on it (which the server gives the user
//! that created it while `automatic_sp_privileges` is on, its default). A server that writes
//! a binary log asks nothing more: `SUPER` or `log_bin_trust_function_creators` are for stored
//! functions and triggers, whose bodies the log cannot replay; a procedure's statements are
//! logged one by one (tested with a statement-based log).
//!
//! The procedures are `SQL SECURITY INVOKER`: each statement in them runs with the privileges
//! of the user who calls, as if that user had sent it. So the run-time user keeps exactly its
//! table grants, a procedure lends it nothing (`DEFINER`, the default, would run them with
//! the migrating user's privileges), and no definer account has to outlive the migration (a
//! `DEFINER` procedure fails once its definer is dropped). What it costs: `EXECUTE` on each
//! procedure the user calls, on top of those grants.
//!
//! The store's runtime needs `SELECT, INSERT, UPDATE` on `{table}` and `{leases}`, `SELECT` on
//! `{retired}`, `SELECT, INSERT, UPDATE, DELETE` on `{lease_owners}` (`leave` deletes the
//! heartbeat) and `{parked}`, and `EXECUTE` on the six lease procedures; the operations API
//! (`start_at`, `retire`, `purge`, `groups`) also `DELETE` on `{table}` and `{leases}`,
//! `INSERT, UPDATE, DELETE` on `{retired}` and `EXECUTE` on `{table}_groups_v1`. `UPDATE` is
//! needed wherever a statement has `ON DUPLICATE KEY UPDATE`, even when it updates nothing. A
//! `GRANT` on a procedure names one that exists: grant after `migrate`, and again for the new
//! names after a `migrate` that created a new version. The runtime user and the migrating
//! user, as the tests make them:
//!
//! ```sql
//! CREATE USER 'checkpoints_app'@'%' IDENTIFIED BY '…';
//! GRANT SELECT, INSERT, UPDATE ON app.checkpoints TO 'checkpoints_app'@'%';
//! GRANT SELECT ON app.checkpoints_retired TO 'checkpoints_app'@'%';
//! GRANT SELECT, INSERT, UPDATE ON app.checkpoints_leases TO 'checkpoints_app'@'%';
//! GRANT SELECT, INSERT, UPDATE, DELETE ON app.checkpoints_lease_owners TO 'checkpoints_app'@'%';
//! GRANT SELECT, INSERT, UPDATE, DELETE ON app.checkpoints_parked TO 'checkpoints_app'@'%';
//! GRANT EXECUTE ON PROCEDURE app.checkpoints_acquire_v1 TO 'checkpoints_app'@'%';
//! GRANT EXECUTE ON PROCEDURE app.checkpoints_renew_v1 TO 'checkpoints_app'@'%';
//! GRANT EXECUTE ON PROCEDURE app.checkpoints_release_v1 TO 'checkpoints_app'@'%';
//! GRANT EXECUTE ON PROCEDURE app.checkpoints_leave_v1 TO 'checkpoints_app'@'%';
//! GRANT EXECUTE ON PROCEDURE app.checkpoints_handover_v1 TO 'checkpoints_app'@'%';
//! GRANT EXECUTE ON PROCEDURE app.checkpoints_leases_v1 TO 'checkpoints_app'@'%';
//!
//! CREATE USER 'checkpoints_migrate'@'%' IDENTIFIED BY '…';
//! GRANT CREATE, CREATE ROUTINE ON app.* TO 'checkpoints_migrate'@'%';
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
//! deadlock and an interrupted statement; other errors (a missing table or procedure, a
//! denied privilege) are not. An error inside a procedure is the server's own error, as if
//! the statement that failed had been sent alone (the procedure rolls back and `RESIGNAL`s
//! it).
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
