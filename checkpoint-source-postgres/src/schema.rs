//! Creating a new event table ([`migrate`]) and checking an existing one before the first read
//! ([`verify`]): a table that is not set up as the source expects is refused with
//! [`SourceError::Setup`] naming what to do, and nothing is read.

use checkpoint_core::source::SourceError;
use sqlx::{AssertSqlSafe, PgPool, Row};

use crate::error::{backend, setup};
use crate::layout::{INDEX_SUFFIX, LIMIT_SUFFIX, Layout, META_SUFFIX, NOTIFY_SUFFIX};
use crate::position::{MAX_ENTRIES_PER_TRANSACTION, TOO_MANY_ENTRIES_SQLSTATE};

/// What [`verify`] found besides the table being usable.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Verified {
    /// Whether the table has the trigger that notifies readers (else they poll).
    pub(crate) notifies: bool,
    /// The partition count stored: the source's, or more when the log grew.
    pub(crate) partitions: u32,
}

/// The statements that create the table, its index, the partition count's table, the
/// notification trigger and the limit trigger, each idempotent; then [`store_partitions`]
/// records the count.
pub(crate) fn migration(layout: &Layout) -> Vec<String> {
    let table = layout.quoted();
    let p = &layout.partition_column;
    let seq = &layout.sequence_column;
    let bare = &layout.table;
    let meta = layout.beside(META_SUFFIX);
    let function = layout.beside(NOTIFY_SUFFIX);
    let channel = layout.channel();
    let [limit_function, limit_trigger] = limit_trigger(layout);
    vec![
        format!(
            "CREATE TABLE IF NOT EXISTS {table} (\n    \
               \"{seq}\" bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,\n    \
               tx xid8 NOT NULL DEFAULT pg_current_xact_id(),\n    \
               \"{p}\" integer NOT NULL CHECK (\"{p}\" >= 0),\n    \
               key text,\n    \
               payload bytea NOT NULL,\n    \
               appended_at timestamptz NOT NULL DEFAULT clock_timestamp()\n)"
        ),
        format!(
            "CREATE INDEX IF NOT EXISTS \"{bare}{INDEX_SUFFIX}\" ON {table} (\"{p}\", tx, \"{seq}\")"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS {meta} (\n    \
               partitions integer NOT NULL CHECK (partitions > 0),\n    \
               one boolean PRIMARY KEY DEFAULT true CHECK (one)\n)"
        ),
        format!(
            "CREATE OR REPLACE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS $$\n\
             BEGIN\n    \
               PERFORM pg_notify('{channel}', d.p::text) FROM (SELECT DISTINCT \"{p}\" AS p FROM new_rows) d;\n    \
               RETURN NULL;\n\
             END $$"
        ),
        format!(
            "CREATE OR REPLACE TRIGGER \"{bare}{NOTIFY_SUFFIX}\" AFTER INSERT ON {table}\n    \
               REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {function}()"
        ),
        limit_function,
        limit_trigger,
    ]
}

