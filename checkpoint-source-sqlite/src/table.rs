//! The event table's name (validated, then quoted, so nothing a user passes can change the SQL
//! it is spliced into) and the statements rendered for it once.

use std::sync::Arc;

use checkpoint_core::source::SourceError;
use sqlx::AssertSqlSafe;

/// The longest table name accepted, in bytes.
const MAX_TABLE_NAME_BYTES: usize = 128;

/// The statements of one event table, rendered once for its name.
#[derive(Debug)]
pub(crate) struct Statements {
    pub(crate) name: String,
    pub(crate) schema: Arc<str>,
    pub(crate) partitions: Arc<str>,
    pub(crate) store_partitions: Arc<str>,
    pub(crate) grow_partitions: Arc<str>,
    pub(crate) append: Arc<str>,
    pub(crate) read: Arc<str>,
    pub(crate) head: Arc<str>,
    /// `?1` a JSON array of partitions: `head`'s answer for each, in the array's order.
    pub(crate) heads: Arc<str>,
}

impl Statements {
    /// Accepts `[A-Za-z_][A-Za-z0-9_]*`, at most 128 bytes, not `sqlite_*`: nothing else can
    /// appear between the quotes, so no name can close the quoted identifier.
    pub(crate) fn for_table(name: &str) -> Result<Self, SourceError> {
        let mut bytes = name.bytes();
        let well_formed = bytes
            .next()
            .is_some_and(|first| first.is_ascii_alphabetic() || first == b'_')
            && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_');
        let reserved = name
            .get(..7)
            .is_some_and(|prefix| prefix.eq_ignore_ascii_case("sqlite_"));
        if !well_formed || reserved || name.len() > MAX_TABLE_NAME_BYTES {
            return Err(SourceError::InvalidInput {
                argument: "table",
                reason: format!(
                    "{name:?} is not an identifier matching [A-Za-z_][A-Za-z0-9_]* of at most \
                     {MAX_TABLE_NAME_BYTES} bytes, not starting with `sqlite_`"
                ),
            });
        }
        let table = format!("\"{name}\"");
        let meta = format!("\"{name}_meta\"");
        let render = |sql: &str| -> Arc<str> {
            sql.replace("{table}", &table)
                .replace("{meta}", &meta)
                .into()
        };
        Ok(Self {
            name: name.to_owned(),
            schema: render(include_str!("../sql/schema.sql")),
            partitions: render("SELECT value FROM {meta} WHERE name = 'partitions'"),
            // The first migrate stores the count; later ones keep it, and compare.
            store_partitions: render(
                "INSERT INTO {meta} (name, value) VALUES ('partitions', ?1) \
                 ON CONFLICT (name) DO NOTHING",
            ),
            // Only ever up: a count never decreases (CONTRACT.md, "Sources").
            grow_partitions: render(
                "UPDATE {meta} SET value = ?1 WHERE name = 'partitions' AND value < ?1",
            ),
            // The position is taken inside the writing transaction, which holds the database's
            // one write lock: see the crate doc for why that keeps the clause.
            append: render(
                "INSERT INTO {table} (partition, position, key, payload, appended_at) \
                 SELECT ?1, COALESCE(MAX(position), 0) + 1, ?2, ?3, \
                 CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) \
                 FROM {table} WHERE partition = ?1 \
                 RETURNING position",
            ),
            read: render(
                "SELECT position, key, payload, appended_at FROM {table} \
                 WHERE partition = ?1 AND position >= ?2 ORDER BY position LIMIT ?3",
            ),
            head: render("SELECT MAX(position) FROM {table} WHERE partition = ?1"),
            // `head` per element of the array, as a correlated subquery: each one seek to the
            // end of the partition in the primary key (SeekLE), whatever the table's size.
            heads: render(
                "SELECT (SELECT MAX(e.position) FROM {table} e WHERE e.partition = asked.value) \
                 FROM json_each(?1) asked ORDER BY asked.key",
            ),
        })
    }
}

/// A statement ready for `sqlx::query`.
///
/// Sound because the only dynamic part of every statement is the table name, checked by
/// [`Statements::for_table`].
pub(crate) fn sql(statement: &Arc<str>) -> AssertSqlSafe<Arc<str>> {
    AssertSqlSafe(Arc::clone(statement))
}
