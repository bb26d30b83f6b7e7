//! The operations API on DynamoDB: `groups`, `start_at`, `retire`, `retired` and `purge`, on
//! the tombstone design of the crate documentation (a tombstone item per retired subscription,
//! `retired` and `pending` flags on checkpoint items, the create protocol of `write`).
//!
//! These calls send several requests (a page of a `Query` or `Scan`, then one request per
//! item); the store's timeout bounds each request, not the call, so that an operation on a
//! large subscription never fails for its size alone.

use std::collections::{BTreeSet, HashMap};

use async_trait::async_trait;
use aws_sdk_dynamodb::types::AttributeValue;
use checkpoint_core::validation::{validate_group, validate_key, validate_start_at};
use checkpoint_core::{CheckpointAdmin, Error, Operation, UnexpectedValue};
use futures_util::{StreamExt, TryStreamExt, stream};

use crate::error::{is_condition_failed, sdk_error, unexpected};
use crate::layout::{GROUP, ItemKind, PENDING, RETIRED, has_flag, item_kind};
use crate::{BACKEND, DynamoDbCheckpointStore, requests};

type Item = HashMap<String, AttributeValue>;

/// One checkpoint item of a subscription, as a group's `Query` shows it.
#[derive(Debug, Clone, Copy)]
struct Found {
    partition: u32,
    retired: bool,
    pending: bool,
}

impl Found {
    /// What `list` and `load` show.
    fn is_live(self) -> bool {
        !self.retired && !self.pending
    }
}

/// A subscription's items and whether it has a tombstone, on consistent reads.
#[derive(Debug, Default)]
struct Subscription {
    tombstone: bool,
    items: Vec<Found>,
}

/// The next page's start: `None` once the last page is read (DynamoDB sends no key, or an empty
/// one, then).
fn next_start(key: Option<Item>) -> Option<Item> {
    key.filter(|key| !key.is_empty())
}

impl DynamoDbCheckpointStore {
    /// Every item of `subscription`, and its tombstone: a consistent `Query` of the group,
    /// every page followed. A subscription's checkpoints do not sit together in the group
    /// (the sort key starts with the partition), so the whole group is read.
    async fn subscription(
        &self,
        op: Operation,
        group: &str,
        subscription: &str,
    ) -> Result<Subscription, Error> {
        let mut found = Subscription::default();
        let mut start_key = None;
        loop {
            let request =
                requests::group_items_page(self, group, self.query_page_size(), start_key.take());
            let page = self
                .timed(op, request.send())
                .await?
                .map_err(|e| sdk_error(op, e))?;
            for item in page.items() {
                match item_kind(item).map_err(unexpected(op))? {
                    ItemKind::Tombstone(name) if name == subscription => found.tombstone = true,
                    ItemKind::Checkpoint(name, partition) if name == subscription => {
                        found.items.push(Found {
                            partition,
                            retired: has_flag(item, RETIRED),
                            pending: has_flag(item, PENDING),
                        });
                    }
                    _ => {}
                }
            }
            match next_start(page.last_evaluated_key) {
                Some(key) => start_key = Some(key),
                None => return Ok(found),
            }
        }
    }

    /// Runs `request(partition)` for every partition, at most `max_concurrency` in flight, each
    /// under the store's timeout; the first error fails the whole.
    async fn for_each_partition<F, Fut>(
        &self,
        op: Operation,
        partitions: Vec<u32>,
        request: F,
    ) -> Result<(), Error>
    where
        F: Fn(u32) -> Fut,
        Fut: Future<Output = Result<(), Error>>,
    {
        stream::iter(partitions)
            .map(|partition| {
                let sent = request(partition);
                async move { self.timed(op, sent).await? }
            })
            .buffer_unordered(self.max_concurrency())
            .try_collect::<Vec<()>>()
            .await
            .map(drop)
    }

    /// Deletes the pending items `start_at` created, when it is refused after step (a). An item
    /// that is no longer pending (a concurrent save finished it) stays.
    async fn take_back(
        &self,
        op: Operation,
        group: &str,
        subscription: &str,
        partitions: Vec<u32>,
    ) -> Result<(), Error> {
        self.for_each_partition(op, partitions, |partition| async move {
            match requests::delete_pending(self, group, subscription, partition)
                .send()
                .await
            {
                Err(error) if !is_condition_failed(&error) => Err(sdk_error(op, error)),
                _ => Ok(()),
            }
        })
        .await
    }
}