/// The function and the trigger `{table}_limit`: they refuse, in the database and so for every
/// writer (plain `INSERT`s and `COPY` too, not only `append`), a statement that takes its
/// transaction past 2^20 entries in one partition, more than a position can number.
///
/// The count is a setting local to the transaction (`set_config(..., true)`), one per table
/// (its oid, so that two tables whose names differ only in case do not share one) and
/// partition, to which each statement adds its own new rows: the cost of a statement is a pass
/// over its own rows and one setting per partition it writes, whatever the transaction wrote
/// before. The count only grows, so it may exceed what the transaction finally leaves in the
/// partition (rows it deleted again, rows inserted with another `tx`): that only refuses
/// earlier, never lets a longer transaction through, since what a commit leaves with the
/// writer's id is a subset of what its inserts put there. A rollback to a savepoint undoes the
/// count with the rows (PostgreSQL reverts a setting made with `is_local` at `ROLLBACK TO
/// SAVEPOINT`, checked on 15), and a refused statement undoes its own additions as it fails.
/// Negative partitions (possible in an existing table without the `CHECK`) are never read, so
/// they are not counted, and their `-` would not fit a setting's name.
fn limit_trigger(layout: &Layout) -> [String; 2] {
    let table = layout.quoted();
    let p = &layout.partition_column;
    let bare = &layout.table;
    let function = layout.beside(LIMIT_SUFFIX);
    let max = MAX_ENTRIES_PER_TRANSACTION;
    let code = TOO_MANY_ENTRIES_SQLSTATE;
    [
        format!(
            "CREATE OR REPLACE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS $$\n\
             DECLARE\n    \
               counter text;\n    \
               total bigint;\n    \
               written record;\n\
             BEGIN\n    \
               FOR written IN SELECT \"{p}\" AS p, count(*) AS n FROM new_rows WHERE \"{p}\" >= 0 GROUP BY 1 LOOP\n        \
                 counter := 'checkpoint_source.entries_' || TG_RELID || '_' || written.p;\n        \
                 total := coalesce(nullif(current_setting(counter, true), '')::bigint, 0) + written.n;\n        \
                 IF total > {max} THEN\n            \
                   RAISE EXCEPTION 'refused: this transaction writes more than {max} (2^20) entries to partition % of table %.%, more than a position can number: split such writes into transactions of at most {max} entries per partition', written.p, TG_TABLE_SCHEMA, TG_TABLE_NAME\n                \
                     USING ERRCODE = '{code}';\n        \
                 END IF;\n        \
                 PERFORM set_config(counter, total::text, true);\n    \
               END LOOP;\n    \
               RETURN NULL;\n\
             END $$"
        ),
        format!(
            "CREATE OR REPLACE TRIGGER \"{bare}{LIMIT_SUFFIX}\" AFTER INSERT ON {table}\n    \
               REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {function}()"
        ),
    ]
}

/// Creates what is missing, in one transaction under an advisory lock (concurrent migrations
/// of one table wait for each other), then checks the result as a read would.
pub(crate) async fn migrate(
    pool: &PgPool,
    layout: &Layout,
    partitions: u32,
) -> Result<Verified, SourceError> {
    let fail = |error| backend("migrate", error);
    let mut transaction = pool.begin().await.map_err(fail)?;
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext('checkpoint-source-postgres ' || $1))")
        .bind(layout.display())
        .execute(&mut *transaction)
        .await
        .map_err(fail)?;
    // An existing table is checked before anything is created on it: the index on `tx` would
    // fail on a table without that column with the server's "column does not exist" instead
    // of what to do. The rollback of `transaction` leaves nothing behind.
    let exists: bool = sqlx::query_scalar("SELECT to_regclass($1) IS NOT NULL")
        .bind(layout.quoted())
        .fetch_one(&mut *transaction)
        .await
        .map_err(fail)?;
    if exists {
        verify_columns(&mut *transaction, layout).await?;
    }
    for statement in migration(layout) {
        sqlx::query(AssertSqlSafe(statement))
            .execute(&mut *transaction)
            .await
            .map_err(fail)?;
    }
    // A count stored before is kept: `verify` then refuses a source with another one.
    sqlx::query(AssertSqlSafe(store_partitions(layout)))
        .bind(i64::from(partitions))
        .execute(&mut *transaction)
        .await
        .map_err(fail)?;
    transaction.commit().await.map_err(fail)?;
    verify(pool, layout, partitions).await
}

/// Records the partition count (`$1`) unless one is stored.
pub(crate) fn store_partitions(layout: &Layout) -> String {
    format!(
        "INSERT INTO {} (partitions) VALUES ($1) ON CONFLICT DO NOTHING",
        layout.beside(META_SUFFIX)
    )
}

