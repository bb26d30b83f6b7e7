//! How a checkpoint is laid out in DynamoDB: the table name, its key schema, the item
//! attributes, the sort-key encoding, and reading items back through
//! [`checkpoint_core::stored`].

use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::error::BuildError;
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, KeySchemaElement, KeyType, ScalarAttributeType,
};
use checkpoint_core::settings::malformed;
use checkpoint_core::stored::{fingerprint_from_bytes, position_from_decimal};
use checkpoint_core::{Checkpoint, Error, Fingerprint, Operation, UnexpectedValue};

use crate::BACKEND;

mod groups;
mod lease;
mod parked;

pub(crate) use groups::*;
pub(crate) use lease::*;
pub(crate) use parked::*;

/// The partition key: the group, as given.
pub(crate) const GROUP: &str = "group";
/// The sort key: [`sort_key`] of (subscription, partition).
pub(crate) const KEY: &str = "key";
/// The subscription, as given (also inside the sort key; kept plainly for people and indexes).
pub(crate) const SUBSCRIPTION: &str = "subscription";
/// The partition as a number (also inside the sort key).
pub(crate) const PARTITION: &str = "partition";
/// The checkpoint position, a number.
pub(crate) const POSITION: &str = "position";
/// The 32-byte query fingerprint of an exclusive checkpoint, binary; absent on monotonic ones.
pub(crate) const FINGERPRINT: &str = "fingerprint";
/// When the item was last written, Unix epoch milliseconds.
pub(crate) const UPDATED_AT: &str = "updated_at";
/// `true` on every item of a retired subscription: no request of the store's writes it again.
pub(crate) const RETIRED: &str = "retired";
/// `true` on an item whose creation has not finished (the create protocol, in `requests::create`): no
/// read shows it, and the next write of its key finishes it.
pub(crate) const PENDING: &str = "pending";

/// The start of a tombstone's sort key: no checkpoint's sort key starts with a letter.
pub(crate) const TOMBSTONE_PREFIX: &str = "retired#";

/// How many decimal digits the partition takes at the start of the sort key: enough for
/// `u32::MAX` (4294967295).
const PARTITION_DIGITS: usize = 10;

/// Checks a table name against DynamoDB's rule: 3 to 255 characters of `A-Z`, `a-z`, `0-9`,
/// `_`, `-` and `.`.
pub(crate) fn validate_table_name(name: &str) -> Result<(), Error> {
    let allowed = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.');
    if !(3..=255).contains(&name.len()) || !name.bytes().all(allowed) {
        return Err(malformed(
            "table",
            "a DynamoDB table name: 3 to 255 characters of A-Z, a-z, 0-9, `_`, `-` and `.`",
        )
        .into());
    }
    Ok(())
}

/// The key attributes' definitions, for `CreateTable`: both are strings.
pub(crate) fn attribute_definitions() -> Result<Vec<AttributeDefinition>, BuildError> {
    [GROUP, KEY]
        .into_iter()
        .map(|name| {
            AttributeDefinition::builder()
                .attribute_name(name)
                .attribute_type(ScalarAttributeType::S)
                .build()
        })
        .collect()
}

/// The key schema: [`GROUP`] as the partition key (HASH), [`KEY`] as the sort key (RANGE).
pub(crate) fn key_schema() -> Result<Vec<KeySchemaElement>, BuildError> {
    [(GROUP, KeyType::Hash), (KEY, KeyType::Range)]
        .into_iter()
        .map(|(name, key_type)| {
            KeySchemaElement::builder()
                .attribute_name(name)
                .key_type(key_type)
                .build()
        })
        .collect()
}

/// Whether an existing table's key schema is the one [`key_schema`] creates.
pub(crate) fn is_key_schema(elements: &[KeySchemaElement]) -> bool {
    let schema: Vec<(&str, &KeyType)> = elements
        .iter()
        .map(|element| (element.attribute_name(), element.key_type()))
        .collect();
    schema == [(GROUP, &KeyType::Hash), (KEY, &KeyType::Range)]
}

