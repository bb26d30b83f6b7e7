//! The statements of one source, built once from its validated [`Layout`].
//!
//! Every read filters on `tx < pg_snapshot_xmin(pg_current_snapshot())` computed in the same
//! statement, so the horizon and the rows come from one snapshot: every transaction below the
//! horizon has ended in that snapshot, so its committed rows are all visible in it and no row
//! with such a transaction id can appear later. `pg_current_snapshot()` assigns no transaction
//! id, so readers never consume xids (`pg_current_xact_id()` would).

use std::sync::Arc;

use sqlx::AssertSqlSafe;

use crate::layout::Layout;

/// The horizon of a statement: the oldest transaction still running in its snapshot.
const HORIZON: &str =
    "WITH horizon AS MATERIALIZED (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin)";

/// The SQL of one source's operations.
#[derive(Debug, Clone)]
pub(crate) struct Statements {
    /// `$1` partition, `$2` transaction id to start at, `$3` entries of it to skip, `$4` max:
    /// rows `(tx, seq, key, payload, appended_at µs)` in read order.
    pub(crate) read: Arc<str>,
    /// `$1` partition, `$2` transaction id, `$3` sequence value, `$4` max: the same rows after
    /// `($2, $3)` in read order, found by one seek of the index (no entries to skip).
    pub(crate) read_after: Arc<str>,
    /// `$1` partition: the last readable transaction and how many entries it wrote there.
    pub(crate) head: Arc<str>,
    /// `$1` partitions (`int8[]`): per partition, in the order given, the partition, its last
    /// readable transaction (null for none) and how many entries it wrote there: `head`'s
    /// answer for each, under one horizon.
    pub(crate) heads: Arc<str>,
    /// `$1` partition, `$2` transaction id, `$3` entries to skip: whether a read from there
    /// returns something now, and whether committed rows wait for the horizon.
    pub(crate) probe: Arc<str>,
    /// `$1` partition, `$2` transaction id, `$3` sequence value: as `probe`, from after the
    /// entry `($2, $3)`.
    pub(crate) probe_after: Arc<str>,
    /// `$1` partition, `$2` key, `$3` payload: the writer's transaction id and the entry's index
    /// among that transaction's entries of the partition.
    pub(crate) append: Arc<str>,
    /// `$1` partition, `$2` transaction id, `$3` sequence value: whether that (ended)
    /// transaction wrote another row to the partition after `$3`, one seek of the index.
    pub(crate) more_in_transaction: Arc<str>,
}

