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
    /// `$1` partition: the last readable transaction and how many entries it wrote there.
    pub(crate) head: Arc<str>,
    /// `$1` partition, `$2` transaction id, `$3` entries to skip: whether a read from there
    /// returns something now, and whether committed rows wait for the horizon.
    pub(crate) probe: Arc<str>,
    /// `$1` partition, `$2` key, `$3` payload: the writer's transaction id and the entry's index
    /// among that transaction's entries of the partition.
    pub(crate) append: Arc<str>,
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
        let head = format!(
            "{HORIZON}, last AS (SELECT e.tx FROM {table} e WHERE e.\"{p}\" = $1 AND {readable} \
                                 ORDER BY e.tx DESC LIMIT 1) \
             SELECT last.tx::text::int8, \
                    (SELECT count(*) FROM {table} e WHERE e.\"{p}\" = $1 AND e.tx = last.tx) \
               FROM last"
        );
        let probe = format!(
            "{HORIZON} SELECT \
               EXISTS (SELECT 1 FROM {table} e WHERE e.\"{p}\" = $1 AND e.tx > {start} AND {readable}) \
               OR EXISTS (SELECT 1 FROM {table} e WHERE e.\"{p}\" = $1 AND e.tx = {start} AND {readable} \
                          ORDER BY e.\"{seq}\" OFFSET $3), \
               EXISTS (SELECT 1 FROM {table} e WHERE e.\"{p}\" = $1 AND e.tx >= {start} \
                         AND e.tx >= (SELECT xmin FROM horizon))"
        );
        // The subquery of RETURNING sees the statement's snapshot, without the new row: the
        // entries this transaction wrote to the partition before, so the new one's index.
        let append = format!(
            "INSERT INTO {table} (\"{p}\", key, payload) VALUES ($1, $2, $3) \
             RETURNING tx::text::int8, \
               (SELECT count(*) FROM {table} e WHERE e.\"{p}\" = $1 AND e.tx = pg_current_xact_id())"
        );
        Self {
            read: read.into(),
            head: head.into(),
            probe: probe.into(),
            append: append.into(),
        }
    }
}

/// A statement for sqlx: the text is built only from validated identifiers (see [`Layout`]).
pub(crate) fn sql(statement: &Arc<str>) -> AssertSqlSafe<Arc<str>> {
    AssertSqlSafe(Arc::clone(statement))
}
