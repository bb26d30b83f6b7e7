//! A PostgreSQL checkpoint store on sqlx: one table, one statement per operation.
//!
//! [`PostgresCheckpointStore`] implements [`CheckpointStore`](checkpoint_core::CheckpointStore)
//! and [`ExclusiveCheckpointStore`](checkpoint_core::ExclusiveCheckpointStore) natively in SQL:
//!
//! | operation | statement | round trips |
//! | --- | --- | --- |
//! | `save` | `INSERT ... ON CONFLICT DO UPDATE ... WHERE stored < new` | 1 |
//! | `save_all` (any size) | the same over `unnest` of three array parameters | 1 |
//! | `load` | `SELECT` by primary key | 1 |
//! | `list` | `SELECT` by the key's first column (exact match) | 1 |
//! | `claim` | `INSERT ... ON CONFLICT DO UPDATE ... RETURNING` | 1 |
//! | `advance` | `UPDATE ... WHERE position = from`, with the current position in the same statement | 1 |
//!
//! and [`CheckpointAdmin`](checkpoint_core::CheckpointAdmin), the operations API, over a
//! tombstone table beside the checkpoints (see [Retired subscriptions](#retired-subscriptions)):
//!
//! | operation | statement | round trips |
//! | --- | --- | --- |
//! | `groups` | a loose index scan of the checkpoints (one probe per group) `UNION` the tombstones | 1 |
//! | `start_at` | a transaction: the name's advisory lock, then a plain `INSERT ... SELECT` of every partition, only when neither a checkpoint nor a tombstone exists, commit | 4 |
//! | `retire` | a transaction: bound the lock wait, `LOCK TABLE`, tombstone and `DELETE`, commit | 5 |
//! | `retired` | `SELECT` of the tombstones, sorted | 1 |
//! | `purge` | the tombstone and any leftover checkpoints deleted, and whether the name is live, in one statement | 1 |
//!
//! No operation reads before it writes: the server decides atomically, so no concurrency
//! loses an update or moves a checkpoint back. Every method validates its input before any
//! I/O.
//!
//! The round trips are those a caller waits for; the integration tests count them on the
//! wire. Through a pool, sqlx 0.9 adds one more exchange when the connection goes back to the
//! pool (a `Sync` it sends after the call has returned, which cannot be turned off), and a
//! pool with sqlx's default `test_before_acquire` one more before each call; the pools that
//! [`PostgresCheckpointStore::connect`] creates skip the latter (see there). The `*_in`
//! methods on a connection of the caller's take exactly one.
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
//! Over a pool the application already has, with a table of its own:
//!
//! ```no_run
//! # async fn example(pool: sqlx::PgPool) -> Result<(), checkpoint_core::Error> {
//! use std::time::Duration;
//! use checkpoint_postgres::PostgresCheckpointStore;
//!
//! let store = PostgresCheckpointStore::new(pool)
//!     .with_table("app.checkpoints")?
//!     .with_timeout(Duration::from_secs(2))?;
//! # Ok(())
//! # }
//! ```
//!
//! # Schema
//!
//! [`PostgresCheckpointStore::migrate`] creates these two tables (`{table}` is the quoted table
//! name, `"checkpoints"` by default, and `{retired}` the same name followed by `_retired`, in
//! the same schema; [`PostgresCheckpointStore::schema_sql`] prints them for the configured
//! table) and, for a schema-qualified name, the schema when it is missing:
//!
#![doc = concat!("```sql\n", include_str!("../sql/schema.sql"), ";\n```")]
//!
//! - `partition_id` holds a `u32`, which does not fit PostgreSQL's signed `INTEGER`: it is a
//!   `BIGINT` limited to `0..=4294967295`. Positions are `0..=i64::MAX`, as the contract says.
//! - The names use the `"C"` collation: they compare byte by byte, so two different names are
//!   never equal under some locale, and the index order is the order in which
//!   [`save_all`](checkpoint_core::CheckpointStore::save_all) locks rows.
//! - `query_fingerprint` is `NULL` for a checkpoint only ever saved monotonically and set by
//!   the first exclusive claim.
//! - `updated_at` is the time of the last change of the position (or of the row's creation).
//! - `{retired}` holds one row, a tombstone, per retired subscription (see [Retired
//!   subscriptions](#retired-subscriptions)); `retired_at` is for people reading it. Its name
//!   is why a table name has at most 55 bytes: `_retired` must fit in PostgreSQL's 63.
//! - A table made before the tombstone table existed gets it from the next `migrate` (both are
//!   `IF NOT EXISTS`); that `migrate` needs a role that may create tables in the schema.
//!
//! Teams that run migrations themselves apply this DDL once and never call `migrate` (or call
//! it: when the table exists it creates nothing and needs no privilege beyond those below).
//!
//! ## Privileges at run time
//!
//! What subscriptions do ([`CheckpointStore`](checkpoint_core::CheckpointStore) and
//! [`ExclusiveCheckpointStore`](checkpoint_core::ExclusiveCheckpointStore)) only needs
//! `SELECT`, `INSERT` and `UPDATE` on the table, `SELECT` on the tombstone table (every save
//! reads it) and `USAGE` on their schema. It never deletes, truncates or alters anything:
//!
//! ```sql
//! GRANT SELECT, INSERT, UPDATE ON checkpoints TO app;
//! GRANT SELECT ON checkpoints_retired TO app;
//! ```
//!
//! What an operator does ([`CheckpointAdmin`](checkpoint_core::CheckpointAdmin)) needs more:
//! `DELETE` on both tables (retire and purge delete), `INSERT` on the tombstone table, and the
//! right to `LOCK TABLE checkpoints IN SHARE ROW EXCLUSIVE MODE`, which PostgreSQL grants with
//! `UPDATE`, `DELETE` or `TRUNCATE` on the table. Give it to the role of the operators' tool,
//! not to the services: under the role above, `retire` fails with a "permission denied for
//! table checkpoints" error (its `DELETE`) that is not retryable.
//!
//! ```sql
//! GRANT SELECT, INSERT, UPDATE, DELETE ON checkpoints TO operator;
//! GRANT SELECT, INSERT, DELETE ON checkpoints_retired TO operator;
//! ```
//!
//! # Retired subscriptions
//!
//! [`retire`](checkpoint_core::CheckpointAdmin::retire) writes a tombstone, a row of
//! `{retired}`, and deletes the subscription's checkpoints. Every statement that can create
//! or move a checkpoint (`save`, `save_all`, `claim` and their `*_in` forms) selects its row
//! only `WHERE NOT EXISTS` a tombstone for its subscription, in the same statement: no extra
//! round trip, one primary-key probe of a small table. A save under a retired name writes
//! nothing and returns `Ok`; a claim returns no row, which the store reports as
//! [`Error::Retired`](checkpoint_core::Error::Retired); an advance finds no row
//! ([`Error::Moved`] with nothing current). `start_at` refuses a tombstone too.
//!
//! The check alone is not enough under READ COMMITTED: a save whose statement snapshot was
//! taken just before the retire committed does not see the tombstone, nor (for an existing
//! partition) the deleted row as a conflict, and inserts a checkpoint after `retire` has
//! returned. So `retire` runs in one transaction that first takes
//! `LOCK TABLE {table} IN SHARE ROW EXCLUSIVE MODE`. That mode conflicts with the `ROW
//! EXCLUSIVE` lock every `INSERT` and `UPDATE` takes on the table, and with itself:
//!
//! - the retire waits until every transaction that has written to the table has ended (their
//!   saves land before the tombstone, and the retire deletes them);
//! - every save that comes while the retire holds the lock waits for its commit; a statement
//!   takes its table locks when it is bound, before its snapshot, which READ COMMITTED takes
//!   when it starts to execute, so it sees the tombstone and writes nothing;
//! - reads (`load`, `list`) go on unblocked, and two retires take turns without deadlock.
//!
//! The integration tests race a dozen zombies (saves, batches, claims and saves in their own
//! transactions, to existing and to new partitions) against a retire, 25 times, and find
//! nothing of the subscription after `retire` returned; with the lock removed they find rows
//! in the first rounds.
//!
//! What this costs:
//!
//! - **Saves pause while a retire holds the lock**: every write to the table waits for the
//!   last two round trips of the retire (its tombstone-and-delete statement and its commit).
//!   Measured by the integration tests on a local server, on two cores that other builds kept
//!   busy: a retire took 3.7 ms (median of 99) from call to return, 13 ms with a dozen zombies
//!   writing; one writer saving in a loop while retires ran back to back, all the time, saw
//!   its median save go from 1.1 ms to 2.8 ms (its p99, 20 to 30 ms, was the busy machine's
//!   either way). A save waits at most about as long as one retire takes.
//! - **A retire waits for open writers**: a caller's transaction that has written to the
//!   table (a `save_in` in a projection's transaction) holds the retire until it ends, and the
//!   saves queued behind the retire with it. The wait is bounded: the retire's transaction
//!   sets `lock_timeout` to the store's timeout, so it gives up with a retryable error
//!   ([`Error::Timeout`](checkpoint_core::Error::Timeout) or a lock-timeout
//!   [`Error::Backend`](checkpoint_core::Error::Backend)) and the queue moves on. Keep such
//!   transactions short, as every writer should. Without a timeout
//!   ([`without_timeout`](PostgresCheckpointStore::without_timeout)) the session's own
//!   `lock_timeout` applies.
//! - **REPEATABLE READ and SERIALIZABLE transactions**: their snapshot is taken by their first
//!   statement, not by each one. A caller's transaction at one of these levels that began
//!   before a retire committed, but wrote to the table only after, does not see the tombstone,
//!   and what it writes under the retired name becomes visible when it commits. Run the
//!   transactions that save checkpoints at READ COMMITTED (PostgreSQL's default; the store's
//!   own calls always do), or retire again once such transactions have ended (retire is
//!   idempotent and deletes them).
//!
//! `start_at` is one transaction: it takes a transaction-level advisory lock on the name
//! (`pg_advisory_xact_lock` of a 64-bit hash of group and subscription, so concurrent
//! `start_at`s of one name take turns, whatever partitions they name), then inserts every
//! partition only when the subscription has neither a checkpoint nor a tombstone, with a plain
//! `INSERT` (no `ON CONFLICT`), so a checkpoint that a concurrent save creates first makes the
//! whole statement fail on the primary key, which the store reports as
//! [`Error::Exists`](checkpoint_core::Error::Exists): all or nothing, at most one of
//! concurrent calls succeeds, and it never moves a checkpoint. Without the lock each call's
//! check would run on a READ COMMITTED snapshot that misses the other's uncommitted rows. It
//! costs four round trips (`BEGIN`, the lock, the insert, `COMMIT`), for an operator's command;
//! saves never take the lock. It is not run a second time on a lost connection (a second
//! attempt would report its own checkpoints as existing).
//!
//! # When things go wrong
//!
//! The integration tests inject each of these faults into a running store (the restarts,
//! crashes and pauses on a server of the test's own) and check every history of concurrent
//! calls against the max-register model: nothing acknowledged is lost, nothing moves back.
//!
//! - **A connection is cut** (the server ends the session, a proxy drops it): calls in flight
//!   fail with a retryable [`Error::Backend`](checkpoint_core::Error::Backend). An idempotent
//!   call that meets a dead pooled connection is run once more on a live one (see
//!   [`PostgresCheckpointStore::connect`]); the pool opens new connections by itself.
//! - **The server restarts or crashes**: the same, and while the server is down a call waits
//!   for the pool to reconnect (sqlx retries refused connections until its acquire timeout,
//!   30 s by default) until the store's timeout ends it (see [Timeouts](#timeouts)). With
//!   `synchronous_commit = on` (PostgreSQL's default) every acknowledged save is in the WAL and
//!   survives a crash; with `off`, the last fraction of a second of acknowledged saves can be
//!   lost.
//! - **The server hangs or the network drops packets**: a call fails with
//!   [`Error::Timeout`](checkpoint_core::Error::Timeout) when the store's timeout elapses, and
//!   the statement may still complete later (every operation is safe to retry). Without a
//!   timeout a call can wait as long as TCP does.
//! - **The server vanishes without closing the connections** (a cut network path, a frozen or
//!   replaced host, a NAT that forgot them): nothing ever arrives on them again until the
//!   operating system gives them up, minutes or hours later. A call on one times out, and the
//!   store closes that connection instead of returning it to the pool: sqlx pings a returned
//!   connection before it takes it back, without a bound, and on such a connection that ping
//!   would hold its place in the pool for good, so that enough timeouts would leave the pool
//!   no place to open a connection in. Each connection that was idle in the pool when the
//!   network failed is given up the same way by the call that meets it, which times out:
//!   the pool hands an idle connection out unchecked unless it has been idle for 5 s (see
//!   [`connect`](PostgresCheckpointStore::connect)), and a ping on a dead one waits for the
//!   call's timeout too. Calls that meet none work as soon as the network does.
//!
//!   Measured by the tests, with the kit's black-hole proxy between the pool and the server,
//!   three idle connections in the pool and a 1 s timeout: every `save`, `load`, `save_all`
//!   and `list` in the black hole returned `Error::Timeout` after 1.00 s (those calls gave up
//!   the three idle connections), and once the proxy forwarded again the first `save`
//!   succeeded after 6 to 23 ms (a new connection), with no failed attempt and no connection
//!   of the pool left stuck. The bound the tests assert is the timeout and 2 s more.
//!
//!   One case is sqlx's alone: a connection whose check on its way back to the pool (that
//!   ping) is in flight when the server vanishes keeps its place in the pool for good (sqlx
//!   issue 4349, open for sqlx 0.9.0): each such connection takes one of the pool's
//!   `max_connections` until the pool is rebuilt. The store cannot reach that check.
//! - **Bad input**: every method refuses it with
//!   [`Error::InvalidInput`](checkpoint_core::Error::InvalidInput) before anything is sent.
//!   Names are bound as parameters, never spliced into SQL, so any valid name (quotes, `;`,
//!   `--`, `$1`, ...) is stored verbatim.
//!
//! # Timeouts
//!
//! Every operation, the wait for a pooled connection included, fails with
//! [`Error::Timeout`](checkpoint_core::Error::Timeout) (retryable) once it has taken longer
//! than the store's timeout: [`DEFAULT_TIMEOUT`](checkpoint_core::DEFAULT_TIMEOUT) (5 s) unless
//! [`with_timeout`](PostgresCheckpointStore::with_timeout) sets another (a zero duration is
//! refused) or [`without_timeout`](PostgresCheckpointStore::without_timeout) lifts it. A call
//! that meets a dead pooled connection and runs once more (see [When things go
//! wrong](#when-things-go-wrong)) has the timeout for each attempt. The `*_in` methods have it
//! too: a timed-out call leaves the caller's transaction in an unknown state, so roll it back.
//!
//! The timeout is the client's: the statement it gave up on may still complete on the server.
//! A server-side bound (PostgreSQL's `statement_timeout`, `lock_timeout`) is the pool's to set,
//! for example in the connection options; its cancellations are retryable errors too.
//!
//! # Tracing
//!
//! Every operation is one `tracing` span at DEBUG level named `checkpoint.<operation>`
//! (`checkpoint.save`, `checkpoint.save_all_in`, `checkpoint.migrate`, ...), with the fields
//! `backend = "postgres"` and `table`, and `count` (list) or `batch_size` and `distinct_keys`
//! (save_all). No name, position or connection option is a field.
//!
//! # TLS
//!
//! With the crate feature `tls-rustls`, connections can use TLS through rustls (on aws-lc-rs,
//! the provider the AWS SDK uses too; the webpki root certificates unless the URL names a CA).
//! The URL's `sslmode` decides:
//!
//! | `sslmode` | encrypted | server checked |
//! | --- | --- | --- |
//! | `disable` | no | no |
//! | `prefer` (sqlx's default) | when the server offers it | no |
//! | `require` | yes | no: protects against listening, not against an impostor |
//! | `verify-ca` | yes | its certificate chains to a trusted root |
//! | `verify-full` | yes | that, and the certificate names the host: use this |
//!
//! ```text
//! postgres://app:secret@db.internal:5432/app?sslmode=verify-full&sslrootcert=/etc/ssl/db-ca.pem
//! ```
//!
//! Built without the feature, a URL with `require` or `verify-*` fails to connect; it never
//! falls back to plain text. A certificate that fails verification is a connect error that is
//! not retryable.
//!
//! # Secrets
//!
//! The store's `Debug` output shows the table, the timeout and the pool's size, never
//! connection options; its errors never contain the URL. sqlx's own
//! [`PgConnectOptions`](sqlx::postgres::PgConnectOptions) prints its password in `Debug`:
//! do not log it.
//!
//! # In the caller's transaction
//!
//! The `*_in` methods run on a `&mut PgConnection` the caller holds, so a projection commits
//! its read model and its checkpoint together, or rolls both back:
//!
//! ```no_run
//! # async fn example(
//! #     store: checkpoint_postgres::PostgresCheckpointStore,
//! # ) -> Result<(), Box<dyn std::error::Error>> {
//! let mut transaction = store.pool().begin().await?;
//! sqlx::query("INSERT INTO invoice_totals (customer, total) VALUES ($1, $2)")
//!     .bind("acme")
//!     .bind(120_i64)
//!     .execute(&mut *transaction)
//!     .await?;
//! store
//!     .save_in(&mut transaction, "billing", "invoice-totals", 0, 1_001)
//!     .await?;
//! transaction.commit().await?; // both, or (on any error before) neither
//! # Ok(())
//! # }
//! ```
//!
//! # Exclusive checkpoints
//!
//! For a projection that must never apply a batch twice: claim with the fingerprint of the
//! subscription's query, then advance the position in the transaction that writes the batch.
//! Of two processes under one name, the second to commit gets [`Error::Moved`] and stops:
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
//! // ... write the batch's read model through `&mut *transaction` ...
//! match store
//!     .advance_in(&mut transaction, "billing", "invoice-totals", 0, from, to)
//!     .await
//! {
//!     Ok(()) => transaction.commit().await?,
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
//! [`Error::Moved`]: checkpoint_core::Error::Moved
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod admin;
mod error;
mod layout;
mod requests;
mod store;
mod transaction;

pub use store::PostgresCheckpointStore;

/// The name of the backend in errors: `"postgres"`.
pub const BACKEND: &str = "postgres";

/// The table a store uses unless [`PostgresCheckpointStore::with_table`] says otherwise.
pub const DEFAULT_TABLE: &str = "checkpoints";

/// The README's example, compiled as a doc test so that it cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
