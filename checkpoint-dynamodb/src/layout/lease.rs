//! How leases and heartbeats are laid out: the partition key of a subscription's leases, the
//! sort keys of its two kinds of items, their attributes, and reading them back.
//!
//! They live in the checkpoints' table under a partition key no group can have (it starts
//! with NUL, which no valid name holds), so every read of a group (`list`, the operations API)
//! never meets them, and one `Query` reads all the leases and heartbeats of a subscription.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use checkpoint_core::UnexpectedValue;

use super::{GROUP, KEY, shape};

/// The start of every lease partition key: no group holds a NUL, so none is a group's.
pub(crate) const LEASE_PARTITION_PREFIX: &str = "\u{0}leases\u{0}";

/// The start of a lease's sort key, followed by the partition as ten digits.
pub(crate) const LEASE_PREFIX: &str = "lease#";
/// The start of a heartbeat's sort key, followed by the owner as given.
pub(crate) const HEARTBEAT_PREFIX: &str = "owner#";

/// A lease's holder, absent when the lease is free.
pub(crate) const OWNER: &str = "owner";
/// The holder's heartbeat generation when it was granted: the lease is held while the
/// heartbeat still has it.
pub(crate) const OWNER_GENERATION: &str = "owner_generation";
/// The lease's epoch, kept when it is released.
pub(crate) const EPOCH: &str = "epoch";
/// The owner that asked for the lease.
pub(crate) const HANDOVER: &str = "handover_requested_by";

/// A heartbeat's counter: +1 on every acquire and renew of its owner.
pub(crate) const COUNTER: &str = "counter";
/// A heartbeat's generation: +1 whenever the owner's leases are to end (a new start, a leave,
/// a takeover), so that no lease of an earlier generation is ever held again.
pub(crate) const GENERATION: &str = "generation";
/// The duration of the owner's last acquire or renew, in milliseconds.
pub(crate) const DURATION_MS: &str = "duration_ms";
/// A random number set when the heartbeat item is created: tells a heartbeat created again
/// after a `purge` from the one an observer saw before.
pub(crate) const INCARNATION: &str = "incarnation";
/// `true` once the owner left or was taken over: not a live owner until it acquires again.
pub(crate) const ENDED: &str = "ended";

/// How many decimal digits the partition takes in a lease's sort key.
const PARTITION_DIGITS: usize = 10;

/// The partition key of the leases and heartbeats of (group, subscription).
pub(crate) fn lease_partition_key(group: &str, subscription: &str) -> String {
    format!("{LEASE_PARTITION_PREFIX}{group}\u{0}{subscription}")
}

/// The sort key of a lease.
pub(crate) fn lease_sort_key(partition: u32) -> String {
    format!(
        "{LEASE_PREFIX}{partition:0width$}",
        width = PARTITION_DIGITS
    )
}

/// The sort key of an owner's heartbeat.
pub(crate) fn heartbeat_sort_key(owner: &str) -> String {
    format!("{HEARTBEAT_PREFIX}{owner}")
}

/// The primary key of an item of the subscription's leases, by its sort key.
pub(crate) fn lease_item_key(
    group: &str,
    subscription: &str,
    sort_key: String,
) -> HashMap<String, AttributeValue> {
    HashMap::from([
        (
            GROUP.to_owned(),
            AttributeValue::S(lease_partition_key(group, subscription)),
        ),
        (KEY.to_owned(), AttributeValue::S(sort_key)),
    ])
}

/// A lease item, as a `Query` of the subscription's leases reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LeaseItem {
    pub(crate) partition: u32,
    /// The holder and its generation when granted; `None` when released.
    pub(crate) owner: Option<(String, u64)>,
    pub(crate) epoch: u64,
    pub(crate) handover_requested_by: Option<String>,
}

/// A heartbeat item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Heartbeat {
    pub(crate) owner: String,
    pub(crate) counter: u64,
    pub(crate) generation: u64,
    pub(crate) duration_ms: u64,
    pub(crate) incarnation: u64,
    pub(crate) ended: bool,
}

