//! How parked entries are laid out: one item per entry, in the checkpoints' table, under a
//! partition key no group can have (it starts with NUL, which no valid name holds), so that
//! no read of a group, of the markers or of leases ever meets them, and one `Query` reads
//! every parked entry of a group.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use checkpoint_core::UnexpectedValue;
use checkpoint_core::parked::{ParkedEntry, time_from_millis};
use checkpoint_core::stored::position_from_decimal;

use super::{GROUP, KEY, PARTITION, POSITION, SUBSCRIPTION, number, shape};

/// The start of every parked partition key, followed by the group: no group holds a NUL, and
/// the leases' and markers' partition keys start otherwise.
pub(crate) const PARKED_PARTITION_PREFIX: &str = "\u{0}parked\u{0}";

/// The handler's last error, as text; absent when empty (an empty string is not a value every
/// DynamoDB server accepts).
pub(crate) const ERROR: &str = "error";
/// How many times the handler ran on the entry.
pub(crate) const ATTEMPTS: &str = "attempts";
/// When the entry was parked, Unix epoch milliseconds.
pub(crate) const PARKED_AT: &str = "parked_at";
/// Whether an operator asked for the entry to be retried: BOOL.
pub(crate) const RETRY_REQUESTED: &str = "retry_requested";

/// How many decimal digits the partition takes in a parked entry's sort key.
const PARTITION_DIGITS: usize = 10;
/// How many decimal digits the position takes: enough for `i64::MAX` (9223372036854775807).
const POSITION_DIGITS: usize = 19;

/// The partition key of `group`'s parked entries.
pub(crate) fn parked_partition_key(group: &str) -> String {
    format!("{PARKED_PARTITION_PREFIX}{group}")
}

/// The sort key of a parked entry: the partition as ten digits, `#`, the position as nineteen
/// digits, `#`, the subscription as given. Both numbers have a fixed width, so two entries
/// share a sort key only when all three parts are equal, whatever the subscription holds.
pub(crate) fn parked_sort_key(subscription: &str, partition: u32, position: u64) -> String {
    format!(
        "{partition:0pw$}#{position:0qw$}#{subscription}",
        pw = PARTITION_DIGITS,
        qw = POSITION_DIGITS
    )
}

/// The primary key of a parked entry.
pub(crate) fn parked_primary_key(
    group: &str,
    subscription: &str,
    partition: u32,
    position: u64,
) -> HashMap<String, AttributeValue> {
    HashMap::from([
        (
            GROUP.to_owned(),
            AttributeValue::S(parked_partition_key(group)),
        ),
        (
            KEY.to_owned(),
            AttributeValue::S(parked_sort_key(subscription, partition, position)),
        ),
    ])
}

/// The whole item of a parked entry, for a `PutItem` that replaces any item of its key. The
/// retry request is written cleared: parking again clears it.
pub(crate) fn parked_item(group: &str, entry: &ParkedEntry) -> HashMap<String, AttributeValue> {
    let mut item = parked_primary_key(group, &entry.subscription, entry.partition, entry.position);
    item.extend([
        (
            SUBSCRIPTION.to_owned(),
            AttributeValue::S(entry.subscription.clone()),
        ),
        (PARTITION.to_owned(), number(u64::from(entry.partition))),
        (POSITION.to_owned(), number(entry.position)),
        (ATTEMPTS.to_owned(), number(u64::from(entry.attempts))),
        (
            PARKED_AT.to_owned(),
            AttributeValue::N(entry.parked_at_millis().to_string()),
        ),
        (RETRY_REQUESTED.to_owned(), AttributeValue::Bool(false)),
    ]);
    if !entry.error.is_empty() {
        item.insert(ERROR.to_owned(), AttributeValue::S(entry.error.clone()));
    }
    item
}