#[async_trait]
impl CheckpointAdmin for DynamoDbCheckpointStore {
    /// A `Scan` of the table's keys and flags with `ConsistentRead`, every page followed
    /// ([`with_query_page_size`](DynamoDbCheckpointStore::with_query_page_size) items per
    /// page, else 1 MB): a group counts when it holds a tombstone or a live checkpoint.
    #[tracing::instrument(
        name = "checkpoint.groups",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = %self.table())
    )]
    async fn groups(&self) -> Result<Vec<String>, Error> {
        let op = Operation::Groups;
        let mut groups = BTreeSet::new();
        let mut start_key = None;
        let mut pages = 0_u32;
        loop {
            let request = requests::groups_page(self, self.query_page_size(), start_key.take());
            let page = self
                .timed(op, request.send())
                .await?
                .map_err(|e| sdk_error(op, e))?;
            pages += 1;
            for item in page.items() {
                let shown = match item_kind(item).map_err(unexpected(op))? {
                    ItemKind::Tombstone(_) => true,
                    ItemKind::Checkpoint(..) => {
                        !has_flag(item, RETIRED) && !has_flag(item, PENDING)
                    }
                };
                if shown {
                    match item.get(GROUP) {
                        Some(AttributeValue::S(group)) => {
                            groups.insert(group.clone());
                        }
                        _ => {
                            return Err(unexpected(op)(UnexpectedValue::new(
                                GROUP,
                                "not a string",
                            )));
                        }
                    }
                }
            }
            match next_start(page.last_evaluated_key) {
                Some(key) => start_key = Some(key),
                None => break,
            }
        }
        tracing::debug!(pages, groups = groups.len(), "scanned");
        // A `BTreeSet<String>` is sorted by the bytes of the names.
        Ok(groups.into_iter().collect())
    }

    /// A consistent `Query` of the group (is there any item or a tombstone?), then the create
    /// protocol for every partition at once: a `PutItem` each (pending, only where no item is),
    /// one `GetItem` of the tombstone, an `UpdateItem` each. Not all-or-nothing: see the
    /// [crate documentation](crate).
    #[tracing::instrument(
        name = "checkpoint.start_at",
        level = "debug",
        skip_all,
        fields(
            backend = BACKEND, table = %self.table(), group = group, subscription = subscription,
            partitions = positions.len(),
        )
    )]
    async fn start_at(
        &self,
        group: &str,
        subscription: &str,
        positions: &[(u32, u64)],
    ) -> Result<(), Error> {
        validate_start_at(group, subscription, positions)?;
        let op = Operation::StartAt;
        let found = self.subscription(op, group, subscription).await?;
        if found.tombstone {
            return Err(Error::retired(group, subscription));
        }
        if !found.items.is_empty() {
            return Err(Error::exists(group, subscription));
        }

        // (a) Every partition, pending, only where no item is.
        let created = stream::iter(positions.iter().copied())
            .map(|(partition, position)| async move {
                let request =
                    requests::put_pending(self, group, subscription, partition, position, None);
                match self.timed(op, request.send()).await {
                    Ok(Ok(_)) => Ok((partition, true)),
                    Ok(Err(error)) if is_condition_failed(&error) => Ok((partition, false)),
                    Ok(Err(error)) => Err((partition, sdk_error(op, error))),
                    Err(timeout) => Err((partition, timeout)),
                }
            })
            .buffer_unordered(self.max_concurrency())
            .collect::<Vec<Result<(u32, bool), (u32, Error)>>>()
            .await;
        let mut mine = Vec::new();
        let mut refusal = None;
        for outcome in created {
            match outcome {
                Ok((partition, true)) => mine.push(partition),
                Ok((_, false)) => {
                    refusal.get_or_insert_with(|| Error::exists(group, subscription));
                }
                // A failed put may have taken effect: take it back too.
                Err((partition, error)) => {
                    mine.push(partition);
                    refusal = Some(error);
                }
            }
        }
        if let Some(refusal) = refusal {
            // Another writer got there first (or a request failed): take back what this call
            // created, so that a refusal leaves nothing behind.
            self.take_back(op, group, subscription, mine).await?;
            return Err(refusal);
        }

        // (b) A retire that began before (a) ended has put its tombstone by now, or will see
        // the pending items and mark them.
        let tombstone = self
            .timed(
                op,
                requests::get_tombstone(self, group, subscription).send(),
            )
            .await?
            .map_err(|e| sdk_error(op, e))?;
        if tombstone.item.is_some_and(|item| !item.is_empty()) {
            self.take_back(op, group, subscription, mine).await?;
            return Err(Error::retired(group, subscription));
        }

        // (c) Visible, unless retired meanwhile.
        let partitions: Vec<u32> = positions.iter().map(|&(partition, _)| partition).collect();
        self.for_each_partition(op, partitions, |partition| async move {
            match requests::finish_pending(self, group, subscription, partition)
                .send()
                .await
            {
                Ok(_) => Ok(()),
                Err(error) if is_condition_failed(&error) => {
                    Err(Error::retired(group, subscription))
                }
                Err(error) => Err(sdk_error(op, error)),
            }
        })
        .await
    }

    /// A `PutItem` of the tombstone, then a consistent `Query` of the group, every page
    /// followed, and an `UpdateItem` setting `retired` on each of the subscription's items.
    #[tracing::instrument(
        name = "checkpoint.retire",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = %self.table(), group = group, subscription = subscription)
    )]
    async fn retire(&self, group: &str, subscription: &str) -> Result<(), Error> {
        validate_key(group, subscription)?;
        let op = Operation::Retire;
        self.timed(
            op,
            requests::put_tombstone(self, group, subscription).send(),
        )
        .await?
        .map_err(|e| sdk_error(op, e))?;
        // Only after the tombstone: any item created from here on sees it at step (b).
        let found = self.subscription(op, group, subscription).await?;
        let partitions: Vec<u32> = found
            .items
            .iter()
            .filter(|item| !item.retired)
            .map(|item| item.partition)
            .collect();
        tracing::debug!(items = partitions.len(), "marking retired");
        self.for_each_partition(op, partitions, |partition| async move {
            match requests::mark_retired(self, group, subscription, partition)
                .send()
                .await
            {
                // Refused: a concurrent purge deleted it.
                Err(error) if !is_condition_failed(&error) => Err(sdk_error(op, error)),
                _ => Ok(()),
            }
        })
        .await
    }

    /// A consistent `Query` of the group's tombstones (`begins_with` on the sort key), every
    /// page followed.
    #[tracing::instrument(
        name = "checkpoint.retired",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = %self.table(), group = group)
    )]
    async fn retired(&self, group: &str) -> Result<Vec<String>, Error> {
        validate_group(group)?;
        let op = Operation::Retired;
        let mut names = BTreeSet::new();
        let mut start_key = None;
        loop {
            let request =
                requests::tombstones_page(self, group, self.query_page_size(), start_key.take());
            let page = self
                .timed(op, request.send())
                .await?
                .map_err(|e| sdk_error(op, e))?;
            for item in page.items() {
                if let ItemKind::Tombstone(name) = item_kind(item).map_err(unexpected(op))? {
                    names.insert(name);
                }
            }
            match next_start(page.last_evaluated_key) {
                Some(key) => start_key = Some(key),
                None => return Ok(names.into_iter().collect()),
            }
        }
    }

    /// A consistent `Query` of the group, then a `DeleteItem` per item of the subscription and,
    /// last, one of the tombstone. Without a tombstone, live checkpoints are refused
    /// ([`Error::NotRetired`]) and retired leftovers deleted.
    #[tracing::instrument(
        name = "checkpoint.purge",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = %self.table(), group = group, subscription = subscription)
    )]
    async fn purge(&self, group: &str, subscription: &str) -> Result<(), Error> {
        validate_key(group, subscription)?;
        let op = Operation::Purge;
        let found = self.subscription(op, group, subscription).await?;
        if !found.tombstone && found.items.iter().any(|item| item.is_live()) {
            return Err(Error::not_retired(group, subscription));
        }
        // Under a tombstone every item goes (live ones too: a retire that failed midway meant
        // them gone). Without one, only retired leftovers (a zombie's item retired during an
        // earlier purge); a pending item there is a save in flight, and stays.
        let partitions: Vec<u32> = found
            .items
            .iter()
            .filter(|item| found.tombstone || item.retired)
            .map(|item| item.partition)
            .collect();
        tracing::debug!(items = partitions.len(), found.tombstone, "purging");
        self.for_each_partition(op, partitions, |partition| async move {
            requests::delete_checkpoint(self, group, subscription, partition)
                .send()
                .await
                .map(drop)
                .map_err(|e| sdk_error(op, e))
        })
        .await?;
        // The tombstone last: a purge that fails midway leaves the name retired, and runs again.
        if found.tombstone {
            self.timed(
                op,
                requests::delete_tombstone(self, group, subscription).send(),
            )
            .await?
            .map_err(|e| sdk_error(op, e))?;
        }
        Ok(())
    }
}