/// The sort key of (subscription, partition): the partition as exactly ten decimal digits, `#`,
/// then the subscription as given.
///
/// The partition part has a fixed width, so the encoding is prefix-free: two keys are equal only
/// when both their partitions and their subscriptions are, whatever characters a subscription
/// holds (`#` included). Within a group, items sort by partition, then subscription.
pub(crate) fn sort_key(subscription: &str, partition: u32) -> String {
    format!(
        "{partition:0width$}#{subscription}",
        width = PARTITION_DIGITS
    )
}

/// The inverse of [`sort_key`]; `None` for anything [`sort_key`] cannot produce.
pub(crate) fn parse_sort_key(key: &str) -> Option<(String, u32)> {
    let (digits, rest) = key.split_at_checked(PARTITION_DIGITS)?;
    let subscription = rest.strip_prefix('#')?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) || subscription.is_empty() {
        return None;
    }
    let partition = digits.parse::<u32>().ok()?;
    Some((subscription.to_owned(), partition))
}

/// The sort key of a subscription's tombstone: [`TOMBSTONE_PREFIX`], then the subscription as
/// given. A checkpoint's sort key starts with ten digits, so the two never meet, and a group's
/// tombstones sort after all its checkpoints, by subscription.
pub(crate) fn tombstone_key(subscription: &str) -> String {
    format!("{TOMBSTONE_PREFIX}{subscription}")
}

/// The primary key of a subscription's tombstone.
pub(crate) fn tombstone_primary_key(
    group: &str,
    subscription: &str,
) -> HashMap<String, AttributeValue> {
    HashMap::from([
        (GROUP.to_owned(), AttributeValue::S(group.to_owned())),
        (
            KEY.to_owned(),
            AttributeValue::S(tombstone_key(subscription)),
        ),
    ])
}

/// What one item of a group is, from its sort key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ItemKind {
    /// The tombstone of this subscription.
    Tombstone(String),
    /// A checkpoint: its subscription and partition.
    Checkpoint(String, u32),
}

/// Reads the sort key of an item of a group (a checkpoint or a tombstone).
pub(crate) fn item_kind(
    item: &HashMap<String, AttributeValue>,
) -> Result<ItemKind, UnexpectedValue> {
    match item.get(KEY) {
        Some(AttributeValue::S(key)) => {
            if let Some(subscription) = key.strip_prefix(TOMBSTONE_PREFIX) {
                return Ok(ItemKind::Tombstone(subscription.to_owned()));
            }
            let (subscription, partition) = parse_sort_key(key).ok_or_else(|| {
                let shown: String = key.chars().take(40).collect();
                UnexpectedValue::new(KEY, format!("{shown:?}, not a checkpoint sort key"))
            })?;
            Ok(ItemKind::Checkpoint(subscription, partition))
        }
        Some(other) => Err(UnexpectedValue::new(KEY, shape(other))),
        None => Err(UnexpectedValue::new(KEY, "nothing (no such attribute)")),
    }
}

/// Whether an item carries the flag `name` ([`RETIRED`] or [`PENDING`]). The store writes only
/// `true`; any value counts, so that nothing the store cannot read makes a retired item live.
pub(crate) fn has_flag(item: &HashMap<String, AttributeValue>, name: &str) -> bool {
    item.contains_key(name)
}

/// What a checkpoint's item says to a write that found it (read back, or returned by a refused
/// condition).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stored {
    /// No item.
    Absent,
    /// The item of a retired subscription.
    Retired,
    /// An item whose creation has not finished.
    Pending,
    /// A checkpoint: its position and fingerprint.
    Live {
        position: u64,
        fingerprint: Option<Fingerprint>,
    },
}

/// Reads what an item (or its absence) says to a write.
pub(crate) fn stored_of(
    item: Option<&HashMap<String, AttributeValue>>,
) -> Result<Stored, UnexpectedValue> {
    let Some(item) = item.filter(|item| !item.is_empty()) else {
        return Ok(Stored::Absent);
    };
    if has_flag(item, RETIRED) {
        Ok(Stored::Retired)
    } else if has_flag(item, PENDING) {
        Ok(Stored::Pending)
    } else {
        Ok(Stored::Live {
            position: position_of(item)?,
            fingerprint: fingerprint_of(item)?,
        })
    }
}

