//! A PostgreSQL checkpoint store on sqlx: one table, one SQL statement per operation of the
//! hot path (the admin operations' round trips are in the table below).
//!
//! [`PostgresCheckpointStore`] implements [`CheckpointStore`](checkpoint_core::CheckpointStore),
//! [`ExclusiveCheckpointStore`](checkpoint_core::ExclusiveCheckpointStore),
//! [`CheckpointAdmin`](checkpoint_core::CheckpointAdmin),
//! [`LeaseStore`](checkpoint_core::LeaseStore) (see [Leases](#leases)) and
//! [`ParkedStore`](checkpoint_core::parked::ParkedStore) (see
//! [Parked entries](#parked-entries)). Every method validates its input before any I/O; no
//! operation reads before it writes, so no concurrency loses an update or moves a checkpoint
//! back.
//!
//! ```no_run
//! # async fn example() -> Result<(), checkpoint_core::Error> {
//! use checkpoint_core::CheckpointStore;
//! use checkpoint_postgres::PostgresCheckpointStore;
//!
//! let store = PostgresCheckpointStore::connect("postgres://app@127.0.0.1/app").await?;
//! store.migrate().await?; // idempotent, safe from many processes at once
//! store.save("billing", "invoices", 0, 42).await?;
//! store.save("billing", "invoices", 0, 17).await?; // behind: changes nothing
//! assert_eq!(store.load("billing", "invoices", 0).await?, Some(42));
//! # Ok(())
//! # }
//! ```
//!
//! [`PostgresCheckpointStore::new`] takes a pool the application already has;
//! [`with_table`](PostgresCheckpointStore::with_table) and
//! [`with_timeout`](PostgresCheckpointStore::with_timeout) configure it.
//!
//! # Costs
//!
//! Round trips a caller waits for, as the integration tests count them on the wire:
//!
//! | operation | statement | round trips |
//! | --- | --- | --- |
//! | `save` | `INSERT ... ON CONFLICT DO UPDATE ... WHERE stored < new` | 1 |
//! | `save_all` (any size) | the same over `unnest` of three array parameters | 1 |
//! | `load`, `list` | `SELECT` by the key | 1 |
//! | `claim` | `INSERT ... ON CONFLICT DO UPDATE ... RETURNING` | 1 |
//! | `advance` | `UPDATE ... WHERE position = from`, with the current position in the same statement | 1 |
//! | `groups` | a loose index scan of the checkpoints `UNION` the tombstones | 1 |
//! | `retired` | `SELECT` of the tombstones | 1 |
//! | `purge` | the tombstone and any leftover checkpoints deleted in one statement | 1 |
//! | `start_at` | a transaction: `BEGIN`, the name's advisory lock, `INSERT ... SELECT` of every partition, `COMMIT` | 4 |
//! | `retire` | a transaction: `BEGIN`, `lock_timeout` (sent only when the store has a timeout), `LOCK TABLE`, tombstone and `DELETE`, `COMMIT` | 5 |
//! | `acquire` (any number of partitions) | heartbeat upsert, then one `INSERT ... ON CONFLICT DO UPDATE ... WHERE` unchanged of the free partitions asked (only those rows written), as data-modifying CTEs of one statement | 1 (more, after short pauses, while an expired holder's heartbeat is locked: see [Leases](#leases)) |
//! | `renew` (any number of leases) | one heartbeat row `UPDATE`d, the leases of its generation read by the index by owner | 1 |
//! | `release` | the named rows locked in partition order, then one `UPDATE` of them by key, in place, judged again on their newest versions (heartbeat read, not written) | 1 |
//! | `leave` | one heartbeat row `UPDATE`d (ended), the leases of its generation read | 1 |
//! | `request_handover` | rows locked in partition order, then one `UPDATE` of them by key, judged again on their newest versions | 1 |
//! | `leases` | `SELECT` of the leases that have an owner `UNION ALL` the live owners, matched in the client (no join, so the plan does not depend on the table's statistics) | 1 |
//! | `park` | `INSERT ... ON CONFLICT DO UPDATE` of the entry's record | 1 |
//! | `parked` | `SELECT` by the group, in the primary key's order | 1 |
//! | `retry_parked`, `unpark` | `UPDATE`, `DELETE` by the entry's key | 1 |
//!
//! Through a pool, sqlx 0.9 adds one exchange after the call has returned (a `Sync` when the
//! connection goes back to the pool; the tests count it too), and a pool with sqlx's default
//! `test_before_acquire` pings each connection before use; the pools that
//! [`connect`](PostgresCheckpointStore::connect) creates ping only a connection idle for 5 s.
//!
//! # Schema
//!
//! [`migrate`](PostgresCheckpointStore::migrate) creates these five tables and one index
//! (`{table}` is the quoted table name, `"checkpoints"` by default; `{retired}`, `{leases}`,
//! `{owners}`, `{parked}` and `{by_owner}` are the same name followed by `_retired`,
//! `_leases`, `_owners`, `_parked` and `_byowner`, in the same schema), and the schema of a
//! qualified name when it is missing.
//! [`schema_sql`](PostgresCheckpointStore::schema_sql) prints them for teams that migrate with
//! their own tools:
//!
#![doc = concat!("```sql\n", include_str!("../sql/schema.sql"), ";\n```")]
//!
//! - `partition_id` holds a `u32`: a `BIGINT` limited to `0..=4294967295`. Positions are
//!   `0..=i64::MAX`, as the contract says.
//! - Names use the `"C"` collation: compared byte by byte, never equal under some locale.
//! - `query_fingerprint` is `NULL` until the first exclusive claim sets it.
//! - `attempts` holds a `u32` as `partition_id` does; `parked_at_ms` is milliseconds since the
//!   Unix epoch, by the parking process's clock.
//! - A table name has at most 55 bytes, so that `{retired}` (and `{leases}`, `{owners}`,
//!   `{parked}`, `{by_owner}`) fits in PostgreSQL's 63.
//! - When all five tables and the index exist in this layout, `migrate` creates nothing and
//!   needs no privilege beyond those below; a deployment made before the tombstone, the
//!   lease tables or the parked entries' table existed gets the missing ones from the next
//!   `migrate` by a role that may create tables (its checkpoints are untouched). Lease tables of the first, unreleased
//!   layout (an `expires_at` per lease) are upgraded by it too (`sql/upgrade_leases.sql`:
//!   the generations added, leases live at that moment kept live, `expires_at` left
//!   nullable and unread), in the migration's transaction.
//!
//! ## Privileges
//!
//! Services (saves, claims, loads, leases) need `SELECT`, `INSERT`, `UPDATE` on the table and
//! the lease tables, `SELECT` on the tombstone table and `USAGE` on the schema; they delete
//! nothing and alter nothing there. On the parked entries' table they also need `DELETE`: a
//! subscription removes an entry whose retry succeeded. Operators (`retire`, `purge`,
//! `start_at`, and `unpark` by hand) need `DELETE` on every table (`purge` also removes a retired subscription's leases) and `INSERT`
//! on the tombstone table; under the services' role `retire` fails with a non-retryable
//! "permission denied":
//!
//! ```sql
//! GRANT SELECT, INSERT, UPDATE ON checkpoints, checkpoints_leases, checkpoints_owners TO app;
//! GRANT SELECT ON checkpoints_retired TO app;
//! GRANT SELECT, INSERT, UPDATE, DELETE ON checkpoints_parked TO app, operator;
//! GRANT SELECT, INSERT, UPDATE, DELETE ON checkpoints, checkpoints_leases, checkpoints_owners TO operator;
//! GRANT SELECT, INSERT, DELETE ON checkpoints_retired TO operator;
//! ```
//!
//! # Retired subscriptions
//!
//! [`retire`](checkpoint_core::CheckpointAdmin::retire) writes a tombstone (a row of
//! `{retired}`) and deletes the subscription's checkpoints. Every statement that can create or
//! move a checkpoint checks `WHERE NOT EXISTS` a tombstone in the same statement: a save under
//! a retired name writes nothing and returns `Ok`, a claim fails with
//! [`Error::Retired`](checkpoint_core::Error::Retired), an advance with [`Error::Moved`].
//!
//! So that no save already under way slips past the tombstone, `retire` first takes
//! `LOCK TABLE {table} IN SHARE ROW EXCLUSIVE MODE` (see `sql/retire_lock.sql`). What it costs:
//!
//! - writes to the table wait while a retire holds the lock, until it commits; reads do not;
//! - a retire waits for open transactions that wrote to the table, at most the store's timeout
//!   (it sets `lock_timeout` to it), then fails with a retryable error; keep such transactions
//!   short;
//! - a caller's REPEATABLE READ or SERIALIZABLE transaction that began before a retire and
//!   writes after it does not see the tombstone: save checkpoints at READ COMMITTED
//!   (PostgreSQL's default), or retire again once such transactions have ended.
//!
//! `start_at` creates every partition or none, and of concurrent `start_at`s of one name at
//! most one succeeds (they take turns on an advisory lock of the name); a checkpoint a
//! concurrent save creates first makes it fail with
//! [`Error::Exists`](checkpoint_core::Error::Exists). Saves never take that lock.
//!
//! # Leases
//!
//! [`LeaseStore`](checkpoint_core::LeaseStore) keeps partition ownership beside the checkpoints,
//! in two tables of the schema above. **Expiry lives only in the heartbeat**: `{owners}` has
//! one row per owner of a subscription, its heartbeat's `expires_at` and `generation`, which
//! increases whenever the heartbeat starts again after it expired (or ended: `leave` keeps the
//! row, expired); `{leases}` has one row per (group, subscription, partition) ever leased: its
//! `owner` and `owner_generation` (the generation `NULL` once released: the owner is kept,
//! so that a release updates the row in place), its `epoch` and `handover_requested_by`; the
//! index `{by_owner}` (owner first, so that no lookup by partition ever picks it) finds an
//! owner's leases. A lease is **held** by its owner while that owner's heartbeat has
//! the lease's generation and has not expired; otherwise it is free. So an owner's leases live
//! and die together by construction, a renew writes one row whatever their number, and an
//! owner whose heartbeat expired gets none of them back (its next heartbeat has the next
//! generation). A released or expired lease keeps its row and its epoch, so an epoch is never
//! handed out twice; [`purge`](checkpoint_core::CheckpointAdmin::purge) of a retired
//! subscription deletes its rows of both tables in its one statement.
//!
//! - **One clock decides expiry: the server's.** Each operation is one statement, and
//!   `now()`, the time the server starts it, decides which heartbeats are live
//!   (`expires_at > now()`) and when the heartbeat it starts or extends expires (`now()` + the
//!   duration, in whole microseconds, rounded down). No client's clock is ever sent or
//!   compared; `time_left` in [`leases`](checkpoint_core::LeaseStore::leases) is counted by the
//!   server's clock too.
//! - **One statement each** (`sql/acquire.sql`, `renew.sql`, `release.sql`, `leave.sql`,
//!   `leases.sql`, `request_handover.sql`), one round trip whatever the number of partitions or
//!   leases (see [Costs](#costs); an `acquire` that meets an expired holder's heartbeat locked
//!   sends its statement again, below). `acquire` and `renew` check the tombstone table in
//!   the same statement and write nothing for a retired subscription
//!   ([`Error::Retired`](checkpoint_core::Error::Retired)).
//! - **What each writes**: `renew` one heartbeat row, and reads the leases of its generation
//!   through the index `{by_owner}`; `leave` likewise (it ends the heartbeat: every lease of
//!   its generation is then free); `acquire` its heartbeat and the rows of the partitions it
//!   grants, none of those it already holds; `release` the rows it frees.
//! - **Concurrent acquirers of one partition**: the grant is
//!   `INSERT ... ON CONFLICT DO UPDATE ... WHERE` the row is still the one the statement
//!   judged free (same epoch and owner: every grant raises the epoch, every release clears the
//!   owner); the row lock serialises them and the `WHERE` is judged on the newest row, so
//!   exactly one gets it. A partition another owner holds live when the statement starts is
//!   not even tried.
//! - **Taking over from an expired holder**: the acquirer locks the holder's heartbeat
//!   (`FOR NO KEY UPDATE SKIP LOCKED`, judged again on its newest version) and ends it
//!   (`expires_at = -infinity`) in the same statement. A renew of that holder that started
//!   earlier, while its heartbeat was live, waits for that row, then finds it expired and
//!   renews nothing (`NotHeld`), so no lease is ever both given away and renewed. A heartbeat
//!   another statement holds locked (its owner is acquiring, as a worker joining again does,
//!   or renewing or leaving in a statement that started before it expired, or another taker
//!   is ending it) is skipped rather than waited for: waiting could deadlock, since the
//!   acquirer holds its own heartbeat and that owner's acquire may be waiting for it in turn.
//!   The statement then reports the contention (`contended`: a partition refused only because
//!   its expired holder's heartbeat could not be ended, skipped or changed since the
//!   snapshot), and `acquire` runs it again after a pause of 1 ms, doubling to 20 ms, for up
//!   to 1 s (or a quarter of the lease's duration, since the caller's local deadline counts
//!   from when it sent the acquire; or half the store's timeout): the lock lasts one
//!   statement, until its commit is flushed, so the second run almost always finds the lease
//!   free and grants it (measured on a local server while other builds loaded the machine:
//!   of 500 takers racing the expired holder's own acquire, 363 met the lock; 362 were
//!   granted on their second run, one on its third, the slowest 58 ms after it started). The
//!   statement is idempotent, so running it again grants nothing twice; no lock is held
//!   between runs. Only a heartbeat locked for that whole time (an overloaded server) still
//!   gets its partitions refused.
//! - **No deadlock**: a statement locks its own heartbeat first, while it holds nothing;
//!   other owners' heartbeats only without waiting; lease rows in partition order (the
//!   upsert's input is sorted; `release` and `request_handover` first lock their rows with
//!   `SELECT ... ORDER BY partition_id FOR NO KEY UPDATE`, then update them by key); an
//!   `acquire` run again holds no lock between its runs.
//! - **Lost connections**: `acquire`, `renew`, `leases` and `request_handover` are idempotent
//!   and run once more on a live connection, like saves; `release` and `leave` are not (a
//!   second attempt would report what the first released as not held): they fail with a
//!   retryable error.
//!
//! # Parked entries
//!
//! [`ParkedStore`](checkpoint_core::parked::ParkedStore) keeps the entries a subscription's
//! handler failed on every retry in `{parked}`, one row per entry keyed by (group,
//! subscription, partition, position). Each operation is one statement
//! (`sql/park.sql`, `parked.sql`, `retry_parked.sql`, `unpark.sql`): `park` is an upsert
//! that replaces the error, attempts and time of an entry parked already and clears its retry
//! request; `parked` reads the group in the primary key's order (subscriptions by bytes: the
//! column is `COLLATE "C"`); `retry_parked` and `unpark` report whether they found the row.
//! The records are independent of the checkpoints: `retire` and `purge` leave them.
//! `park`, `parked` and `retry_parked` are idempotent and run once more on a lost connection;
//! `unpark` is not (a second attempt would report the entry as not parked).
//!
//! # When things go wrong
//!
//! The integration tests inject each of these faults and check every history of concurrent
//! calls against the max-register model: nothing acknowledged is lost, nothing moves back.
//!
//! - **A connection is cut, or the server restarts**: calls in flight fail with a retryable
//!   [`Error::Backend`](checkpoint_core::Error::Backend). An idempotent call (every one but
//!   `advance`, `start_at`, `release`, `leave`, `unpark` and `migrate`) that meets a dead
//!   pooled connection runs once more on a live one, within the same timeout (the store's
//!   timeout bounds the whole call). While the server is down a call waits for the pool to
//!   reconnect until the store's timeout. With `synchronous_commit = on` (the default) every acknowledged save survives a
//!   crash.
//! - **The server hangs, or vanishes without closing the connections**: a call fails with
//!   [`Error::Timeout`](checkpoint_core::Error::Timeout) after the store's timeout, and the
//!   store closes its connection rather than returning it to the pool, so the pool never fills
//!   with dead connections. The statement may still complete (every operation is safe to
//!   retry). One case is sqlx's alone: a connection whose check on its way back to the pool is
//!   in flight when the server vanishes keeps its place in the pool (sqlx issue 4349).
//! - **A caller cancels a transaction's `BEGIN`** (a timeout, a `select!`, an aborted task: a
//!   subscription drops its batch when its lease is lost): the connection goes back to the
//!   pool with the transaction rolled back. sqlx 0.9.0 left it open on PostgreSQL, and the
//!   next borrower's statements (lease requests included) ran inside it and held their locks
//!   for ever; this crate needs sqlx 0.9.1 or later for that reason (tested: a begin cancelled
//!   on a one-connection pool).
//! - **Bad input** is refused with
//!   [`Error::InvalidInput`](checkpoint_core::Error::InvalidInput) before anything is sent.
//!   Names are bind parameters, so any valid name is stored verbatim.
//!
//! # Timeouts
//!
//! Every operation, the wait for a pooled connection included, fails with a retryable
//! [`Error::Timeout`](checkpoint_core::Error::Timeout) after the store's timeout:
//! [`DEFAULT_TIMEOUT`](checkpoint_core::DEFAULT_TIMEOUT) (5 s), or
//! [`with_timeout`](PostgresCheckpointStore::with_timeout), or none after
//! [`without_timeout`](PostgresCheckpointStore::without_timeout). A second attempt on a live
//! connection has the timeout again. On the `*_in` methods a timed-out call leaves the
//! caller's transaction in an unknown state: roll it back. The timeout is the client's; a
//! server-side bound (`statement_timeout`) is the pool's to set.
//!
//! # Tracing
//!
//! Every operation is one `tracing` span at DEBUG named `checkpoint.<operation>`
//! (`checkpoint.save`, `checkpoint.save_all_in`, `checkpoint.migrate`, ...) with the fields
//! `backend = "postgres"`, `table`, `group` and `subscription` where the call has them, and
//! the sizes: `batch_size` and `distinct_keys` (save_all), `partitions` (start_at, acquire,
//! release, request_handover), `count` (list, groups, retired, parked; live leases for
//! `leases`). No partition, position, owner, error text or connection option is a field.
//!
//! # TLS
//!
//! With the feature `tls-rustls` (rustls on aws-lc-rs; the webpki roots unless the URL names
//! a CA), the URL's `sslmode` decides: `disable`; `prefer` (sqlx's default: TLS when offered);
//! `require` (encrypted, server not checked); `verify-ca` (its certificate chains to a trusted
//! root); `verify-full` (that, and it names the host: use this).
//!
//! ```text
//! postgres://app:secret@db.internal:5432/app?sslmode=verify-full&sslrootcert=/etc/ssl/db-ca.pem
//! ```
//!
//! Without the feature, `require` or `verify-*` fails to connect; it never falls back to
//! plain text. A certificate that fails verification is a connect error, not retryable.
//!
//! # Secrets
//!
//! The store's `Debug` shows the table, the timeout and the pool's size, never connection
//! options; its errors never contain the URL. sqlx's
//! [`PgConnectOptions`](sqlx::postgres::PgConnectOptions) prints its password in `Debug`: do
//! not log it.
//!
//! # In the caller's transaction
//!
//! The `*_in` methods run on a `&mut PgConnection` the caller holds, each one round trip, so
//! a projection commits its read model and its checkpoint together. For a projection that
//! must never apply a batch twice, claim, then advance in the transaction that writes the
//! batch; of two processes under one name, the second gets [`Error::Moved`]:
//!
//! ```no_run
//! # async fn example(
//! #     store: checkpoint_postgres::PostgresCheckpointStore,
//! # ) -> Result<(), Box<dyn std::error::Error>> {
//! use checkpoint_core::{Error, ExclusiveCheckpointStore, Fingerprint};
//!
//! let query = Fingerprint::from_bytes([7; 32]); // the digest of the subscription's query
//! let from = store.claim("billing", "invoice-totals", 0, query, 0).await?;
//! let to = from + 100; // the last position of the batch read from the log
//!
//! let mut transaction = store.pool().begin().await?;
//! sqlx::query("INSERT INTO invoice_totals (customer, total) VALUES ($1, $2)")
//!     .bind("acme")
//!     .bind(120_i64)
//!     .execute(&mut *transaction)
//!     .await?;
//! match store
//!     .advance_in(&mut transaction, "billing", "invoice-totals", 0, from, to)
//!     .await
//! {
//!     Ok(()) => transaction.commit().await?, // both, or neither
//!     Err(Error::Moved { current, .. }) => {
//!         // Another process projected this batch: drop ours (the transaction rolls back).
//!         eprintln!("stopping: the checkpoint is already at {current:?}");
//!     }
//!     Err(other) => return Err(other.into()),
//! }
//! # Ok(())
//! # }
//! ```
//!
//! What each locks: `save_in` and `save_all_in` keep their rows locked until the transaction
//! ends; `claim_in` locks the checkpoint's row, so a second process claiming the same
//! checkpoint waits for this one to commit or roll back; `advance_in` locks the row, so
//! another advance of it waits for the commit and then finds it moved. None runs a second
//! time on a lost connection: the caller's transaction is gone with it.
//!
//! [`Error::Moved`]: checkpoint_core::Error::Moved
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod engine;
mod error;
mod layout;
mod requests;

