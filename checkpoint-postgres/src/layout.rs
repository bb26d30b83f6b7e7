//! How a checkpoint is laid out in PostgreSQL: the table name (validated, then quoted, so that
//! nothing a user passes can change the SQL it is spliced into) and the columns' values
//! written and read back through [`checkpoint_core::stored`]. The DDL is `sql/schema.sql`;
//! the migration that runs it is a request (`requests/migration.rs`). The leases live in two
//! tables beside it, named after it (`<table>_leases`, `<table>_owners`), and the parked
//! entries in a third (`<table>_parked`).

use std::fmt;
use std::time::Duration;

use checkpoint_core::settings::malformed;
use checkpoint_core::stored::SqlColumns;
use checkpoint_core::{Error, Operation, UnexpectedValue};

use crate::BACKEND;

/// PostgreSQL truncates identifiers to `NAMEDATALEN - 1` = 63 bytes; a longer name would
/// silently refer to another table, so it is refused instead.
const MAX_IDENTIFIER_BYTES: usize = 63;

/// What the tombstone table's name adds to the checkpoint table's (see [`TableName::retired_quoted`]).
pub(crate) const RETIRED_SUFFIX: &str = "_retired";

/// What the lease table's name adds to the checkpoint table's (see [`TableName::leases_quoted`]).
pub(crate) const LEASES_SUFFIX: &str = "_leases";

/// What the heartbeat table's name adds to the checkpoint table's (see [`TableName::owners_quoted`]).
pub(crate) const OWNERS_SUFFIX: &str = "_owners";

/// What the parked entries' table's name adds to the checkpoint table's (see
/// [`TableName::parked_quoted`]).
pub(crate) const PARKED_SUFFIX: &str = "_parked";

/// What the name of the lease table's index by owner adds to the checkpoint table's (see
/// [`TableName::by_owner_index`]).
pub(crate) const BY_OWNER_SUFFIX: &str = "_byowner";

/// The longest table part: its tombstone table's name must fit in 63 bytes too.
const MAX_TABLE_BYTES: usize = MAX_IDENTIFIER_BYTES - RETIRED_SUFFIX.len();

// The lease tables' names fit wherever the tombstone table's does.
const _: () = assert!(LEASES_SUFFIX.len() <= RETIRED_SUFFIX.len());
const _: () = assert!(OWNERS_SUFFIX.len() <= RETIRED_SUFFIX.len());
const _: () = assert!(BY_OWNER_SUFFIX.len() <= RETIRED_SUFFIX.len());
const _: () = assert!(PARKED_SUFFIX.len() <= RETIRED_SUFFIX.len());

/// What a valid table setting looks like, as the error says it.
const EXPECTED: &str = "a table name `table` or `schema.table`, each part matching \
     [A-Za-z_][A-Za-z0-9_]*, the schema at most 63 bytes and the table at most 55 (so that \
     `table_retired` fits in PostgreSQL's 63)";

/// A table name, optionally schema-qualified, whose parts are plain identifiers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableName {
    schema: Option<String>,
    table: String,
}

impl TableName {
    /// The default table, resolved through the connection's `search_path`.
    pub(crate) fn default_table() -> Self {
        Self {
            schema: None,
            table: crate::DEFAULT_TABLE.to_owned(),
        }
    }

    /// Parses `table` or `schema.table`.
    pub(crate) fn parse(name: &str) -> Result<Self, Error> {
        let refused = || -> Error { malformed("table", EXPECTED).into() };
        let mut parts = name.split('.');
        let (schema, table) = match (parts.next(), parts.next(), parts.next()) {
            (Some(table), None, None) => (None, table),
            (Some(schema), Some(table), None) => (Some(schema), table),
            _ => return Err(refused()),
        };
        if !schema.is_none_or(is_identifier)
            || !is_identifier(table)
            || table.len() > MAX_TABLE_BYTES
        {
            return Err(refused());
        }
        Ok(Self {
            schema: schema.map(str::to_owned),
            table: table.to_owned(),
        })
    }

    /// The schema, when one was given.
    pub(crate) fn schema(&self) -> Option<&str> {
        self.schema.as_deref()
    }

    /// The name quoted for SQL, for example `"app"."checkpoints"`.
    ///
    /// Quoting keeps the case as written (PostgreSQL folds unquoted names to lower case) and
    /// lets a reserved word such as `order` be a table name. The parts cannot contain a quote:
    /// [`parse`](Self::parse) admits only letters, digits and underscores.
    pub(crate) fn quoted(&self) -> String {
        match &self.schema {
            Some(schema) => format!("\"{schema}\".\"{}\"", self.table),
            None => format!("\"{}\"", self.table),
        }
    }
}

impl TableName {
    /// The tombstone table's name quoted for SQL: the table's own name followed by
    /// `_retired`, in the same schema, for example `"app"."checkpoints_retired"`.
    pub(crate) fn retired_quoted(&self) -> String {
        self.suffixed_quoted(RETIRED_SUFFIX)
    }

    /// The lease table's name quoted for SQL: the table's own name followed by `_leases`, in
    /// the same schema. One row per lease ever granted: owner and the owner's heartbeat generation, epoch,
    /// handover request.
    pub(crate) fn leases_quoted(&self) -> String {
        self.suffixed_quoted(LEASES_SUFFIX)
    }