/// A boolean `true`, the value of [`RETIRED`] and [`PENDING`].
pub(crate) fn flag() -> AttributeValue {
    AttributeValue::Bool(true)
}

/// The primary key of one checkpoint.
pub(crate) fn primary_key(
    group: &str,
    subscription: &str,
    partition: u32,
) -> HashMap<String, AttributeValue> {
    HashMap::from([
        (GROUP.to_owned(), AttributeValue::S(group.to_owned())),
        (
            KEY.to_owned(),
            AttributeValue::S(sort_key(subscription, partition)),
        ),
    ])
}

/// A number attribute. DynamoDB numbers travel as decimal strings, so a `u64` goes out exactly.
pub(crate) fn number(value: u64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

/// A fingerprint attribute: its 32 bytes.
pub(crate) fn fingerprint_value(fingerprint: Fingerprint) -> AttributeValue {
    AttributeValue::B(Blob::new(fingerprint.as_bytes().to_vec()))
}

/// The time of a write, for the `updated_at` attribute. Informational only: nothing reads it.
pub(crate) fn now_millis() -> AttributeValue {
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.as_millis())
        .unwrap_or(0);
    AttributeValue::N(millis.to_string())
}

/// Reads the position of an item, exactly, with the range rules of every store
/// ([`position_from_decimal`]): the decimal string is parsed as an integer, never through a
/// float (DynamoDB numbers hold 38 digits, `f64` only 15 to 17), and a position above
/// `i64::MAX` is refused.
pub(crate) fn position_of(item: &HashMap<String, AttributeValue>) -> Result<u64, UnexpectedValue> {
    match item.get(POSITION) {
        Some(AttributeValue::N(digits)) => position_from_decimal(POSITION, digits),
        Some(other) => Err(UnexpectedValue::new(POSITION, shape(other))),
        None => Err(UnexpectedValue::new(
            POSITION,
            "nothing (no such attribute)",
        )),
    }
}

/// Reads the position of an item that may have none (an item created by something else).
pub(crate) fn optional_position_of(
    item: &HashMap<String, AttributeValue>,
) -> Result<Option<u64>, UnexpectedValue> {
    if item.contains_key(POSITION) {
        position_of(item).map(Some)
    } else {
        Ok(None)
    }
}

/// Reads the fingerprint of an item; `None` when it has none (a monotonic checkpoint).
pub(crate) fn fingerprint_of(
    item: &HashMap<String, AttributeValue>,
) -> Result<Option<Fingerprint>, UnexpectedValue> {
    match item.get(FINGERPRINT) {
        None => Ok(None),
        Some(AttributeValue::B(blob)) => {
            fingerprint_from_bytes(FINGERPRINT, blob.as_ref()).map(Some)
        }
        Some(other) => Err(UnexpectedValue::new(FINGERPRINT, shape(other))),
    }
}

/// The [`Error::Moved`] for a refused advance, from the item as it was when the condition
/// failed (`None`: there was no item, or it is retired or pending, which no read shows); a
/// non-retryable backend error when that item cannot be read as a checkpoint.
pub(crate) fn moved(from: u64, old_item: Option<&HashMap<String, AttributeValue>>) -> Error {
    let shown = old_item.filter(|item| !has_flag(item, RETIRED) && !has_flag(item, PENDING));
    match shown.map(optional_position_of).transpose() {
        Ok(current) => Error::Moved {
            expected: from,
            current: current.flatten(),
        },
        Err(value) => value.into_error(BACKEND, Operation::Advance),
    }
}

