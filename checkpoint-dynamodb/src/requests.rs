//! Every request the store sends, its expressions, and the reading of its reply: the one place
//! that talks to DynamoDB.
//!
//! - [`checkpoint`]: the requests on one checkpoint's item (save, claim, the consistent reads)
//!   and `list`'s pages;
//! - [`write`](mod@write): `save` and `claim`, decided by the item as it was;
//! - [`create`]: the create protocol, once in a checkpoint's lifetime;
//! - [`compare_and_set`]: `advance`, and its consistent re-read;
//! - [`start_at`]: the create protocol for every partition of a new subscription;
//! - [`admin`]: tombstones, retired flags, deletes and the reads of a group for the operations
//!   API;
//! - [`groups`]: the groups' markers, their `Query`, and the one `Scan` that fills them in;
//! - [`lease`]: the leases and heartbeats of a subscription;
//! - [`parked`]: the parked entries of a group;
//! - [`table`]: creating the table and waiting for it.
//!
//! Every expression names attributes through `#placeholders`: `group`, `key`, `position` and
//! `partition` are among DynamoDB's reserved words, and placeholders keep all expressions
//! uniform. The store's timeout bounds a call on one checkpoint as a whole (its create protocol
//! and re-reads included), applied by the caller; the calls of many requests (`start_at`, the
//! reads of a group or of the table, `create_table`) bound each request here, through
//! [`bounded`](crate::bounded).

pub(crate) mod admin;
pub(crate) mod checkpoint;
pub(crate) mod compare_and_set;
pub(crate) mod create;
pub(crate) mod groups;
pub(crate) mod lease;
pub(crate) mod parked;
pub(crate) mod start_at;
pub(crate) mod table;
pub(crate) mod write;

use std::collections::HashMap;

use aws_sdk_dynamodb::operation::delete_item::builders::DeleteItemFluentBuilder;
use aws_sdk_dynamodb::operation::get_item::builders::GetItemFluentBuilder;
use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::AttributeValue;

use crate::DynamoDbCheckpointStore;
use crate::layout::{GROUP, primary_key};

/// One checkpoint's key: group, subscription, partition.
pub(crate) type Key<'a> = (&'a str, &'a str, u32);

/// An item as the SDK hands it over.
pub(crate) type Item = HashMap<String, AttributeValue>;

/// The key a paged `Query` or `Scan` goes on from (DynamoDB's `LastEvaluatedKey`).
pub(crate) type StartKey = HashMap<String, AttributeValue>;

/// One page of a `Query` or `Scan`, decoded: what it holds, and where the next page starts
/// (`None` after the last).
pub(crate) struct Page<T> {
    pub(crate) items: Vec<T>,
    pub(crate) next: Option<StartKey>,
}

/// An `UpdateItem` of one checkpoint's item, for the caller to complete.
fn update_item(
    store: &DynamoDbCheckpointStore,
    group: &str,
    subscription: &str,
    partition: u32,
) -> UpdateItemFluentBuilder {
    store
        .client()
        .update_item()
        .table_name(store.table())
        .set_key(Some(primary_key(group, subscription, partition)))
}

/// A `GetItem` of one checkpoint's item with `ConsistentRead`: a read reflects every write
/// acknowledged before it, which the create protocol and the re-reads rely on.
fn consistent_get(
    store: &DynamoDbCheckpointStore,
    group: &str,
    subscription: &str,
    partition: u32,
) -> GetItemFluentBuilder {
    store
        .client()
        .get_item()
        .table_name(store.table())
        .set_key(Some(primary_key(group, subscription, partition)))
        .consistent_read(true)
}

/// One page of a consistent `Query` of `group`'s items from `start`, at most the store's page
/// size, for the caller to complete with its key condition (on `#g = :g`) and projection:
/// every read of a group (`list`, the operations API) pages the same way.
fn group_page_query(
    store: &DynamoDbCheckpointStore,
    group: &str,
    start: Option<StartKey>,
) -> QueryFluentBuilder {
    store
        .client()
        .query()
        .table_name(store.table())
        .expression_attribute_names("#g", GROUP)
        .expression_attribute_values(":g", AttributeValue::S(group.to_owned()))
        .consistent_read(true)
        .set_limit(store.query_page_size())
        .set_exclusive_start_key(start)
}

/// A `DeleteItem` of one checkpoint's item, for the caller to complete.
fn delete_item(
    store: &DynamoDbCheckpointStore,
    group: &str,
    subscription: &str,
    partition: u32,
) -> DeleteItemFluentBuilder {
    store
        .client()
        .delete_item()
        .table_name(store.table())
        .set_key(Some(primary_key(group, subscription, partition)))
}

/// An item a reply carries, if it carries one: some servers send an empty map for none.
fn sent(item: Option<&Item>) -> Option<&Item> {
    item.filter(|item| !item.is_empty())
}

/// The next page's start: `None` once the last page is read (DynamoDB sends no key, or an
/// empty one, then).
fn next_start(key: Option<StartKey>) -> Option<StartKey> {
    key.filter(|key| !key.is_empty())
}
