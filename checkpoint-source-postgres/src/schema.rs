//! Creating a new event table ([`migrate`]) and checking an existing one before the first read
//! ([`verify`]): a table that is not set up as the source expects is refused with
//! [`SourceError::Setup`] naming what to do, and nothing is read.

use checkpoint_core::source::SourceError;
use sqlx::{AssertSqlSafe, PgPool, Row};

use crate::error::{backend, setup};
use crate::layout::{INDEX_SUFFIX, Layout, META_SUFFIX, NOTIFY_SUFFIX};

/// What [`verify`] found besides the table being usable.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Verified {
    /// Whether the table has the trigger that notifies readers (else they poll).
    pub(crate) notifies: bool,
}

/// The statements that create the table, its index, the partition count's table and the
/// notification trigger, each idempotent; then [`store_partitions`] records the count.
pub(crate) fn migration(layout: &Layout) -> Vec<String> {
    let table = layout.quoted();
    let p = &layout.partition_column;
    let seq = &layout.sequence_column;
    let bare = &layout.table;
    let meta = layout.beside(META_SUFFIX);
    let function = layout.beside(NOTIFY_SUFFIX);
    let channel = layout.channel();
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
    let found: Option<(bool, bool, bool)> = sqlx::query_as(
        "SELECT to_regclass($1) IS NOT NULL, to_regclass($2) IS NOT NULL,
                EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = to_regclass($1) AND tgname = $3)",
    )
    .bind(layout.quoted())
    .bind(layout.beside(META_SUFFIX))
    .bind(format!("{}{NOTIFY_SUFFIX}", layout.table))
    .fetch_optional(pool)
    .await
    .map_err(fail)?;
    let (table, meta, notifies) = found.unwrap_or_default();
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
    let statement = AssertSqlSafe(format!(
        "SELECT partitions FROM {}",
        layout.beside(META_SUFFIX)
    ));
    let stored: Vec<i32> = sqlx::query_scalar(statement)
        .fetch_all(pool)
        .await
        .map_err(fail)?;
    match stored.as_slice() {
        [stored] if i64::from(*stored) == i64::from(partitions) => {}
        [stored] => {
            return Err(setup(format!(
                "table {name} was set up with {stored} partitions and this source has \
                 {partitions}: create the source with {stored} partitions (a new count moves \
                 entries between partitions, so it needs a new table and new subscriptions)"
            )));
        }
        _ => {
            return Err(setup(format!(
                "table {name}{META_SUFFIX} holds no partition count: insert one (INSERT INTO \
                 {name}{META_SUFFIX} (partitions) VALUES ({partitions})) or run migrate"
            )));
        }
    }
    verify_transaction_ids(pool, layout, partitions).await?;
    if !notifies {
        tracing::warn!(
            table = %name,
            "no {}{NOTIFY_SUFFIX} trigger: readers poll instead of being woken",
            layout.table
        );
    }
    Ok(Verified { notifies })
}

/// Refuses a table holding a transaction id this server has not handed out yet: rows restored
/// from another cluster, which entries written from now on would sort before.
async fn verify_transaction_ids(
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
            "add it: ALTER TABLE ... ADD COLUMN tx xid8 NOT NULL DEFAULT pg_current_xact_id() (see the crate doc)",
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

async fn verify_columns(pool: &PgPool, layout: &Layout) -> Result<(), SourceError> {
    let rows = sqlx::query(
        "SELECT a.attname::text, t.typname::text, pg_get_expr(d.adbin, d.adrelid), a.attnotnull
           FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
           LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
          WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped",
    )
    .bind(layout.quoted())
    .fetch_all(pool)
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
    let per_transaction = crate::position::MAX_ENTRIES_PER_TRANSACTION;
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
        for statement in statements {
            let statement = normalize(&statement);
            assert!(doc.contains(&statement), "the crate doc lacks: {statement}");
        }
    }
}