impl Statements {
    pub(crate) fn for_layout(layout: &Layout) -> Self {
        let table = layout.quoted();
        let p = &layout.partition_column;
        let seq = &layout.sequence_column;
        let columns = format!(
            "e.tx::text::int8 AS tx, e.\"{seq}\"::int8 AS seq, e.key, e.payload, \
             (extract(epoch FROM e.appended_at) * 1000000)::int8 AS at"
        );
        let readable = "e.tx < (SELECT xmin FROM horizon)";
        let start = "$2::int8::text::xid8";
        let read = format!(
            "{HORIZON} SELECT tx, seq, key, payload, at FROM ( \
               (SELECT {columns} FROM {table} e \
                 WHERE e.\"{p}\" = $1 AND e.tx = {start} AND {readable} \
                 ORDER BY e.\"{seq}\" OFFSET $3 LIMIT $4) \
               UNION ALL \
               (SELECT {columns} FROM {table} e \
                 WHERE e.\"{p}\" = $1 AND e.tx > {start} AND {readable} \
                 ORDER BY e.tx, e.\"{seq}\" LIMIT $4) \
             ) page ORDER BY tx, seq LIMIT $4"
        );
        let read_after = format!(
            "{HORIZON} SELECT {columns} FROM {table} e \
              WHERE e.\"{p}\" = $1 AND (e.tx, e.\"{seq}\") > ({start}, $3) AND {readable} \
              ORDER BY e.tx, e.\"{seq}\" LIMIT $4"
        );
        let head = format!(
            "{HORIZON}, last AS (SELECT e.tx FROM {table} e WHERE e.\"{p}\" = $1 AND {readable} \
                                 ORDER BY e.tx DESC LIMIT 1) \
             SELECT last.tx::text::int8, \
                    (SELECT count(*) FROM {table} e WHERE e.\"{p}\" = $1 AND e.tx = last.tx) \
               FROM last"
        );
        let heads = heads_statement(&table, p, readable);
        // Each part is the first row of an index-ordered scan (`ORDER BY ... LIMIT 1`), so
        // even a generic plan of a prepared statement seeks the index instead of scanning the
        // table (an `EXISTS` over a range of `tx` may be planned as a sequential scan).
        let first_after = format!(
            "COALESCE((SELECT {readable} FROM {table} e \
                        WHERE e.\"{p}\" = $1 AND (e.tx, e.\"{seq}\") > ({start}, $3) \
                        ORDER BY e.tx, e.\"{seq}\" LIMIT 1), false)"
        );
        let first_in_later = format!(
            "COALESCE((SELECT {readable} FROM {table} e WHERE e.\"{p}\" = $1 AND e.tx > {start} \
                        ORDER BY e.tx LIMIT 1), false) \
             OR EXISTS (SELECT 1 FROM {table} e WHERE e.\"{p}\" = $1 AND e.tx = {start} \
                          AND {readable} ORDER BY e.\"{seq}\" OFFSET $3)"
        );
        let pending = format!(
            "COALESCE((SELECT e.tx FROM {table} e WHERE e.\"{p}\" = $1 ORDER BY e.tx DESC LIMIT 1) \
                      >= GREATEST({start}, (SELECT xmin FROM horizon)), false)"
        );
        let probe_after = format!("{HORIZON} SELECT {first_after}, {pending}");
        let probe = format!("{HORIZON} SELECT {first_in_later}, {pending}");
        // The subquery of RETURNING sees the statement's snapshot, without the new row: the
        // entries this transaction wrote to the partition before, so the new one's index.
        let append = format!(
            "INSERT INTO {table} (\"{p}\", key, payload) VALUES ($1, $2, $3) \
             RETURNING tx::text::int8, \
               (SELECT count(*) FROM {table} e WHERE e.\"{p}\" = $1 AND e.tx = pg_current_xact_id())"
        );
        let more_in_transaction = format!(
            "SELECT EXISTS (SELECT 1 FROM {table} e \
              WHERE e.\"{p}\" = $1 AND e.tx = {start} AND e.\"{seq}\" > $3)"
        );
        Self {
            read: read.into(),
            read_after: read_after.into(),
            head: head.into(),
            heads: heads.into(),
            probe: probe.into(),
            probe_after: probe_after.into(),
            append: append.into(),
            more_in_transaction: more_in_transaction.into(),
        }
    }
}

/// `head` per asked partition (`$1`, an `int8[]`), one statement: a nested loop over the array
/// whose inner side is `head`'s two index seeks (the last readable `tx`, backwards, then the
/// count of its rows), so a generic plan too is 2 index lookups per partition, never a scan;
/// one snapshot, so one horizon, for every partition.
fn heads_statement(table: &str, p: &str, readable: &str) -> String {
    format!(
        "{HORIZON} SELECT asked.p, last.tx::text::int8, \
                (SELECT count(*) FROM {table} e WHERE e.\"{p}\" = asked.p AND e.tx = last.tx) \
           FROM unnest($1::int8[]) WITH ORDINALITY AS asked(p, n) \
           LEFT JOIN LATERAL (SELECT e.tx FROM {table} e \
                               WHERE e.\"{p}\" = asked.p AND {readable} \
                               ORDER BY e.tx DESC LIMIT 1) last ON true \
          ORDER BY asked.n"
    )
}

/// A statement for sqlx: the text is built only from validated identifiers (see [`Layout`]).
///
/// sqlx prepares it once per connection; PostgreSQL may then plan it once for any parameters
/// (a generic plan), which these statements are written to survive.
pub(crate) fn sql(statement: &Arc<str>) -> AssertSqlSafe<Arc<str>> {
    AssertSqlSafe(Arc::clone(statement))
}

/// Runs `statement` unprepared (an unnamed statement, planned for its parameters each time):
/// for the statements whose best plan depends on the values (how many entries a transaction
/// has, how far into it a read starts), off the hot path.
pub(crate) fn planned_each_time(
    statement: &Arc<str>,
) -> sqlx::query::Query<'static, sqlx::Postgres, sqlx::postgres::PgArguments> {
    sqlx::query(sql(statement)).persistent(false)
}
