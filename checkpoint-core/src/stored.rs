//! Reading values back from a store: the one error for a stored value no store writes, and the
//! range rules every backend applies to what it reads.
//!
//! Every backend writes positions in `0..=`[`MAX_POSITION`] and partitions in `u32`. A value
//! read back outside those ranges (a negative position in a table created without the schema's
//! constraints, a position above `i64::MAX` in a DynamoDB item, a foreign field in a Redis
//! hash) means something else wrote into the store's table or keys. Every backend reports it
//! the same way: a non-retryable [`Error::Backend`] whose source is an [`UnexpectedValue`].

use std::fmt;

use crate::error::{Error, Operation};
use crate::fingerprint::Fingerprint;
use crate::validation::MAX_POSITION;

/// A value read back from a store that no checkpoint store writes: something else wrote into
/// the store's table or keys. Retrying cannot help.
///
/// The source of a non-retryable [`Error::Backend`], built with [`UnexpectedValue::into_error`].
/// Every backend uses it, so a caller can look for it with
/// `std::error::Error::source(&error).and_then(|s| s.downcast_ref::<UnexpectedValue>())`
/// whatever the store.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UnexpectedValue {
    /// Which stored value: a column, an attribute, a hash field, a script's reply.
    pub field: &'static str,
    /// What was found there (a value, or its shape), written for a person to read.
    pub found: String,
}

impl UnexpectedValue {
    /// `found` in `field`.
    pub fn new(field: &'static str, found: impl Into<String>) -> Self {
        Self {
            field,
            found: found.into(),
        }
    }

    /// As the non-retryable backend error a store returns.
    pub fn into_error(self, backend: &'static str, operation: Operation) -> Error {
        Error::backend(backend, operation, false, self)
    }
}

impl fmt::Display for UnexpectedValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` holds {}, which no checkpoint store writes",
            self.field, self.found
        )
    }
}

impl std::error::Error for UnexpectedValue {}

/// A position stored as a signed 64-bit integer (SQL `BIGINT`): valid when not negative.
pub fn position_from_i64(field: &'static str, value: i64) -> Result<u64, UnexpectedValue> {
    u64::try_from(value).map_err(|_| UnexpectedValue::new(field, value.to_string()))
}

/// A position stored as an unsigned integer: valid up to [`MAX_POSITION`].
pub fn position_from_u64(field: &'static str, value: u64) -> Result<u64, UnexpectedValue> {
    if value > MAX_POSITION {
        return Err(UnexpectedValue::new(
            field,
            format!("{value}, above the highest position {MAX_POSITION}"),
        ));
    }
    Ok(value)
}

/// A position stored as decimal text (Redis, DynamoDB numbers): ASCII digits only, no sign,
/// valid up to [`MAX_POSITION`], parsed exactly (never through a float).
pub fn position_from_decimal(field: &'static str, text: &str) -> Result<u64, UnexpectedValue> {
    let shown = || {
        let mut shown: String = text.chars().take(40).collect();
        if shown.len() < text.len() {
            shown.push('…');
        }
        format!("{shown:?}")
    };
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(UnexpectedValue::new(
            field,
            format!("{}, not a decimal position", shown()),
        ));
    }
    let value = text.parse::<u64>().map_err(|_| {
        UnexpectedValue::new(field, format!("{}, above the highest position", shown()))
    })?;
    position_from_u64(field, value)
}

/// A partition stored as a signed 64-bit integer (SQL `BIGINT`): valid in `0..=u32::MAX`.
pub fn partition_from_i64(field: &'static str, value: i64) -> Result<u32, UnexpectedValue> {
    u32::try_from(value).map_err(|_| UnexpectedValue::new(field, value.to_string()))
}

/// A fingerprint stored as bytes (a SQL `BYTEA` or `BLOB`, a DynamoDB binary): valid at
/// exactly 32 bytes. A stored `NULL` is the backend's to report (`UnexpectedValue::new(field,
/// "NULL")`), or to read as no fingerprint where its layout allows one to be absent.
pub fn fingerprint_from_bytes(
    field: &'static str,
    bytes: &[u8],
) -> Result<Fingerprint, UnexpectedValue> {
    Fingerprint::from_slice(bytes)
        .ok_or_else(|| UnexpectedValue::new(field, format!("{} bytes, not 32", bytes.len())))
}

/// The columns of the SQL stores' checkpoint table (PostgreSQL and SQLite alike): `position`
/// and `partition_id` as signed 64-bit integers, `query_fingerprint` as bytes; written and read
/// back with the rules above, a value no store writes failing as `backend`'s
/// [`Error::Backend`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SqlColumns {
    /// The backend whose errors these are (`BACKEND` of its crate).
    pub backend: &'static str,
}

impl SqlColumns {
    /// A validated position as the `position` column. Validation admits only
    /// `0..=i64::MAX`, so the conversion is exact; it saturates rather than wraps should that
    /// ever change, so it has no panic path.
    pub fn position_to_db(position: u64) -> i64 {
        i64::try_from(position).unwrap_or(i64::MAX)
    }