/// PostgreSQL, an engine of [`SqlStore`](checkpoint_sql::SqlStore): the store is
/// [`PostgresCheckpointStore`].
#[derive(Debug, Clone, Copy)]
pub struct PostgresEngine;

/// A checkpoint store in one PostgreSQL table: [`SqlStore`](checkpoint_sql::SqlStore) on
/// [`PostgresEngine`].
///
/// Every operation of the hot path is one SQL statement, one round trip (the admin operations'
/// costs are in the crate doc): [`save`](checkpoint_core::CheckpointStore::save) and
/// [`save_all`](checkpoint_core::CheckpointStore::save_all) are `INSERT ... ON CONFLICT DO
/// UPDATE ... WHERE` the stored position is behind, so the server decides atomically and
/// nothing is read first; a batch of any size is sent as three arrays and unnested by the
/// server. The `*_in` methods run the same statements on a connection the caller holds,
/// typically `&mut *transaction`, so a projection commits its read model and its checkpoint
/// together or not at all.
///
/// Open it with [`connect`](checkpoint_sql::SqlStore::connect)
/// (`postgres://user:password@host:port/database`; the pool pings only connections idle for
/// more than 5 s, and a call that meets a dead connection runs once more on a live one, except
/// the requests that are not idempotent: see [Faults](crate#faults)) or over a pool of yours
/// with [`new`](checkpoint_sql::SqlStore::new) (a pool built with sqlx's defaults pings each
/// idle connection before handing it out, one more round trip per call). The table is
/// `table` or `schema.table` ([`with_table`](checkpoint_sql::SqlStore::with_table)).
///
/// Cloning is cheap: the clones share the pool and the prepared SQL.
pub type PostgresCheckpointStore = checkpoint_sql::SqlStore<PostgresEngine>;

/// The name of the backend in errors: `"postgres"`.
pub const BACKEND: &str = "postgres";

/// The table a store uses unless [`PostgresCheckpointStore::with_table`] says otherwise.
pub const DEFAULT_TABLE: &str = "checkpoints";

/// The README's example, compiled as a doc test so that it cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