/// Reads a parked item back; the key parts come from the sort key (the plain copies are for
/// people), the position exactly.
pub(crate) fn parked_of(
    item: &HashMap<String, AttributeValue>,
) -> Result<ParkedEntry, UnexpectedValue> {
    let (subscription, partition, position) = match item.get(KEY) {
        Some(AttributeValue::S(key)) => parse_parked_sort_key(key)?,
        Some(other) => return Err(UnexpectedValue::new(KEY, shape(other))),
        None => return Err(missing(KEY)),
    };
    let error = match item.get(ERROR) {
        None => String::new(),
        Some(AttributeValue::S(error)) => error.clone(),
        Some(other) => return Err(UnexpectedValue::new(ERROR, shape(other))),
    };
    let retry_requested = match item.get(RETRY_REQUESTED) {
        None => false,
        Some(AttributeValue::Bool(flag)) => *flag,
        Some(other) => return Err(UnexpectedValue::new(RETRY_REQUESTED, shape(other))),
    };
    Ok(ParkedEntry {
        subscription,
        partition,
        position,
        error,
        attempts: decimal(item, ATTEMPTS)?,
        parked_at: time_from_millis(decimal(item, PARKED_AT)?),
        retry_requested,
    })
}

/// The (subscription, partition, position) of a parked sort key.
fn parse_parked_sort_key(key: &str) -> Result<(String, u32, u64), UnexpectedValue> {
    let not_ours = || {
        let shown: String = key.chars().take(40).collect();
        UnexpectedValue::new(KEY, format!("{shown:?}, not a parked entry's sort key"))
    };
    let (partition, rest) = key
        .split_at_checked(PARTITION_DIGITS)
        .ok_or_else(not_ours)?;
    let rest = rest.strip_prefix('#').ok_or_else(not_ours)?;
    let (position, rest) = rest
        .split_at_checked(POSITION_DIGITS)
        .ok_or_else(not_ours)?;
    let subscription = rest.strip_prefix('#').ok_or_else(not_ours)?;
    if subscription.is_empty() || !partition.bytes().all(|b| b.is_ascii_digit()) {
        return Err(not_ours());
    }
    let partition = partition.parse::<u32>().map_err(|_| not_ours())?;
    // Leading zeros are the fixed width's, not part of the number.
    let position = position.trim_start_matches('0');
    let position = position_from_decimal(KEY, if position.is_empty() { "0" } else { position })?;
    Ok((subscription.to_owned(), partition, position))
}

/// A non-negative integer attribute that must be there, parsed exactly into `T`.
fn decimal<T: std::str::FromStr>(
    item: &HashMap<String, AttributeValue>,
    name: &'static str,
) -> Result<T, UnexpectedValue> {
    match item.get(name) {
        Some(AttributeValue::N(digits)) if digits.bytes().all(|b| b.is_ascii_digit()) => digits
            .parse()
            .map_err(|_| UnexpectedValue::new(name, "a number out of range")),
        Some(AttributeValue::N(_)) => Err(UnexpectedValue::new(
            name,
            "a number that is not a non-negative integer",
        )),
        Some(other) => Err(UnexpectedValue::new(name, shape(other))),
        None => Err(missing(name)),
    }
}

fn missing(name: &'static str) -> UnexpectedValue {
    UnexpectedValue::new(name, "nothing (no such attribute)")
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::super::is_group_partition_key;
    use super::*;

    #[test]
    fn parked_items_round_trip() {
        for (subscription, partition, position, error) in [
            ("a#0000000001#b", u32::MAX, i64::MAX as u64, "x"),
            ("s", 0, 0, ""),
            ("😀", 7, 9_007_199_254_740_993, "€#\n"),
        ] {
            let mut entry = ParkedEntry::new(subscription, partition, position, error, 3);
            entry.parked_at = UNIX_EPOCH + Duration::from_millis(1_764_000_000_123);
            let item = parked_item("g", &entry);
            assert_eq!(parked_of(&item), Ok(entry));
        }
    }

    #[test]
    fn parked_keys_never_meet_a_group_or_each_other() {
        assert!(!is_group_partition_key(&parked_partition_key("g")));
        assert_ne!(
            parked_partition_key("g"),
            super::super::lease_partition_key("g", "")
        );
        let keys = [
            parked_sort_key("1#a", 1, 2),
            parked_sort_key("a", 1, 2),
            parked_sort_key("a", 12, 0),
            parked_sort_key("2#a", 1, 0),
        ];
        let distinct: std::collections::HashSet<_> = keys.iter().collect();
        assert_eq!(distinct.len(), keys.len());
        for bad in ["", "0000000001#1#s", "0000000001#0000000000000000001#", "x"] {
            assert!(parse_parked_sort_key(bad).is_err(), "{bad:?}");
        }
        let above = "0000000000#9999999999999999999#s";
        assert!(parse_parked_sort_key(above).is_err());
    }
}
