//! The layout of a group's parked entries: one hash beside the group's checkpoints, in the
//! group's cluster slot, whose field encodes (subscription, partition, position) and whose value
//! encodes the rest of the record.

use checkpoint_core::UnexpectedValue;
use checkpoint_core::parked::{ParkedEntry, time_from_millis};
use checkpoint_core::stored::position_from_decimal;

use super::shown;

/// A field of a group's parked hash, in an [`UnexpectedValue`].
pub(crate) const PARKED_FIELD: &str = "parked field";
/// A value of a group's parked hash, in an [`UnexpectedValue`].
pub(crate) const PARKED_VALUE: &str = "parked value";

/// What follows a group's hash key in the key of its parked entries.
const PARKED_SUFFIX: &str = ":parked";

/// The key of the hash of `group`'s parked entries, beside the group's hash `group_key`:
/// `<prefix>:{<escaped group>}:parked`, in the group's cluster slot. `groups` skips it (a
/// group that holds only parked entries is not listed), and no lease key equals it: their
/// word after the group key is followed by `:` and the subscription.
pub(crate) fn parked_key(group_key: &str) -> String {
    format!("{group_key}{PARKED_SUFFIX}")
}

/// The field of a parked entry: `<partition>:<position>:<subscription>`.
///
/// Partition and position are decimal numbers without `:`, so the first two `:` end them
/// whatever the subscription holds: the encoding is injective.
pub(crate) fn parked_field(subscription: &str, partition: u32, position: u64) -> String {
    format!("{partition}:{position}:{subscription}")
}

/// The value of a parked entry: `<retry requested, 0 or 1>|<attempts>|<parked at, ms since the
/// epoch>|<error>`. The error comes last, so that whatever it holds (`|` included) is read back
/// whole; the flag comes first, so that `retry_parked.lua` sets it by replacing one byte.
pub(crate) fn parked_value(entry: &ParkedEntry) -> String {
    format!(
        "{}|{}|{}|{}",
        u8::from(entry.retry_requested),
        entry.attempts,
        entry.parked_at_millis(),
        entry.error
    )
}

/// The parked entry of a field and its value; an [`UnexpectedValue`] for anything this store
/// does not write.
pub(crate) fn parse_parked(field: &[u8], value: &[u8]) -> Result<ParkedEntry, UnexpectedValue> {
    let (subscription, partition, position) = parse_parked_field(field)?;
    let not_a_value = || {
        UnexpectedValue::new(
            PARKED_VALUE,
            format!("{}, not `<0|1>|<attempts>|<ms>|<error>`", shown(value)),
        )
    };
    let text = std::str::from_utf8(value).map_err(|_| not_a_value())?;
    let mut parts = text.splitn(4, '|');
    let (Some(flag), Some(attempts), Some(millis), Some(error)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(not_a_value());
    };
    let retry_requested = match flag {
        "0" => false,
        "1" => true,
        _ => return Err(not_a_value()),
    };
    let attempts = decimal(attempts).ok_or_else(not_a_value)?;
    let millis = decimal(millis).ok_or_else(not_a_value)?;
    Ok(ParkedEntry {
        subscription,
        partition,
        position,
        error: error.to_owned(),
        attempts,
        parked_at: time_from_millis(millis),
        retry_requested,
    })
}

/// The (subscription, partition, position) of a parked field.
fn parse_parked_field(field: &[u8]) -> Result<(String, u32, u64), UnexpectedValue> {
    let not_a_field = || {
        UnexpectedValue::new(
            PARKED_FIELD,
            format!(
                "{}, not `<partition>:<position>:<subscription>`",
                shown(field)
            ),
        )
    };
    let text = std::str::from_utf8(field).map_err(|_| not_a_field())?;
    let mut parts = text.splitn(3, ':');
    let (Some(partition), Some(position), Some(subscription)) =
        (parts.next(), parts.next(), parts.next())
    else {
        return Err(not_a_field());
    };
    let partition = decimal(partition).ok_or_else(not_a_field)?;
    let position = position_from_decimal(PARKED_FIELD, position)?;
    Ok((subscription.to_owned(), partition, position))
}

/// Decimal digits only, parsed into `T`.
fn decimal<T: std::str::FromStr>(text: &str) -> Option<T> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    #[test]
    fn parked_entries_round_trip_through_field_and_value() {
        let mut entry = ParkedEntry::new("a:b|c", u32::MAX, i64::MAX as u64, "x|y:z\n€", 7);
        entry.parked_at = UNIX_EPOCH + Duration::from_millis(1_764_000_000_123);
        for retry_requested in [false, true] {
            entry.retry_requested = retry_requested;
            let field = parked_field(&entry.subscription, entry.partition, entry.position);
            let value = parked_value(&entry);
            assert_eq!(
                parse_parked(field.as_bytes(), value.as_bytes()),
                Ok(entry.clone())
            );
        }
        assert_eq!(parked_key("c:{g}"), "c:{g}:parked");
    }

    #[test]
    fn parked_fields_never_collide() {
        let keys = [
            ("1:2", 0, 3),
            ("2", 0, 3),
            ("3", 0, 1),
            ("", 1, 23),
            ("3", 1, 2),
        ];
        let mut fields: Vec<String> = keys
            .iter()
            .map(|&(s, p, q)| parked_field(s, p, q))
            .collect();
        fields.sort();
        fields.dedup();
        assert_eq!(fields.len(), keys.len());
    }

    #[test]
    fn foreign_fields_and_values_are_named() {
        let value = b"0|1|2|e";
        for field in [
            &b"x:1:s"[..],
            b"1:x:s",
            b"1:2",
            b"1:9223372036854775808:s",
            b"\xff",
        ] {
            let error = parse_parked(field, value).expect_err("a foreign field");
            assert_eq!(error.field, PARKED_FIELD, "{field:?}");
        }
        for value in [&b"2|1|2|e"[..], b"0|1|2", b"0|-1|2|e", b"0|1|x|e", b"\xff"] {
            let error = parse_parked(b"1:2:s", value).expect_err("a foreign value");
            assert_eq!(error.field, PARKED_VALUE, "{value:?}");
        }
    }
}