/// One item of a subscription's leases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LeasePartitionItem {
    Lease(LeaseItem),
    Heartbeat(Heartbeat),
}

/// Reads an item of a subscription's leases back.
pub(crate) fn lease_partition_item(
    item: &HashMap<String, AttributeValue>,
) -> Result<LeasePartitionItem, UnexpectedValue> {
    let key = string(item, KEY)?.ok_or_else(|| missing(KEY))?;
    if let Some(digits) = key.strip_prefix(LEASE_PREFIX) {
        let partition = (digits.len() == PARTITION_DIGITS
            && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse::<u32>().ok())
        .flatten()
        .ok_or_else(|| UnexpectedValue::new(KEY, "not a lease sort key"))?;
        let owner = match string(item, OWNER)? {
            Some(owner) => Some((owner, required_number(item, OWNER_GENERATION)?)),
            None => None,
        };
        return Ok(LeasePartitionItem::Lease(LeaseItem {
            partition,
            owner,
            epoch: required_number(item, EPOCH)?,
            handover_requested_by: string(item, HANDOVER)?,
        }));
    }
    if let Some(owner) = key.strip_prefix(HEARTBEAT_PREFIX) {
        return Ok(LeasePartitionItem::Heartbeat(Heartbeat {
            owner: owner.to_owned(),
            counter: required_number(item, COUNTER)?,
            generation: required_number(item, GENERATION)?,
            duration_ms: required_number(item, DURATION_MS)?,
            incarnation: required_number(item, INCARNATION)?,
            ended: item.contains_key(ENDED),
        }));
    }
    Err(UnexpectedValue::new(KEY, "neither a lease nor a heartbeat"))
}

/// A string attribute, if present.
fn string(
    item: &HashMap<String, AttributeValue>,
    name: &'static str,
) -> Result<Option<String>, UnexpectedValue> {
    match item.get(name) {
        None => Ok(None),
        Some(AttributeValue::S(value)) => Ok(Some(value.clone())),
        Some(other) => Err(UnexpectedValue::new(name, shape(other))),
    }
}

/// A non-negative integer attribute, if present.
pub(crate) fn optional_number(
    item: &HashMap<String, AttributeValue>,
    name: &'static str,
) -> Result<Option<u64>, UnexpectedValue> {
    match item.get(name) {
        None => Ok(None),
        Some(AttributeValue::N(digits)) => digits
            .parse::<u64>()
            .map(Some)
            .map_err(|_| UnexpectedValue::new(name, "a number that is not a u64")),
        Some(other) => Err(UnexpectedValue::new(name, shape(other))),
    }
}

fn required_number(
    item: &HashMap<String, AttributeValue>,
    name: &'static str,
) -> Result<u64, UnexpectedValue> {
    optional_number(item, name)?.ok_or_else(|| missing(name))
}

fn missing(name: &'static str) -> UnexpectedValue {
    UnexpectedValue::new(name, "nothing (no such attribute)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_partition_keys_never_meet_a_group() {
        let key = lease_partition_key("g", "s");
        assert!(!super::super::is_group_partition_key(&key));
        assert!(super::super::is_group_partition_key("g"));
        // (g, "a\0b") cannot exist: names hold no NUL, so the split is unambiguous.
        assert_ne!(
            lease_partition_key("a", "b"),
            lease_partition_key("a\u{0}b", "")
        );
    }

    #[test]
    fn items_read_back() {
        let item = HashMap::from([
            (KEY.to_owned(), AttributeValue::S(lease_sort_key(7))),
            (EPOCH.to_owned(), AttributeValue::N("3".to_owned())),
        ]);
        assert_eq!(
            lease_partition_item(&item),
            Ok(LeasePartitionItem::Lease(LeaseItem {
                partition: 7,
                owner: None,
                epoch: 3,
                handover_requested_by: None,
            }))
        );
        let bad = HashMap::from([(KEY.to_owned(), AttributeValue::S("lease#12".to_owned()))]);
        assert!(lease_partition_item(&bad).is_err());
    }
}
