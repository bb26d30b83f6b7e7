//! The table layout: attribute names, the sort-key encoding and reading items back.

use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use checkpoint_core::{Checkpoint, Error, Fingerprint, Operation};

use crate::error::{BACKEND, MalformedItem};

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

/// How many decimal digits the partition takes at the start of the sort key: enough for
/// `u32::MAX` (4294967295).
const PARTITION_DIGITS: usize = 10;

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

/// Reads the position of an item, exactly: the decimal string is parsed as a `u64`, never
/// through a float (DynamoDB numbers hold 38 digits, `f64` only 15 to 17).
pub(crate) fn position_of(
    item: &HashMap<String, AttributeValue>,
    operation: Operation,
) -> Result<u64, Error> {
    match item.get(POSITION) {
        Some(AttributeValue::N(digits)) => digits
            .parse::<u64>()
            .map_err(|_| malformed(operation, "`position` is not a non-negative 64-bit integer")),
        Some(_) => Err(malformed(operation, "`position` is not a number")),
        None => Err(malformed(operation, "`position` is missing")),
    }
}

/// Reads the position of an item that may have none (an item created by something else).
pub(crate) fn optional_position_of(
    item: &HashMap<String, AttributeValue>,
    operation: Operation,
) -> Result<Option<u64>, Error> {
    if item.contains_key(POSITION) {
        position_of(item, operation).map(Some)
    } else {
        Ok(None)
    }
}

/// Reads the fingerprint of an item; `None` when it has none (a monotonic checkpoint).
pub(crate) fn fingerprint_of(
    item: &HashMap<String, AttributeValue>,
    operation: Operation,
) -> Result<Option<Fingerprint>, Error> {
    match item.get(FINGERPRINT) {
        None => Ok(None),
        Some(AttributeValue::B(blob)) => Fingerprint::from_slice(blob.as_ref())
            .map(Some)
            .ok_or_else(|| malformed(operation, "`fingerprint` is not 32 bytes")),
        Some(_) => Err(malformed(operation, "`fingerprint` is not binary")),
    }
}

/// Reads one item of a `Query` back into a checkpoint.
pub(crate) fn checkpoint_of(item: &HashMap<String, AttributeValue>) -> Result<Checkpoint, Error> {
    let (subscription, partition) = match item.get(KEY) {
        Some(AttributeValue::S(key)) => parse_sort_key(key)
            .ok_or_else(|| malformed(Operation::List, "`key` is not a checkpoint sort key"))?,
        _ => {
            return Err(malformed(
                Operation::List,
                "`key` is missing or not a string",
            ));
        }
    };
    let position = position_of(item, Operation::List)?;
    Ok(Checkpoint::new(subscription, partition, position))
}

fn malformed(operation: Operation, what: &'static str) -> Error {
    // An item this store did not write: retrying reads the same item again.
    Error::backend(BACKEND, operation, false, MalformedItem(what))
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
    fn positions_are_parsed_exactly() {
        let item = HashMap::from([(
            POSITION.to_owned(),
            AttributeValue::N("9223372036854775807".to_owned()),
        )]);
        assert_eq!(
            position_of(&item, Operation::Load).ok(),
            Some(i64::MAX as u64)
        );
        // 2^53 + 1 is the first integer an f64 cannot hold.
        let item = HashMap::from([(POSITION.to_owned(), number(9_007_199_254_740_993))]);
        assert_eq!(
            position_of(&item, Operation::Load).ok(),
            Some(9_007_199_254_740_993)
        );
        let item = HashMap::from([(POSITION.to_owned(), AttributeValue::N("1.5".to_owned()))]);
        assert!(position_of(&item, Operation::Load).is_err());
    }
}