/// Reads one item of a `Query` back into a checkpoint; `None` for an item `list` does not show
/// (a tombstone, a retired or pending item).
pub(crate) fn checkpoint_of(
    item: &HashMap<String, AttributeValue>,
) -> Result<Option<Checkpoint>, UnexpectedValue> {
    match item_kind(item)? {
        ItemKind::Tombstone(_) => Ok(None),
        _ if has_flag(item, RETIRED) || has_flag(item, PENDING) => Ok(None),
        ItemKind::Checkpoint(subscription, partition) => Ok(Some(Checkpoint::new(
            subscription,
            partition,
            position_of(item)?,
        ))),
    }
}

/// What kind of attribute value this is, for an [`UnexpectedValue`] (the value itself is left
/// out: it is not ours).
fn shape(value: &AttributeValue) -> String {
    let kind = match value {
        AttributeValue::S(_) => "S (string)",
        AttributeValue::N(_) => "N (number)",
        AttributeValue::B(_) => "B (binary)",
        AttributeValue::Bool(_) => "BOOL",
        AttributeValue::Null(_) => "NULL",
        AttributeValue::L(_) => "L (list)",
        AttributeValue::M(_) => "M (map)",
        AttributeValue::Ss(_) => "SS (string set)",
        AttributeValue::Ns(_) => "NS (number set)",
        AttributeValue::Bs(_) => "BS (binary set)",
        _ => "an unknown type",
    };
    format!("a value of type {kind}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sort_key_round_trips_and_is_fixed_width() {
        for (subscription, partition) in [
            ("a", 0),
            ("#", 1),
            ("0000000001#x", u32::MAX),
            ("😀 {}%:'\"", 42),
        ] {
            let key = sort_key(subscription, partition);
            assert_eq!(
                parse_sort_key(&key),
                Some((subscription.to_owned(), partition))
            );
        }
        assert_eq!(sort_key("s", 7), "0000000007#s");
        assert_eq!(sort_key("s", u32::MAX), "4294967295#s");
    }

    #[test]
    fn keys_that_look_alike_stay_apart() {
        // Partition 1 of "1#a" against partition 11 of "a" and friends: a variable-width
        // encoding would let some of these collide.
        let keys = [
            sort_key("1#a", 1),
            sort_key("a", 11),
            sort_key("#a", 11),
            sort_key("a", 1),
            sort_key("1#a", 11),
        ];
        let distinct: std::collections::HashSet<_> = keys.iter().collect();
        assert_eq!(distinct.len(), keys.len());
    }

    #[test]
    fn parse_rejects_what_sort_key_cannot_produce() {
        for bad in [
            "",
            "123#a",
            "00000000001a",
            "0000000001",
            "0000000001#",
            "+000000001#a",
            "4294967296#a",
        ] {
            assert_eq!(parse_sort_key(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn positions_are_parsed_exactly_and_in_range() {
        let item = HashMap::from([(
            POSITION.to_owned(),
            AttributeValue::N("9223372036854775807".to_owned()),
        )]);
        assert_eq!(position_of(&item), Ok(i64::MAX as u64));
        // 2^53 + 1 is the first integer an f64 cannot hold.
        let item = HashMap::from([(POSITION.to_owned(), number(9_007_199_254_740_993))]);
        assert_eq!(position_of(&item), Ok(9_007_199_254_740_993));
        for bad in ["1.5", "-1", "9223372036854775808"] {
            let item = HashMap::from([(POSITION.to_owned(), AttributeValue::N(bad.to_owned()))]);
            assert_eq!(
                position_of(&item).map_err(|e| e.field),
                Err(POSITION),
                "{bad}"
            );
        }
    }

    #[test]
    fn table_names_follow_dynamodb_rules() {
        for good in ["abc", "checkpoints", "a.b-c_D9", &"x".repeat(255)] {
            assert!(validate_table_name(good).is_ok(), "{good}");
        }
        for bad in ["", "ab", "with space", "ümlaut", "a/b", &"x".repeat(256)] {
            let error = validate_table_name(bad).unwrap_err();
            assert_eq!(
                error.invalid_input().map(|i| i.argument),
                Some(checkpoint_core::Argument::Setting("table")),
                "{bad}"
            );
        }
    }
}