/// Checks the table, its columns, the stored partition count and the trigger.
pub(crate) async fn verify(
    pool: &PgPool,
    layout: &Layout,
    partitions: u32,
) -> Result<Verified, SourceError> {
    let fail = |error| backend("verify", error);
    let name = layout.display();
    let found: Option<(bool, bool, bool, bool)> = sqlx::query_as(
        "SELECT to_regclass($1) IS NOT NULL, to_regclass($2) IS NOT NULL,
                EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = to_regclass($1) AND tgname = $3),
                EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = to_regclass($1) AND tgname = $4)",
    )
    .bind(layout.quoted())
    .bind(layout.beside(META_SUFFIX))
    .bind(format!("{}{NOTIFY_SUFFIX}", layout.table))
    .bind(format!("{}{LIMIT_SUFFIX}", layout.table))
    .fetch_optional(pool)
    .await
    .map_err(fail)?;
    let (table, meta, notifies, limits) = found.unwrap_or_default();
    if !table {
        return Err(setup(format!(
            "table {name} does not exist: create it with PostgresSource::migrate, or name your \
             event table with with_table (the crate doc has the ALTER TABLE for an existing one)"
        )));
    }
    verify_columns(pool, layout).await?;
    if !meta {
        return Err(setup(format!(
            "table {name}{META_SUFFIX}, which keeps the partition count, does not exist: run \
             PostgresSource::migrate (it creates only what is missing) or the crate doc's SQL"
        )));
    }
    let stored = stored_partitions(pool, layout, partitions, "verify").await?;
    if stored < partitions {
        return Err(setup(format!(
            "table {name} has {stored} partitions (in {name}{META_SUFFIX}) and this source has \
             {partitions}: create the source with {stored} partitions, or grow the log to \
             {partitions} first with PostgresSource::grow_to (a count only grows: entries stay \
             in the partition number they were written to)"
        )));
    }
    verify_transaction_ids(pool, layout, stored).await?;
    if !limits {
        // Reads still never skip: they stop with a setup error at such a transaction.
        tracing::warn!(
            table = %name,
            "no {}{LIMIT_SUFFIX} trigger: a transaction that writes more than {} entries to a \
             partition is not refused, and reads stop at it; run migrate",
            layout.table,
            MAX_ENTRIES_PER_TRANSACTION
        );
    }
    if !notifies {
        tracing::warn!(
            table = %name,
            "no {}{NOTIFY_SUFFIX} trigger: readers poll instead of being woken",
            layout.table
        );
    }
    Ok(Verified {
        notifies,
        partitions: stored,
    })
}

/// The partition count stored in `{table}_source` (one row); `partitions` only names the
/// count to insert when the row is missing.
pub(crate) async fn stored_partitions(
    pool: &PgPool,
    layout: &Layout,
    partitions: u32,
    operation: &'static str,
) -> Result<u32, SourceError> {
    let name = layout.display();
    let statement = AssertSqlSafe(format!(
        "SELECT partitions FROM {}",
        layout.beside(META_SUFFIX)
    ));
    let stored: Vec<i32> = sqlx::query_scalar(statement)
        .fetch_all(pool)
        .await
        .map_err(|error| backend(operation, error))?;
    match stored.as_slice() {
        // The CHECK (partitions > 0) keeps it positive.
        [stored] => u32::try_from(*stored).map_err(|_| {
            setup(format!(
                "table {name}{META_SUFFIX} holds {stored} as the partition count: write the \
                 count the log has there"
            ))
        }),
        _ => Err(setup(format!(
            "table {name}{META_SUFFIX} holds no partition count: insert one (INSERT INTO \
             {name}{META_SUFFIX} (partitions) VALUES ({partitions})) or run migrate"
        ))),
    }
}

/// Refuses a table holding a transaction id this server has not handed out yet: rows restored
/// from another cluster, which entries written from now on would sort before.
pub(crate) async fn verify_transaction_ids(
    pool: &PgPool,
    layout: &Layout,
    partitions: u32,
) -> Result<(), SourceError> {
    let table = layout.quoted();
    let p = &layout.partition_column;
    // One index probe per partition for its highest transaction id.
    let statement = AssertSqlSafe(format!(
        "SELECT EXISTS (SELECT 1 FROM generate_series(0, $1 - 1) p \
          WHERE (SELECT e.tx FROM {table} e WHERE e.\"{p}\" = p ORDER BY e.tx DESC LIMIT 1) \
                >= pg_snapshot_xmax(pg_current_snapshot()))"
    ));
    let foreign: bool = sqlx::query_scalar(statement)
        .bind(i64::from(partitions))
        .fetch_one(pool)
        .await
        .map_err(|error| backend("verify", error))?;
    if foreign {
        return Err(setup(format!(
            "table {} holds transaction ids this server has not handed out yet (restored from \
             another cluster?): entries written now would sort before them; move the log to a \
             new table (new positions, new subscriptions)",
            layout.display()
        )));
    }
    Ok(())
}

