//! The requests of the groups' markers (the crate documentation, "Groups"): writing a group's
//! marker (once per store instance), the pages of the markers' `Query`, the check that a
//! marked group still shows something, and the one `Scan` that fills the markers in on a table
//! written by an earlier version of the store.

use std::collections::BTreeSet;

use aws_sdk_dynamodb::types::AttributeValue;
use checkpoint_core::{Error, Operation};

use super::{Page, StartKey, next_start};
use crate::DynamoDbCheckpointStore;
use crate::error::{sdk_error, unexpected};
use crate::layout::{
    GROUP, KEY, MARKERS_PARTITION_KEY, MarkerItem, PENDING, RETIRED, UPDATED_AT, group_of,
    marker_item, marker_primary_key, markers_complete_primary_key, now_millis,
};

/// Every item of one partition key (the markers', or a group's).
const PARTITION_KEY_CONDITION: &str = "#g = :g";

/// A marked group shows something when one of its items is a tombstone or a live checkpoint:
/// neither retired nor pending (a tombstone carries neither flag).
const SHOWN_FILTER: &str = "attribute_not_exists(#ret) AND attribute_not_exists(#pend)";

/// Makes sure `group` has its marker before the caller makes anything of the group visible:
/// a `PutItem` of the marker, unless this store instance has written it already (the store
/// never deletes one). Of concurrent callers for one group, one sends it and the others wait.
pub(crate) async fn mark(
    store: &DynamoDbCheckpointStore,
    op: Operation,
    group: &str,
) -> Result<(), Error> {
    let state = store.group_markers().state(group);
    let mut written = state.lock().await;
    if !*written {
        put_marker(store, op, group).await?;
        *written = true;
    }
    Ok(())
}

/// A `PutItem` of `group`'s marker (putting it again changes nothing that matters).
pub(crate) async fn put_marker(
    store: &DynamoDbCheckpointStore,
    op: Operation,
    group: &str,
) -> Result<(), Error> {
    let mut item = marker_primary_key(group);
    item.insert(UPDATED_AT.to_owned(), now_millis());
    store
        .client()
        .put_item()
        .table_name(store.table())
        .set_item(Some(item))
        .send()
        .await
        .map(drop)
        .map_err(|e| sdk_error(op, e))
}

/// A `PutItem` of the "markers complete" item: every group of the table has its marker.
pub(crate) async fn put_markers_complete(
    store: &DynamoDbCheckpointStore,
    op: Operation,
) -> Result<(), Error> {
    let mut item = markers_complete_primary_key();
    item.insert(UPDATED_AT.to_owned(), now_millis());
    store
        .client()
        .put_item()
        .table_name(store.table())
        .set_item(Some(item))
        .send()
        .await
        .map(drop)
        .map_err(|e| sdk_error(op, e))
}

/// Whether the "markers complete" item is there, on a consistent `GetItem`.
pub(crate) async fn markers_complete(
    store: &DynamoDbCheckpointStore,
    op: Operation,
) -> Result<bool, Error> {
    let got = store
        .client()
        .get_item()
        .table_name(store.table())
        .set_key(Some(markers_complete_primary_key()))
        .projection_expression("#k")
        .expression_attribute_names("#k", KEY)
        .consistent_read(true)
        .send()
        .await
        .map_err(|e| sdk_error(op, e))?;
    Ok(got.item.is_some_and(|item| !item.is_empty()))
}

/// One page of a consistent `Query` of the markers' partition, sorted by the bytes of the
/// sort key: the "markers complete" item first when there is one, then the marked groups.
pub(crate) async fn markers_page(
    store: &DynamoDbCheckpointStore,
    start: Option<StartKey>,
) -> Result<Page<MarkerItem>, Error> {
    let op = Operation::Groups;
    let page = store
        .client()
        .query()
        .table_name(store.table())
        .key_condition_expression(PARTITION_KEY_CONDITION)
        .projection_expression("#k")
        .expression_attribute_names("#g", GROUP)
        .expression_attribute_names("#k", KEY)
        .expression_attribute_values(":g", AttributeValue::S(MARKERS_PARTITION_KEY.to_owned()))
        .consistent_read(true)
        .set_limit(store.query_page_size())
        .set_exclusive_start_key(start)
        .send()
        .await
        .map_err(|e| sdk_error(op, e))?;
    let items = page
        .items()
        .iter()
        .map(|item| marker_item(item).map_err(unexpected(op)))
        .collect::<Result<_, Error>>()?;
    Ok(Page {
        items,
        next: next_start(page.last_evaluated_key),
    })
}

/// One page of the check that a marked group shows something: a consistent `Query` of the
/// group from its last item back (its tombstones sort last), at most `limit` items read,
/// filtered to tombstones and live checkpoints. `items` is empty or one `true`.
pub(crate) async fn shown_page(
    store: &DynamoDbCheckpointStore,
    group: &str,
    limit: i32,
    start: Option<StartKey>,
) -> Result<Page<bool>, Error> {
    let op = Operation::Groups;
    let page = store
        .client()
        .query()
        .table_name(store.table())
        .key_condition_expression(PARTITION_KEY_CONDITION)
        .filter_expression(SHOWN_FILTER)
        .projection_expression("#k")
        .expression_attribute_names("#g", GROUP)
        .expression_attribute_names("#k", KEY)
        .expression_attribute_names("#ret", RETIRED)
        .expression_attribute_names("#pend", PENDING)
        .expression_attribute_values(":g", AttributeValue::S(group.to_owned()))
        .consistent_read(true)
        .scan_index_forward(false)
        .limit(limit)
        .set_exclusive_start_key(start)
        .send()
        .await
        .map_err(|e| sdk_error(op, e))?;
    if !page.items().is_empty() {
        return Ok(Page {
            items: vec![true],
            next: None,
        });
    }
    Ok(Page {
        items: Vec::new(),
        next: next_start(page.last_evaluated_key),
    })
}

/// One page of the filling-in `Scan`, consistent, of the partition keys only: the groups that
/// hold any item (a checkpoint, live or not, or a tombstone), each once per page. Leases,
/// heartbeats and markers are no group's.
pub(crate) async fn scan_groups_page(
    store: &DynamoDbCheckpointStore,
    op: Operation,
    start: Option<StartKey>,
) -> Result<Page<String>, Error> {
    let page = store
        .client()
        .scan()
        .table_name(store.table())
        .projection_expression("#g")
        .expression_attribute_names("#g", GROUP)
        .consistent_read(true)
        .set_limit(store.query_page_size())
        .set_exclusive_start_key(start)
        .send()
        .await
        .map_err(|e| sdk_error(op, e))?;
    let mut groups = BTreeSet::new();
    for item in page.items() {
        if let Some(group) = group_of(item).map_err(unexpected(op))? {
            groups.insert(group);
        }
    }
    Ok(Page {
        items: groups.into_iter().collect(),
        next: next_start(page.last_evaluated_key),
    })
}
