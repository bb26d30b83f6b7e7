//! How a checkpoint is laid out in MySQL and MariaDB: the table name (validated, then quoted
//! with backticks, so that nothing a user passes can change the SQL it is spliced into) and
//! the columns' values written and read back through [`checkpoint_core::stored`]. The DDL is
//! `sql/schema.sql`; the migration that runs it is a request (`requests/migration.rs`). The
//! tombstones, leases, heartbeats and parked entries live in tables beside it, named after it.

use checkpoint_core::Error;
use checkpoint_core::settings::malformed;
use checkpoint_core::stored::SqlColumns;

use crate::{BACKEND, DEFAULT_TABLE};

/// MySQL's and MariaDB's longest identifier, in characters (here ASCII, so bytes).
const MAX_IDENTIFIER_BYTES: usize = 64;

/// The longest suffix a name gets: the lease table's index by owner (a procedure's,
/// `_handover_v1`, is shorter: tested below).
const LONGEST_SUFFIX: &str = "_leases_by_owner";

/// The longest table name accepted, so that every name made from it is an identifier too.
const MAX_TABLE_BYTES: usize = MAX_IDENTIFIER_BYTES - LONGEST_SUFFIX.len();

/// What a table name must look like, as reported in
/// [`InvalidReason::Malformed`](checkpoint_core::InvalidReason::Malformed).
const TABLE_NAME_FORM: &str = "an identifier matching [A-Za-z_][A-Za-z0-9_]* of at most 48 bytes \
     (64, MySQL's limit, less the longest suffix the store adds: `_leases_by_owner`)";

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
    /// Accepts `[A-Za-z_][A-Za-z0-9_]*` of at most [`MAX_TABLE_BYTES`] bytes. Nothing else can
    /// appear between the backticks, so no name can close the quoted identifier and inject
    /// SQL.
    pub(crate) fn parse(name: &str) -> Result<Self, Error> {
        let mut bytes = name.bytes();
        let well_formed = match bytes.next() {
            Some(first) => {
                (first.is_ascii_alphabetic() || first == b'_')
                    && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
            }
            None => false,
        };
        if !well_formed || name.len() > MAX_TABLE_BYTES {
            return Err(malformed("table", TABLE_NAME_FORM).into());
        }
        Ok(Self(name.to_owned()))
    }

    /// [`DEFAULT_TABLE`], which `parse` accepts (tested below).
    pub(crate) fn default_table() -> Self {
        Self(DEFAULT_TABLE.to_owned())
    }

    /// The table's own name followed by `suffix` (`""`, `_retired`, `_leases`, ...), quoted
    /// with backticks: keywords (`order`, `group`) stay usable, and validation guarantees
    /// there is no backtick to escape.
    pub(crate) fn quoted(&self, suffix: &str) -> String {
        format!("`{}{suffix}`", self.0)
    }

    /// The stored procedure `operation` of this store (`acquire`, `groups`, ...), quoted:
    /// `` `<table>_<operation>_<PROCEDURE_VERSION>` ``.
    pub(crate) fn procedure(&self, operation: &str) -> String {
        self.quoted(&format!("_{operation}_{PROCEDURE_VERSION}"))
    }
}

/// The version every procedure's name ends with. A change to a procedure's text takes a new
/// version: `migrate` then creates the new procedures beside the old ones, which the processes
/// still running the old code keep calling until they are gone (a procedure is never replaced
/// in place: MySQL has no `CREATE OR REPLACE PROCEDURE`, and dropping one drops the `EXECUTE`
/// grants on it).
pub(crate) const PROCEDURE_VERSION: &str = "v1";

/// The store's procedures, by the operation each serves (the files of `sql/procedures/`).
pub(crate) const PROCEDURES: [&str; 7] = [
    "acquire", "renew", "release", "leave", "handover", "leases", "groups",
];

/// The table's columns, written and read back by the rules every SQL store shares
/// ([`checkpoint_core::stored::SqlColumns`]).
pub(crate) const COLUMNS: SqlColumns = SqlColumns { backend: BACKEND };

#[cfg(test)]
mod tests {
    use checkpoint_core::{Argument, InvalidReason};

    use super::*;

    #[test]
    fn accepts_plain_identifiers() {
        for name in [DEFAULT_TABLE, "_x", "Order", "a1_B2", &"t".repeat(48)] {
            assert_eq!(
                TableName::parse(name).map(|t| t.0).ok().as_deref(),
                Some(name)
            );
        }
        let longest = TableName::parse(&"t".repeat(48)).unwrap();
        assert_eq!(longest.quoted(LONGEST_SUFFIX).len(), 64 + 2);
        // Routine names have the same limit: every procedure's name fits too.
        for operation in PROCEDURES {
            assert!(longest.procedure(operation).len() <= 64 + 2, "{operation}");
        }
    }

    #[test]
    fn rejects_everything_else() {
        for name in [
            "",
            "1abc",
            "a b",
            "a`b",
            "x`; DROP TABLE y; --",
            "a.b",
            "a-b",
            "é",
            &"t".repeat(49),
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
