//! A PostgreSQL event-table source on sqlx: reads a partition of the application's own event
//! table from a checkpoint and never skips a committed entry, whatever order the writers
//! commit in, whichever roll back, however long a transaction stays open.
//!
//! [`PostgresSource`] implements [`Source`](checkpoint_core::source::Source) over a table with a
//! partition column, a sequence column and `tx xid8 DEFAULT pg_current_xact_id()`:
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use checkpoint_core::source::Source;
//! use checkpoint_source_postgres::PostgresSource;
//! use sqlx::postgres::PgPoolOptions;
//!
//! let pool = PgPoolOptions::new().connect("postgres://app@127.0.0.1/app").await?;
//! let source = PostgresSource::new(pool.clone(), 8); // table `events`, partitions 0..8
//! source.migrate().await?; // creates what is missing; idempotent
//!
//! // Write through the source, alone or in your own transaction beside your other writes.
//! source.append(3, Some("order-17"), br#"{"placed":true}"#).await?;
//! let mut transaction = pool.begin().await?;
//! source.append_in(&mut transaction, 3, Some("order-17"), br#"{"paid":true}"#).await?;
//! transaction.commit().await?;
//!
//! // Read partition 3 from a checkpoint: the first position not completed.
//! let mut from = 0;
//! loop {
//!     let page = source.read(3, from, 100).await?;
//!     for entry in &page.entries {
//!         println!("{} {:?}", entry.position, entry.key);
//!     }
//!     from = page.next; // the checkpoint to store once these are handled
//!     if page.entries.is_empty() {
//!         source.wait(3, from).await?; // woken by NOTIFY at the next commit
//!     }
//! }
//! # }
//! ```
//!
//! # Why ordering by a sequence loses entries, and what this source does instead
//!
//! A sequence value is taken at insert and becomes visible at commit, so values commit out of
//! order: a reader that read 11 and stores "after 11" never sees 10 when its transaction
//! commits a moment later (`WHERE position > checkpoint`: Eventuous #222, commanded/eventstore
//! #3, RailsEventStore #106, prooph #189). Reading only below the oldest running transaction
//! but still ordering by the sequence is not enough either: a transaction that is old (a low
//! id) can take a sequence value late, after younger ones were read. High-water marks with
//! "skip the gap after a timeout" (Marten) turn a slow writer into a lost entry.
//!
//! This source orders by the **writing transaction** instead:
//!
//! - Each row records its writer's transaction id, `tx xid8 DEFAULT pg_current_xact_id()`
//!   (the 64-bit, epoch-extended id: it never wraps around), and a sequence value `seq` that
//!   orders the rows of one transaction.
//! - A read returns only rows with `tx < pg_snapshot_xmin(pg_current_snapshot())`, computed in
//!   the read's own statement, ordered by `(tx, seq)`. The snapshot's xmin is the oldest
//!   transaction still running: every transaction below it has committed or rolled back *in
//!   that snapshot*, so its rows are all visible to the same statement, and no transaction
//!   with an id below xmin can write again. Transaction ids are handed out in increasing
//!   order, so every row that can still appear has `tx >= xmin`, above everything read.
//! - Hence the clause: the rows below a read's `next` are all final. A transaction that took
//!   its sequence value early and commits late holds every later transaction back until it
//!   ends (reads wait, they never skip); a rolled-back one leaves no row; a long transaction
//!   (any that has an id: one that wrote anything anywhere in the cluster) delays every
//!   reader until it ends, and nothing else. There is no timeout and no gap to skip.
//! - Marten's skip paths do not exist here: there is no high-water mark kept between
//!   statements (the horizon and the rows come from one snapshot), no gap detection and no
//!   "skip after a timeout".
//! - Readers never take a transaction id: they call `pg_current_snapshot()`, not
//!   `pg_current_xact_id()` (which assigns one even to a read-only transaction, and would make
//!   every reader hold the horizon back itself).
//!
//! # Positions
//!
//! A position is one `u64`: `tx << 20 | index`, where `index` counts the entries the
//! transaction wrote to the partition, from 0, in `seq` order ([`position`]). Reads go in
//! `(tx, seq)` order, so positions increase strictly in read order. They are stable: a
//! transaction's rows are fixed when it commits, and no row is read before that. They are
//! sparse (transaction ids of other tables and other partitions are never used), as the
//! contract allows. [`append`](PostgresSource::append) and
//! [`append_in`](PostgresSource::append_in) return the position the entry has (once its
//! transaction commits).
//!
//! Limits, each refused with [`SourceError::Setup`](checkpoint_core::source::SourceError) rather
//! than mis-positioned: at most 2^20 (1,048,576) entries per transaction and partition, and
//! transaction ids up to 2^43 - 2 (about 8.8 × 10^12 transactions since the cluster was
//! created: 27 years at 10,000 transactions a second), so that every position stays below
//! `i64::MAX`. The table must stay append-only for the columns read: rows are never updated
//! in `tx`, `seq` or the partition, and deleted only a whole transaction at a time below
//! every checkpoint (deleting one row renumbers the rest of its transaction).
//!
//! The 2^20 entries are enforced where every writer passes, in the database: the trigger
//! `{table}_limit` that [`migrate`](PostgresSource::migrate) installs (see the schema) refuses
//! the `INSERT` or `COPY` statement that takes its transaction past 2^20 entries in one
//! partition, with SQLSTATE `LM001` ([`position::TOO_MANY_ENTRIES_SQLSTATE`]) and a message
//! naming the limit and the partition; the transaction can only roll back (or back to a
//! savepoint before that statement). [`append`](PostgresSource::append) and
//! [`append_in`](PostgresSource::append_in) return that refusal as `Setup`. The trigger keeps a
//! count per partition in a setting local to the transaction: it may count more than the
//! transaction finally leaves (rows it deleted again), which only refuses earlier; a rollback
//! to a savepoint undoes it with the rows. A transaction past the limit can still exist: one
//! written before the trigger was installed, or with triggers disabled (`ALTER TABLE ...
//! DISABLE TRIGGER`, `session_replication_role = replica`). A read never skips its entries
//! after the 2^20th, nor sticks silently: any read that would return them or go on past them
//! (a page that ends at the transaction's 2^20th entry included), and `head` when it is the
//! last, fails with `Setup` naming the transaction, the partition and the repair, an `UPDATE`
//! to run in a transaction of its own, once per 2^20 entries after the first 2^20, which moves
//! them, in their order, to that transaction (read after the entries written since; nothing is
//! skipped, since no read has gone past them and the repair's transaction is above every
//! `next` returned). For the default names:
//!
//! ```sql
//! UPDATE "events" SET tx = pg_current_xact_id()
//!  WHERE "partition" = <partition> AND tx = '<transaction>' AND "seq" IN
//!    (SELECT "seq" FROM "events" WHERE "partition" = <partition> AND tx = '<transaction>'
//!      ORDER BY "seq" OFFSET 1048576 LIMIT 1048576)
//! ```
//!
//! Other limits of the design:
//!
//! - The horizon is the cluster's: a long transaction in any database of the server delays
//!   every reader (a prepared transaction, `PREPARE TRANSACTION`, until it is committed or
//!   rolled back). Keep writing transactions short; monitor `backend_xid` in
//!   `pg_stat_activity`.
//! - Read from the primary. A hot standby's snapshot follows the primary's running
//!   transactions through the WAL, but this source is neither tested nor supported there.
//! - A table restored into another cluster (dump and restore, logical replication) keeps
//!   transaction ids of the old one, which may be above the new cluster's: entries written
//!   after would sort before them. [`verify`](PostgresSource::verify) refuses a table that
//!   holds a transaction id the server has not handed out yet; move such a log to a new table
//!   (new positions, new subscriptions).
//! - Within a transaction, `seq` must increase in insert order, as a sequence default does
//!   within one session.
//!
//! # Partitions
//!
//! The partition is an integer column (`partition` by default, see
//! [`with_partition_column`](PostgresSource::with_partition_column)) in `0..partitions`,
//! chosen by the writer: for example a stable hash of the stream id modulo the partition
//! count, computed by the application. The count is stored beside the table in
//! `{table}_source`; a source with more partitions than stored is refused, one with fewer
//! takes the stored count.
//!
//! ## Partitions that grow
//!
//! The count is a configuration the writers may raise: an entry belongs to the partition
//! number it was written with, whatever the count, so raising it moves nothing.
//! [`grow_to`](PostgresSource::grow_to) raises it (one `UPDATE ... WHERE partitions < n`,
//! never lowering it); a new partition is read from its start.
//! [`discover_partitions`](checkpoint_core::source::Source::discover_partitions) reads it
//! (one `SELECT`, plus the transaction-id check of the setup when it grew) and raises the
//! source's count; a subscription calls it every discovery interval and leases the new
//! partitions without a restart. A count lowered by hand is `Setup`, and the source keeps the
//! count it knew. Waiters on a new partition are woken by its notifications like any other's.
//! What growing does not do: move a stream whose writer computes `hash mod count` (its later
//! entries go to another partition; each entry stays where it was written, but the order of
//! one stream across the two partitions is the writer's concern).
//!
//! # Schema
//!
//! [`migrate`](PostgresSource::migrate) runs, for the default names (`events`, `seq`,
//! `partition`; the table may be `schema.table`, see [`with_table`](PostgresSource::with_table)),
//! in one transaction under an advisory lock:
//!
//! ```sql
//! CREATE TABLE IF NOT EXISTS "events" (
//!     "seq" bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
//!     tx xid8 NOT NULL DEFAULT pg_current_xact_id(),
//!     "partition" integer NOT NULL CHECK ("partition" >= 0),
//!     key text,
//!     payload bytea NOT NULL,
//!     appended_at timestamptz NOT NULL DEFAULT clock_timestamp()
//! );
//! CREATE INDEX IF NOT EXISTS "events_read" ON "events" ("partition", tx, "seq");
//! CREATE TABLE IF NOT EXISTS "events_source" (
//!     partitions integer NOT NULL CHECK (partitions > 0),
//!     one boolean PRIMARY KEY DEFAULT true CHECK (one)
//! );
//! CREATE OR REPLACE FUNCTION "events_notify"() RETURNS trigger LANGUAGE plpgsql AS $$
//! BEGIN
//!     PERFORM pg_notify('events', d.p::text) FROM (SELECT DISTINCT "partition" AS p FROM new_rows) d;
//!     RETURN NULL;
//! END $$;
//! CREATE OR REPLACE TRIGGER "events_notify" AFTER INSERT ON "events"
//!     REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "events_notify"();
//! CREATE OR REPLACE FUNCTION "events_limit"() RETURNS trigger LANGUAGE plpgsql AS $$
//! DECLARE
//!     counter text;
//!     total bigint;
//!     written record;
//! BEGIN
//!     FOR written IN SELECT "partition" AS p, count(*) AS n FROM new_rows WHERE "partition" >= 0 GROUP BY 1 LOOP
//!         counter := 'checkpoint_source.entries_' || TG_RELID || '_' || written.p;
//!         total := coalesce(nullif(current_setting(counter, true), '')::bigint, 0) + written.n;
//!         IF total > 1048576 THEN
//!             RAISE EXCEPTION 'refused: this transaction writes more than 1048576 (2^20) entries to partition % of table %.%, more than a position can number: split such writes into transactions of at most 1048576 entries per partition', written.p, TG_TABLE_SCHEMA, TG_TABLE_NAME
//!                 USING ERRCODE = 'LM001';
//!         END IF;
//!         PERFORM set_config(counter, total::text, true);
//!     END LOOP;
//!     RETURN NULL;
//! END $$;
//! CREATE OR REPLACE TRIGGER "events_limit" AFTER INSERT ON "events"
//!     REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "events_limit"();
//! INSERT INTO "events_source" (partitions) VALUES ($1) ON CONFLICT DO NOTHING;
//! ```
//!
//! `CREATE OR REPLACE TRIGGER` needs PostgreSQL 14 or later; `xid8` 13 or later. The limit
//! trigger counts, per table (`TG_RELID`) and partition, the rows its transaction's statements
//! inserted, in a setting local to the transaction (`set_config(..., true)`), so a statement
//! costs a pass over its own new rows, whatever the transaction wrote before; negative
//! partitions are never read and not counted. Each session keeps one such setting per table and
//! partition it has written (empty outside a transaction).
//!
//! ## An existing event table
//!
//! For a table that already has a sequence column (say `id bigserial`), a partition column
//! and `payload bytea`, run in one transaction the statements
//! [`existing_table_statements`](PostgresSource::existing_table_statements) returns, then
//! [`migrate`](PostgresSource::migrate) (which adds the index, the count and the triggers;
//! run on a table without `tx`, it refuses with `Setup` naming these statements). For the
//! default names:
//!
//! ```sql
//! BEGIN;
//! ALTER TABLE "events" ADD COLUMN IF NOT EXISTS tx xid8;
//! -- The history: committed before every transaction to come, in sequence order, as
//! -- transactions 1, 2, ... of at most 2^20 entries each.
//! UPDATE "events" e SET tx = (1 + r.n / 1048576)::text::xid8
//!   FROM (SELECT "seq" AS s, row_number() OVER (ORDER BY "seq") - 1 AS n
//!           FROM "events" WHERE tx IS NULL) r
//!  WHERE e."seq" = r.s;
//! ALTER TABLE "events" ALTER COLUMN tx SET DEFAULT pg_current_xact_id(),
//!                      ALTER COLUMN tx SET NOT NULL;
//! ALTER TABLE "events" ADD COLUMN IF NOT EXISTS key text;
//! ALTER TABLE "events" ADD COLUMN IF NOT EXISTS appended_at timestamptz NOT NULL
//!   DEFAULT clock_timestamp();
//! COMMIT;
//! ```
//!
//! `ALTER TABLE` locks the table, so no writer runs meanwhile; every later writer has a real
//! transaction id, far above the history's.
//!
//! # Waking readers
//!
//! The trigger sends `NOTIFY` with the partition of each insert; PostgreSQL delivers it at
//! commit. Each source keeps one `LISTEN` connection (its own, outside the pool, named
//! [`LISTENER_APPLICATION_NAME`]) in a task, so a commit reaches an idle
//! [`wait`](checkpoint_core::source::Source::wait) in milliseconds. A notification can only be
//! lost while that connection is down: after every (re)connection the task wakes every waiter,
//! which reads again, and while it is down waiters poll every
//! [`with_poll_interval`](PostgresSource::with_poll_interval) (default 500 ms). A committed
//! entry that waits behind an older transaction is polled for (1 ms doubling to 50 ms), since
//! the older transaction may end without writing to the table, and, for the first four
//! pauses (15 ms), at the table's next notification of any partition (its transaction has
//! ended, often the very one the entry waits for). A table without the trigger
//! works too, polling.
//!
//! The notification has a price under concurrent writers: PostgreSQL makes a transaction that
//! notifies hold one lock of the database from its commit's start until after its WAL flush,
//! so notifying writers commit one flush after another instead of sharing flushes (PostgreSQL
//! 15 on 2 cores, pgbench, 16 clients of one-row inserts: 4.5 ms a commit without the
//! notification, 14-19 ms with it). Sending it after the commit in a statement of its own does
//! not help: a notifying transaction takes a transaction id, so each of those holds the
//! horizon back too (measured: entries waited for it, and the tail of commit → reader grew).
//!
//! # Costs
//!
//! | operation | statements |
//! | --- | --- |
//! | `read` | 1: one seek of the `(partition, tx, seq)` index, under one snapshot with its horizon. A read from inside a transaction that this source's own reads did not stop at (a checkpoint stored by another process) skips that transaction's first entries instead, planned for its values. A page that ends at a transaction's 2^20th entry in the partition: 1 more seek (whether it wrote more) |
//! | `head` | 1: the last readable transaction of the partition and how many entries it wrote there (linear in that transaction's entries), planned for its values |
//! | `heads` | 1 for every partition asked, however many: per partition the same two index seeks as `head`, under one snapshot (so one horizon: atomic across partitions), prepared once per connection (its generic plan is those seeks too). One round trip once prepared, measured on the wire for 1,024 partitions (sqlx's `test_before_acquire`, a pool setting on by default, adds its ping to this as to every operation) |
//! | `wait` | 1 per wake-up or poll: three index-ordered `LIMIT 1` scans |
//! | `append`, `append_in` | 1: the insert, `RETURNING` the transaction id and the entry's index; its two statement triggers (below) |
//! | an `INSERT` or `COPY` of the application's | the table's two statement triggers, each a pass over the statement's new rows (`{table}_notify` one `pg_notify` per partition, `{table}_limit` one setting read and written per partition): linear in the statement's rows, not in what its transaction wrote before |
//! | the first operation of a source | the setup check, once (see [`verify`](PostgresSource::verify)) |
//!
//! The limit trigger's share, measured on PostgreSQL 15 on a 2-core machine (20,000 one-row
//! `INSERT`s in a PL/pgSQL loop, one transaction): about 15-20 µs per statement (29 µs without
//! it, 44-50 µs with it), and no more after 10^6 rows in the same transaction (36 µs); within
//! the noise of one `INSERT` of 2^20 rows (6 s either way).
//!
//! The statements a reader repeats are prepared once per connection and written so that a
//! generic plan still seeks the index (an `EXISTS` over a range of `tx` was planned as a
//! sequential scan once the table was large: 16 ms per wait on 200,000 rows).
//!
//! Measured on a 2-core machine (`cargo run --release -p checkpoint-source-postgres --example
//! source_bench`): reading one partition of 200,000 entries in pages of 1,000 at 0.86-0.87×
//! the rate of the raw `seq > $2 ORDER BY seq` query of the same rows on its own index (0.64×
//! beside another session's pgbench load); commit → reader p50 under 1 ms on a quiet server,
//! at rest and under 16 writers (each commit's WAL flush comes first). Beside a pgbench load
//! on another database of the server, p50 16-26 ms: each entry waits until the transactions
//! older than its own have ended, wherever they write.
//!
//! # Durability
//!
//! An entry is read once its transaction has committed and every older one has ended. With
//! `synchronous_commit = off`, or after a failover to an asynchronous standby, a commit that a
//! reader saw can be lost, and its transaction id may be handed out again: as with any
//! reader, that entry is lost, and another may later take its position. Keep
//! `synchronous_commit` on for the writers of an event table.
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod append;
mod error;
mod growth;
mod heads;
mod layout;
mod listener;
pub mod position;
mod schema;
mod source;
mod statements;

pub use listener::LISTENER_APPLICATION_NAME;
pub use source::{DEFAULT_POLL_INTERVAL, DEFAULT_TIMEOUT, PostgresSource};

/// The name of the backend in errors: `"postgres"`.
pub const BACKEND: &str = "postgres";

/// The table a source reads unless [`PostgresSource::with_table`] says otherwise.
pub const DEFAULT_TABLE: &str = "events";

/// The partition column unless [`PostgresSource::with_partition_column`] says otherwise.
pub const DEFAULT_PARTITION_COLUMN: &str = "partition";

/// The sequence column unless [`PostgresSource::with_sequence_column`] says otherwise.
pub const DEFAULT_SEQUENCE_COLUMN: &str = "seq";