/// The columns a read needs and the types it accepts: (name, accepted `typname`s, what to do).
fn expected_columns(layout: &Layout) -> [(&str, &'static [&'static str], &'static str); 6] {
    const INTEGER: &[&str] = &["int2", "int4", "int8"];
    [
        (
            layout.sequence_column.as_str(),
            INTEGER,
            "the sequence column must be an integer filled from a sequence in insert order (bigint GENERATED ALWAYS AS IDENTITY); name yours with with_sequence_column",
        ),
        (
            "tx",
            &["xid8"],
            "run the statements of PostgresSource::existing_table_statements in one transaction (they add it, number the rows already there as transactions of at most 2^20 entries and give it its default pg_current_xact_id()), then migrate",
        ),
        (
            layout.partition_column.as_str(),
            INTEGER,
            "the partition column must be an integer in 0..partitions; name yours with with_partition_column",
        ),
        (
            "key",
            &["text", "varchar"],
            "add it: ALTER TABLE ... ADD COLUMN key text",
        ),
        ("payload", &["bytea"], "the payload column must be bytea"),
        (
            "appended_at",
            &["timestamptz"],
            "add it: ALTER TABLE ... ADD COLUMN appended_at timestamptz NOT NULL DEFAULT clock_timestamp()",
        ),
    ]
}

async fn verify_columns(
    executor: impl sqlx::PgExecutor<'_>,
    layout: &Layout,
) -> Result<(), SourceError> {
    let rows = sqlx::query(
        "SELECT a.attname::text, t.typname::text, pg_get_expr(d.adbin, d.adrelid), a.attnotnull
           FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
           LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
          WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped",
    )
    .bind(layout.quoted())
    .fetch_all(executor)
    .await
    .map_err(|error| backend("verify", error))?;
    let name = layout.display();
    for (column, types, todo) in expected_columns(layout) {
        let found = rows.iter().find(|row| row.get::<String, _>(0) == column);
        let Some(row) = found else {
            return Err(setup(format!(
                "table {name} has no column {column}: {todo}"
            )));
        };
        let typname: String = row.get(1);
        if !types.contains(&typname.as_str()) {
            return Err(setup(format!(
                "column {column} of table {name} is of type {typname}, not {}: {todo}",
                types.join(" or ")
            )));
        }
        let not_null: bool = row.get(3);
        let ordered = [
            "tx",
            layout.sequence_column.as_str(),
            layout.partition_column.as_str(),
        ];
        if ordered.contains(&column) && !not_null {
            return Err(setup(format!(
                "column {column} of table {name} may be null, and a read orders by it: \
                 ALTER TABLE {name} ALTER COLUMN {column} SET NOT NULL"
            )));
        }
        if column == "tx" {
            let default: Option<String> = row.get(2);
            if default.as_deref() != Some("pg_current_xact_id()") {
                return Err(setup(format!(
                    "column tx of table {name} must default to pg_current_xact_id() (the writing \
                     transaction's id, which the reads order by): ALTER TABLE {name} ALTER COLUMN \
                     tx SET DEFAULT pg_current_xact_id()"
                )));
            }
        }
    }
    Ok(())
}