    /// The heartbeat table's name quoted for SQL: the table's own name followed by `_owners`,
    /// in the same schema. One row per owner of a subscription: its heartbeat's generation and expiry.
    pub(crate) fn owners_quoted(&self) -> String {
        self.suffixed_quoted(OWNERS_SUFFIX)
    }

    /// The parked entries' table's name quoted for SQL: the table's own name followed by
    /// `_parked`, in the same schema. One row per parked entry: its error, attempts, time and
    /// retry request.
    pub(crate) fn parked_quoted(&self) -> String {
        self.suffixed_quoted(PARKED_SUFFIX)
    }

    /// The lease table's index by owner: its name quoted for `CREATE INDEX` (never qualified:
    /// an index lives in its table's schema), then qualified, as `to_regclass` looks it up.
    pub(crate) fn by_owner_index(&self) -> (String, String) {
        (
            format!("\"{}{BY_OWNER_SUFFIX}\"", self.table),
            self.suffixed_quoted(BY_OWNER_SUFFIX),
        )
    }

    /// The name of a table beside this one, `suffix` appended, quoted for SQL.
    fn suffixed_quoted(&self, suffix: &str) -> String {
        match &self.schema {
            Some(schema) => format!("\"{schema}\".\"{}{suffix}\"", self.table),
            None => format!("\"{}{suffix}\"", self.table),
        }
    }
}

impl fmt::Display for TableName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.schema {
            Some(schema) => write!(f, "{schema}.{}", self.table),
            None => f.write_str(&self.table),
        }
    }
}

/// `[A-Za-z_][A-Za-z0-9_]*`, 1 to 63 bytes.
fn is_identifier(part: &str) -> bool {
    let mut bytes = part.bytes();
    let starts_well = bytes
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == b'_');
    starts_well
        && part.len() <= MAX_IDENTIFIER_BYTES
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The table's columns, written and read back by the rules every SQL store shares
/// ([`checkpoint_core::stored::SqlColumns`]).
pub(crate) const COLUMNS: SqlColumns = SqlColumns { backend: BACKEND };

/// A lease's duration as the statements take it: whole microseconds (`timestamptz`'s
/// resolution), rounded down so that a lease never outlives what the caller asked for.
pub(crate) fn duration_to_db(duration: Duration) -> i64 {
    i64::try_from(duration.as_micros()).unwrap_or(i64::MAX)
}

/// A lease's epoch read back: at least 1 (the first grant's), as every grant writes it.
pub(crate) fn epoch(operation: Operation, value: i64) -> Result<u64, Error> {
    u64::try_from(value)
        .ok()
        .filter(|&epoch| epoch >= 1)
        .ok_or_else(|| {
            UnexpectedValue::new("epoch", value.to_string()).into_error(BACKEND, operation)
        })
}

/// The time left of a live lease or heartbeat, in microseconds by the server's clock: never
/// negative, since the statements read only what expires after `now()`.
pub(crate) fn time_left(operation: Operation, micros: i64) -> Result<Duration, Error> {
    u64::try_from(micros)
        .map(Duration::from_micros)
        .map_err(|_| {
            UnexpectedValue::new("expires_at", format!("{micros} µs left"))
                .into_error(BACKEND, operation)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use checkpoint_core::{Argument, InvalidReason};

    #[test]
    fn accepts_plain_and_qualified_names() {
        let plain = TableName::parse("checkpoints").unwrap();
        assert_eq!(plain.quoted(), "\"checkpoints\"");
        assert_eq!(plain.schema(), None);
        let qualified = TableName::parse("App_1.Check_Points").unwrap();
        assert_eq!(qualified.quoted(), "\"App_1\".\"Check_Points\"");
        assert_eq!(qualified.schema(), Some("App_1"));
        assert_eq!(qualified.to_string(), "App_1.Check_Points");
        assert!(TableName::parse(&"t".repeat(55)).is_ok());
        assert!(TableName::parse(&format!("{}.t", "s".repeat(63))).is_ok());
        assert_eq!(
            qualified.retired_quoted(),
            "\"App_1\".\"Check_Points_retired\""
        );
        assert_eq!(plain.retired_quoted(), "\"checkpoints_retired\"");
        assert_eq!(plain.leases_quoted(), "\"checkpoints_leases\"");
        assert_eq!(
            qualified.parked_quoted(),
            "\"App_1\".\"Check_Points_parked\""
        );
        assert_eq!(
            qualified.owners_quoted(),
            "\"App_1\".\"Check_Points_owners\""
        );
        assert!(TableName::parse("_t").is_ok());
    }

    #[test]
    fn refuses_anything_else() {
        for name in [
            "",
            ".",
            "a.",
            ".a",
            "a.b.c",
            "1table",
            "ta ble",
            "t\"; DROP TABLE users; --",
            "t\"",
            "t;",
            "t--",
            "tablé",
            "t\0",
            "\"quoted\"",
            &"t".repeat(56),
            &format!("{}.t", "s".repeat(64)),
        ] {
            let error = TableName::parse(name).unwrap_err();
            let invalid = error.invalid_input().unwrap();
            assert_eq!(invalid.argument, Argument::Setting("table"), "{name:?}");
            assert!(
                matches!(invalid.reason, InvalidReason::Malformed { .. }),
                "{name:?}"
            );
        }
    }
}
