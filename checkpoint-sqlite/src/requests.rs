//! The SQL of the store, built once per configured table name.
//!
//! The statements live in `sql/*.sql` beside the crate with a `{table}` placeholder. The table
//! name is the only text ever spliced into them, and only after [`TableName::parse`] has
//! checked that it is a plain identifier; every value goes in as a bind parameter.

use std::sync::Arc;

use checkpoint_core::{Argument, Error, InvalidInput, InvalidReason};
use sqlx::AssertSqlSafe;

const SCHEMA: &str = include_str!("../sql/schema.sql");
const LIST: &str = include_str!("../sql/list.sql");
const LOAD: &str = include_str!("../sql/load.sql");
const SAVE: &str = include_str!("../sql/save.sql");
const SAVE_ALL: &str = include_str!("../sql/save_all.sql");
const CLAIM: &str = include_str!("../sql/claim.sql");
const ADVANCE: &str = include_str!("../sql/advance.sql");

/// The table used unless [`SqliteCheckpointStore::with_table`](crate::SqliteCheckpointStore::with_table)
/// names another.
pub const DEFAULT_TABLE: &str = "checkpoints";

/// The longest table name accepted, in bytes.
const MAX_TABLE_NAME_BYTES: usize = 128;

/// What a table name must look like, as reported in [`InvalidReason::Malformed`].
const TABLE_NAME_FORM: &str = "an identifier matching [A-Za-z_][A-Za-z0-9_]* of at most 128 bytes, \
     not starting with `sqlite_` (reserved by SQLite)";

/// A table name that is safe to splice into SQL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TableName(String);

impl TableName {
    /// Accepts `[A-Za-z_][A-Za-z0-9_]*`, at most 128 bytes, not `sqlite_*` (SQLite refuses to
    /// create such tables). Nothing else can appear between the quotes, so no name can close
    /// the quoted identifier and inject SQL.
    pub(crate) fn parse(name: &str) -> Result<Self, Error> {
        let mut bytes = name.bytes();
        let well_formed = match bytes.next() {
            Some(first) => {
                (first.is_ascii_alphabetic() || first == b'_')
                    && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
            }
            None => false,
        };
        let reserved = name
            .get(..7)
            .is_some_and(|prefix| prefix.eq_ignore_ascii_case("sqlite_"));
        if !well_formed || reserved || name.len() > MAX_TABLE_NAME_BYTES {
            return Err(InvalidInput::new(
                Argument::Setting("table"),
                InvalidReason::Malformed {
                    expected: TABLE_NAME_FORM,
                },
            )
            .into());
        }
        Ok(Self(name.to_owned()))
    }

    /// [`DEFAULT_TABLE`], which `parse` accepts (tested below).
    pub(crate) fn default_table() -> Self {
        Self(DEFAULT_TABLE.to_owned())
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    /// The name as a quoted SQL identifier. Quoting keeps names that are also keywords
    /// (`order`, `group`) usable; validation guarantees there is no `"` to escape.
    fn quoted(&self) -> String {
        format!("\"{}\"", self.0)
    }
}

/// Every statement of the store, for one table.
#[derive(Debug)]
pub(crate) struct Statements {
    pub(crate) schema: Arc<str>,
    pub(crate) list: Arc<str>,
    pub(crate) load: Arc<str>,
    pub(crate) save: Arc<str>,
    pub(crate) save_all: Arc<str>,
    pub(crate) claim: Arc<str>,
    pub(crate) advance: Arc<str>,
}

impl Statements {
    pub(crate) fn for_table(table: &TableName) -> Self {
        let quoted = table.quoted();
        let build = |template: &str| -> Arc<str> { template.replace("{table}", &quoted).into() };
        Self {
            schema: build(SCHEMA),
            list: build(LIST),
            load: build(LOAD),
            save: build(SAVE),
            save_all: build(SAVE_ALL),
            claim: build(CLAIM),
            advance: build(ADVANCE),
        }
    }
}

/// A statement ready for `sqlx::query`.
///
/// Sound because the only dynamic part of every statement is a [`TableName`], checked by
/// [`TableName::parse`]; the `Arc` is shared, not copied, on each call.
pub(crate) fn safe(statement: &Arc<str>) -> AssertSqlSafe<Arc<str>> {
    AssertSqlSafe(Arc::clone(statement))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_plain_identifiers() {
        for name in [DEFAULT_TABLE, "_x", "Order", "a1_B2", &"t".repeat(128)] {
            assert_eq!(
                TableName::parse(name).map(|t| t.0).ok().as_deref(),
                Some(name)
            );
        }
    }

    #[test]
    fn rejects_everything_else() {
        for name in [
            "",
            "1abc",
            "a b",
            "a\"b",
            "x\"; DROP TABLE y; --",
            "a.b",
            "a-b",
            "é",
            "sqlite_master",
            "SQLITE_x",
            &"t".repeat(129),
        ] {
            match TableName::parse(name) {
                Err(Error::InvalidInput(invalid)) => {
                    assert_eq!(invalid.argument, Argument::Setting("table"), "{name:?}");
                    assert!(
                        matches!(invalid.reason, InvalidReason::Malformed { .. }),
                        "{name:?}"
                    );
                }
                other => panic!("{name:?} was not rejected: {other:?}"),
            }
        }
    }

    #[test]
    fn splices_the_quoted_name_everywhere() {
        let statements = Statements::for_table(&TableName("my_table".to_owned()));
        for statement in [
            &statements.schema,
            &statements.list,
            &statements.load,
            &statements.save,
            &statements.save_all,
            &statements.claim,
            &statements.advance,
        ] {
            assert!(statement.contains("\"my_table\""), "{statement}");
            assert!(!statement.contains("{table}"), "{statement}");
        }
    }
}