/// The statements that prepare an existing table (see
/// [`PostgresSource::existing_table_statements`](crate::PostgresSource::existing_table_statements)).
pub(crate) fn existing_table(layout: &Layout) -> Vec<String> {
    let table = layout.quoted();
    let seq = &layout.sequence_column;
    let per_transaction = MAX_ENTRIES_PER_TRANSACTION;
    vec![
        format!("ALTER TABLE {table} ADD COLUMN IF NOT EXISTS tx xid8"),
        // The history: committed before every transaction to come, in sequence order, as
        // transactions 1, 2, ... of at most 2^20 entries each (far below any real xid8 now).
        format!(
            "UPDATE {table} e SET tx = (1 + r.n / {per_transaction})::text::xid8 \
               FROM (SELECT \"{seq}\" AS s, row_number() OVER (ORDER BY \"{seq}\") - 1 AS n \
                       FROM {table} WHERE tx IS NULL) r \
              WHERE e.\"{seq}\" = r.s"
        ),
        format!(
            "ALTER TABLE {table} ALTER COLUMN tx SET DEFAULT pg_current_xact_id(), \
                                 ALTER COLUMN tx SET NOT NULL"
        ),
        format!("ALTER TABLE {table} ADD COLUMN IF NOT EXISTS key text"),
        format!(
            "ALTER TABLE {table} ADD COLUMN IF NOT EXISTS appended_at timestamptz NOT NULL \
               DEFAULT clock_timestamp()"
        ),
    ]
}

/// The refusal of a read that reached a transaction with more than 2^20 entries in
/// `partition` (written before migrate installed the limit trigger, or with triggers disabled):
/// what happened and the repair, instead of skipping the entries a position cannot number.
pub(crate) fn too_many_entries(layout: &Layout, partition: u32, xid: u64) -> SourceError {
    let max = MAX_ENTRIES_PER_TRANSACTION;
    setup(format!(
        "transaction {xid} wrote more than {max} (2^20) entries to partition {partition} of \
         table {name} (before migrate installed the {bare}{LIMIT_SUFFIX} trigger that refuses \
         such transactions, or with triggers disabled): a position cannot number the entries \
         after the {max}th, so reads stop there rather than skip them. Move those entries to \
         transactions of their own, read after the entries written since, by running in a \
         transaction of its own, again until reads go on (each run moves {max}): {repair}; and \
         run migrate so that the trigger refuses such transactions from now on",
        name = layout.display(),
        bare = layout.table,
        repair = repair_statement(layout, &partition.to_string(), &xid.to_string()),
    ))
}

/// The repair [`too_many_entries`] names: moves the next 2^20 entries after the 2^20th that
/// transaction `xid` wrote to `partition` to the transaction that runs it. No reader has read
/// past them (reads stop before them, and a read never returns a row of a transaction that has
/// not ended), and the running transaction's id is above every `next` a read has returned, so
/// nothing is skipped; they are read after the entries written since, in their old order.
pub(crate) fn repair_statement(layout: &Layout, partition: &str, xid: &str) -> String {
    let table = layout.quoted();
    let p = &layout.partition_column;
    let seq = &layout.sequence_column;
    let max = MAX_ENTRIES_PER_TRANSACTION;
    let of_it = format!("\"{p}\" = {partition} AND tx = '{xid}'");
    format!(
        "UPDATE {table} SET tx = pg_current_xact_id() WHERE {of_it} AND \"{seq}\" IN \
           (SELECT \"{seq}\" FROM {table} WHERE {of_it} ORDER BY \"{seq}\" OFFSET {max} LIMIT {max})"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The crate doc shows the statements of the default layout; they must not drift apart.
    #[test]
    fn the_crate_doc_shows_the_statements_migrate_and_the_existing_table_recipe_run() {
        let normalize = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
        let doc: String = include_str!("lib.rs")
            .lines()
            .filter_map(|line| line.strip_prefix("//!"))
            .collect::<Vec<_>>()
            .join("\n");
        let doc = normalize(&doc);
        let layout = Layout::default();
        let mut statements = migration(&layout);
        statements.push(store_partitions(&layout));
        statements.extend(existing_table(&layout));
        statements.push(repair_statement(&layout, "<partition>", "<transaction>"));
        for statement in statements {
            let statement = normalize(&statement);
            assert!(doc.contains(&statement), "the crate doc lacks: {statement}");
        }
    }
}