    /// The `position` column read back.
    pub fn position(self, operation: Operation, value: i64) -> Result<u64, Error> {
        position_from_i64("position", value)
            .map_err(|found| found.into_error(self.backend, operation))
    }

    /// The `partition_id` column read back.
    pub fn partition(self, operation: Operation, value: i64) -> Result<u32, Error> {
        partition_from_i64("partition_id", value)
            .map_err(|found| found.into_error(self.backend, operation))
    }

    /// The `query_fingerprint` column read back after a claim: the claim stores the requested
    /// fingerprint when there was none, so `NULL` cannot come back; it and any length other
    /// than 32 bytes mean something else wrote the row, never a match.
    pub fn claimed_fingerprint(
        self,
        operation: Operation,
        stored: Option<&[u8]>,
    ) -> Result<Fingerprint, Error> {
        const FIELD: &str = "query_fingerprint";
        match stored {
            None => Err(UnexpectedValue::new(FIELD, "NULL")),
            Some(bytes) => fingerprint_from_bytes(FIELD, bytes),
        }
        .map_err(|found| found.into_error(self.backend, operation))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_in_range_are_read_back_exactly() {
        assert_eq!(position_from_i64("position", 0), Ok(0));
        assert_eq!(position_from_i64("position", i64::MAX), Ok(MAX_POSITION));
        assert_eq!(
            position_from_u64("position", MAX_POSITION),
            Ok(MAX_POSITION)
        );
        assert_eq!(
            position_from_decimal("position", "9223372036854775807"),
            Ok(MAX_POSITION)
        );
        assert_eq!(position_from_decimal("position", "007"), Ok(7));
        assert_eq!(
            partition_from_i64("partition", i64::from(u32::MAX)),
            Ok(u32::MAX)
        );
        assert_eq!(
            fingerprint_from_bytes("fingerprint", &[7; 32]),
            Ok(Fingerprint::from_bytes([7; 32]))
        );
    }

    #[test]
    fn values_no_store_writes_are_refused_with_the_same_rules() {
        assert!(position_from_i64("position", -1).is_err());
        assert!(position_from_u64("position", MAX_POSITION + 1).is_err());
        for text in [
            "",
            "-1",
            "+1",
            "1.0",
            "1e3",
            " 1",
            "9223372036854775808",
            "99999999999999999999",
        ] {
            assert!(position_from_decimal("position", text).is_err(), "{text:?}");
        }
        assert!(partition_from_i64("partition", -1).is_err());
        for length in [0, 31, 33] {
            assert_eq!(
                fingerprint_from_bytes("fingerprint", &vec![7; length]),
                Err(UnexpectedValue::new(
                    "fingerprint",
                    format!("{length} bytes, not 32")
                ))
            );
        }
        assert!(partition_from_i64("partition", i64::from(u32::MAX) + 1).is_err());
    }

    #[test]
    fn sql_columns_read_back_what_the_sql_stores_write_and_refuse_the_rest() {
        let columns = SqlColumns { backend: "sql" };
        let load = Operation::Load;
        assert_eq!(SqlColumns::position_to_db(MAX_POSITION), i64::MAX);
        assert_eq!(columns.position(load, i64::MAX).ok(), Some(MAX_POSITION));
        assert_eq!(
            columns.partition(load, i64::from(u32::MAX)).ok(),
            Some(u32::MAX)
        );
        assert_eq!(
            columns
                .claimed_fingerprint(Operation::Claim, Some(&[3; 32]))
                .ok(),
            Some(Fingerprint::from_bytes([3; 32]))
        );
        for refused in [
            columns.position(load, -1).map(drop),
            columns.partition(load, -1).map(drop),
            columns
                .claimed_fingerprint(Operation::Claim, None)
                .map(drop),
            columns
                .claimed_fingerprint(Operation::Claim, Some(&[3; 31]))
                .map(drop),
        ] {
            let error = refused.expect_err("a value no store writes");
            assert!(
                matches!(
                    &error,
                    Error::Backend {
                        backend: "sql",
                        retryable: false,
                        ..
                    }
                ),
                "{error:?}"
            );
            let source = std::error::Error::source(&error)
                .and_then(|source| source.downcast_ref::<UnexpectedValue>());
            assert!(source.is_some(), "{error:?}");
        }
    }

    #[test]
    fn the_error_names_the_field_and_what_it_holds() {
        let error = position_from_i64("position", -5)
            .unwrap_err()
            .into_error("postgres", Operation::Load);
        assert!(!error.is_retryable());
        let source = std::error::Error::source(&error)
            .and_then(|s| s.downcast_ref::<UnexpectedValue>())
            .expect("an UnexpectedValue source");
        assert_eq!(
            source.to_string(),
            "`position` holds -5, which no checkpoint store writes"
        );
        let long = "1".repeat(100);
        let shown = position_from_decimal("position", &long).unwrap_err().found;
        assert!(shown.len() < 80, "{shown}");
    }
}
