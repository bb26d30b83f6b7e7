//! How the groups are laid out: a **marker** item per group, under a partition key no group
//! can have (it starts with NUL, which no valid name holds), its sort key the group's name, so
//! that one `Query` of that partition key reads every group, sorted by the bytes of the name.
//!
//! Beside the markers, the **"markers complete"** item (its sort key starts with NUL too, so it
//! sorts first and is no group): written once the markers of a table written by an earlier
//! version of this store have been filled in by one `Scan` (`requests::groups`).

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use checkpoint_core::UnexpectedValue;

use super::{GROUP, KEY, shape};

/// The partition key of every marker, and of the "markers complete" item.
pub(crate) const MARKERS_PARTITION_KEY: &str = "\u{0}groups";

/// The sort key of the "markers complete" item: no group name holds a NUL.
pub(crate) const MARKERS_COMPLETE_KEY: &str = "\u{0}complete";

/// Whether a partition key is a group's (a checkpoint's or a tombstone's): not a lease's, not
/// the markers'. Every partition key the store writes for anything else holds a NUL.
pub(crate) fn is_group_partition_key(key: &str) -> bool {
    !key.contains('\u{0}')
}

/// The primary key of `group`'s marker.
pub(crate) fn marker_primary_key(group: &str) -> HashMap<String, AttributeValue> {
    markers_item_key(group)
}

/// The primary key of the "markers complete" item.
pub(crate) fn markers_complete_primary_key() -> HashMap<String, AttributeValue> {
    markers_item_key(MARKERS_COMPLETE_KEY)
}

fn markers_item_key(sort_key: &str) -> HashMap<String, AttributeValue> {
    HashMap::from([
        (
            GROUP.to_owned(),
            AttributeValue::S(MARKERS_PARTITION_KEY.to_owned()),
        ),
        (KEY.to_owned(), AttributeValue::S(sort_key.to_owned())),
    ])
}

/// One item of the markers' partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MarkerItem {
    /// The marker of this group.
    Group(String),
    /// The "markers complete" item.
    Complete,
}

/// Reads an item of the markers' partition back from its sort key.
pub(crate) fn marker_item(
    item: &HashMap<String, AttributeValue>,
) -> Result<MarkerItem, UnexpectedValue> {
    match item.get(KEY) {
        Some(AttributeValue::S(key)) if key == MARKERS_COMPLETE_KEY => Ok(MarkerItem::Complete),
        Some(AttributeValue::S(key)) if key.is_empty() || key.contains('\u{0}') => {
            let shown: String = key.chars().take(40).collect();
            Err(UnexpectedValue::new(
                KEY,
                format!("{shown:?}, not a group's marker"),
            ))
        }
        Some(AttributeValue::S(key)) => Ok(MarkerItem::Group(key.clone())),
        Some(other) => Err(UnexpectedValue::new(KEY, shape(other))),
        None => Err(UnexpectedValue::new(KEY, "nothing (no such attribute)")),
    }
}

/// The group an item of a `Scan` belongs to, if it is a group's item (`None` for leases,
/// heartbeats and markers).
pub(crate) fn group_of(
    item: &HashMap<String, AttributeValue>,
) -> Result<Option<String>, UnexpectedValue> {
    match item.get(GROUP) {
        Some(AttributeValue::S(key)) if is_group_partition_key(key) => Ok(Some(key.clone())),
        Some(AttributeValue::S(_)) => Ok(None),
        Some(other) => Err(UnexpectedValue::new(GROUP, shape(other))),
        None => Err(UnexpectedValue::new(GROUP, "nothing (no such attribute)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::lease_partition_key;

    #[test]
    fn markers_never_meet_a_group_or_a_lease() {
        assert!(!is_group_partition_key(MARKERS_PARTITION_KEY));
        assert!(!is_group_partition_key(&lease_partition_key("g", "s")));
        assert!(is_group_partition_key("g"));
        assert_ne!(MARKERS_PARTITION_KEY, lease_partition_key("groups", ""));
        // The "complete" item sorts before every group name (all of them are non-empty).
        assert!(MARKERS_COMPLETE_KEY < "\u{1}");
    }

    #[test]
    fn marker_items_read_back() {
        let read = |key: &str| {
            let mut item = markers_item_key(key);
            item.remove(GROUP);
            marker_item(&item)
        };
        assert_eq!(read("billing"), Ok(MarkerItem::Group("billing".to_owned())));
        assert_eq!(read(MARKERS_COMPLETE_KEY), Ok(MarkerItem::Complete));
        assert!(read("\u{0}other").is_err());
        assert!(read("").is_err());
        assert_eq!(
            group_of(&marker_primary_key("g")),
            Ok(None),
            "a marker is no group's item"
        );
    }
}
