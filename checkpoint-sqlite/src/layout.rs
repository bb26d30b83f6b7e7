//! How a checkpoint is laid out in SQLite: the table name (validated, then quoted, so that
//! nothing a user passes can change the SQL it is spliced into) and the columns' values
//! written and read back through [`checkpoint_core::stored`]. The DDL is `sql/schema.sql`;
//! the migration that runs it is a request (`requests/migration.rs`). Leases live in two tables
//! beside it, named after it (`<table>_leases`, `<table>_lease_owners`), their times in
//! integer milliseconds of SQLite's own clock; parked entries in a third (`<table>_parked`).

use checkpoint_core::Error;
use checkpoint_core::settings::malformed;
use checkpoint_core::stored::SqlColumns;

use crate::{BACKEND, DEFAULT_TABLE};

/// The longest table name accepted, in bytes.
const MAX_TABLE_NAME_BYTES: usize = 128;

/// What a table name must look like, as reported in
/// [`InvalidReason::Malformed`](checkpoint_core::InvalidReason::Malformed).
const TABLE_NAME_FORM: &str = "an identifier matching [A-Za-z_][A-Za-z0-9_]* of at most 128 bytes, \
     not starting with `sqlite_` (reserved by SQLite)";

/// A table name that is safe to splice into SQL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableName(String);

/// The name as configured, as the spans show it.
impl std::fmt::Display for TableName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

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
            return Err(malformed("table", TABLE_NAME_FORM).into());
        }
        Ok(Self(name.to_owned()))
    }

    /// [`DEFAULT_TABLE`], which `parse` accepts (tested below).
    pub(crate) fn default_table() -> Self {
        Self(DEFAULT_TABLE.to_owned())
    }

    /// The tombstone table's name as a quoted SQL identifier: the table's own name followed
    /// by `_retired`, for example `"checkpoints_retired"`.
    pub(crate) fn retired_quoted(&self) -> String {
        format!("\"{}_retired\"", self.0)
    }

    /// The lease table's name as a quoted SQL identifier: the table's own name followed by
    /// `_leases`, for example `"checkpoints_leases"`.
    pub(crate) fn leases_quoted(&self) -> String {
        format!("\"{}_leases\"", self.0)
    }

    /// The heartbeat table's name as a quoted SQL identifier: the table's own name followed
    /// by `_lease_owners`, for example `"checkpoints_lease_owners"`.
    pub(crate) fn lease_owners_quoted(&self) -> String {
        format!("\"{}_lease_owners\"", self.0)
    }

    /// The parked entries' table's name as a quoted SQL identifier: the table's own name
    /// followed by `_parked`, for example `"checkpoints_parked"`.
    pub(crate) fn parked_quoted(&self) -> String {
        format!("\"{}_parked\"", self.0)
    }

    /// The name of the lease table's index by owner, quoted: the table's own name followed by
    /// `_leases_by_owner`.
    pub(crate) fn leases_by_owner_quoted(&self) -> String {
        format!("\"{}_leases_by_owner\"", self.0)
    }

    /// The name as a quoted SQL identifier. Quoting keeps names that are also keywords
    /// (`order`, `group`) usable; validation guarantees there is no `"` to escape.
    pub(crate) fn quoted(&self) -> String {
        format!("\"{}\"", self.0)
    }
}

/// The table's columns, written and read back by the rules every SQL store shares
/// ([`checkpoint_core::stored::SqlColumns`]).
pub(crate) const COLUMNS: SqlColumns = SqlColumns { backend: BACKEND };

#[cfg(test)]
mod tests {
    use checkpoint_core::{Argument, InvalidReason};

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
}
