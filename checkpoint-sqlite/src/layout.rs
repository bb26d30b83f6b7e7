//! How a checkpoint is laid out in SQLite: the table name (validated, then quoted, so that
//! nothing a user passes can change the SQL it is spliced into) and the columns' values
//! written and read back through [`checkpoint_core::stored`]. The DDL is `sql/schema.sql`;
//! the migration that runs it is a request (`requests/migration.rs`). Leases live in two tables
//! beside it, named after it (`<table>_leases`, `<table>_lease_owners`), their times in
//! integer milliseconds of SQLite's own clock; parked entries in a third (`<table>_parked`).

use std::time::Duration;

use checkpoint_core::settings::malformed;
use checkpoint_core::stored::{SqlColumns, UnexpectedValue};
use checkpoint_core::{Error, Operation};

use crate::{BACKEND, DEFAULT_TABLE};

/// The longest table name accepted, in bytes.
const MAX_TABLE_NAME_BYTES: usize = 128;

/// What a table name must look like, as reported in
/// [`InvalidReason::Malformed`](checkpoint_core::InvalidReason::Malformed).
const TABLE_NAME_FORM: &str = "an identifier matching [A-Za-z_][A-Za-z0-9_]* of at most 128 bytes, \
     not starting with `sqlite_` (reserved by SQLite)";

/// A table name that is safe to splice into SQL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TableName(String);

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

    pub(crate) fn as_str(&self) -> &str {
        &self.0
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

/// A lease's `epoch` column read back: a store grants epochs from 1 up, so anything below is
/// a value no store writes.
pub(crate) fn epoch(operation: Operation, value: i64) -> Result<u64, Error> {
    u64::try_from(value)
        .ok()
        .filter(|&epoch| epoch >= 1)
        .ok_or_else(|| {
            UnexpectedValue::new("epoch", value.to_string()).into_error(BACKEND, operation)
        })
}

/// How long until `expires_at_ms` at `now_ms`, both milliseconds of SQLite's clock (`0` once
/// past).
pub(crate) fn time_left(expires_at_ms: i64, now_ms: i64) -> Duration {
    Duration::from_millis(u64::try_from(expires_at_ms.saturating_sub(now_ms)).unwrap_or(0))
}

/// A lease duration in whole milliseconds, rounded up: the server holds a lease at least as
/// long as asked, never less (validation bounds it to a day, so it fits).
pub(crate) fn duration_ms(duration: Duration) -> i64 {
    let millis = duration.as_micros().div_ceil(1000);
    i64::try_from(millis).unwrap_or(i64::MAX)
}

/// Partitions as one JSON array (`[0,1,2]`), the parameter the lease statements expand with
/// `json_each`.
pub(crate) fn partitions_json(partitions: &[u32]) -> String {
    let items: Vec<String> = partitions.iter().map(u32::to_string).collect();
    format!("[{}]", items.join(","))
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
    fn lease_values_convert_exactly() {
        assert_eq!(duration_ms(Duration::from_millis(10)), 10);
        assert_eq!(duration_ms(Duration::from_micros(10_001)), 11);
        assert_eq!(duration_ms(Duration::from_secs(86_400)), 86_400_000);
        assert_eq!(time_left(1_500, 1_000), Duration::from_millis(500));
        assert_eq!(time_left(1_000, 1_500), Duration::ZERO);
        assert_eq!(epoch(Operation::Renew, 7).ok(), Some(7));
        assert!(epoch(Operation::Renew, 0).is_err());
        assert!(epoch(Operation::Renew, -1).is_err());
        assert_eq!(partitions_json(&[]), "[]");
        assert_eq!(partitions_json(&[0, u32::MAX]), "[0,4294967295]");
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
