//! The operations API on DynamoDB: `groups`, `start_at`, `retire`, `retired` and `purge`, on
//! the tombstone design of the crate documentation (a tombstone item per retired subscription,
//! `retired` and `pending` flags on checkpoint items, the create protocol of `write`).
//!
//! These calls send several requests (a page of a `Query` or `Scan`, then one request per
//! item); the store's timeout bounds each request, not the call, so that an operation on a
//! large subscription never fails for its size alone.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

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

/// How many times `start_at` tries when a concurrent writer of the same name refuses it.
pub(crate) const START_AT_ATTEMPTS: u32 = 4;

/// Why one attempt of `start_at` did not create the subscription.
#[derive(Debug)]
enum Attempt {
    /// A concurrent writer of the name (another `start_at`, or a save) refused it after the
    /// name was seen free; what it created is taken back, so it may try again.
    Contended,
    /// Refused for good (`Exists` seen at the start, `Retired`) or failed.
    Failed(Error),
}

impl From<Error> for Attempt {
    fn from(error: Error) -> Self {
        Attempt::Failed(error)
    }
}

/// The pause before attempt `attempt + 1` of a contended `start_at` whose attempt took
/// `took`: random, so that two calls that refused each other do not meet again, and long
/// enough for the other call to finish (up to twice the attempt's own time, doubled each
/// attempt), so the one that waits longer finds the other's subscription and answers `Exists`.
fn start_at_pause(attempt: u32, took: Duration) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let ceiling = took.saturating_mul(2 << attempt.saturating_sub(1).min(4));
    let ceiling_us = u64::try_from(ceiling.as_micros())
        .unwrap_or(u64::MAX)
        .max(1_000);
    Duration::from_micros(random % ceiling_us)
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

    /// One attempt of `start_at`, after validation: the steps of the crate doc's create
    /// protocol for every partition at once.
    async fn start_at_once(
        &self,
        group: &str,
        subscription: &str,
        positions: &[(u32, u64)],
    ) -> Result<(), Attempt> {
        let op = Operation::StartAt;
        let found = self.subscription(op, group, subscription).await?;
        if found.tombstone {
            return Err(Error::retired(group, subscription).into());
        }
        if !found.items.is_empty() {
            return Err(Error::exists(group, subscription).into());
        }
        // (a) Every partition, pending, only where no item is. The name had no item a moment
        // ago, so a partition taken now is a concurrent writer's.
        let mine = match self
            .put_pending_partitions(group, subscription, positions)
            .await
        {
            Err(Error::Exists { .. }) => return Err(Attempt::Contended),
            other => other?,
        };
        // (b) Alone under the name, and not retired.
        if let Err(refusal) = self.alone_and_not_retired(group, subscription, &mine).await {
            self.take_back(op, group, subscription, mine).await?;
            return Err(match refusal {
                Error::Exists { .. } => Attempt::Contended,
                other => other.into(),
            });
        }
        // (c) Visible, unless retired meanwhile.
        self.for_each_partition(op, mine, |partition| async move {
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
        .map_err(Attempt::from)
    }

    /// Step (a) of `start_at`: a pending item for every partition, each only where no item is.
    /// Returns the partitions it created; when another writer got one first (or a request
    /// failed), takes back what it created, so that a refusal leaves nothing behind.
    async fn put_pending_partitions(
        &self,
        group: &str,
        subscription: &str,
        positions: &[(u32, u64)],
    ) -> Result<Vec<u32>, Error> {
        let op = Operation::StartAt;
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
        match refusal {
            Some(refusal) => {
                self.take_back(op, group, subscription, mine).await?;
                Err(refusal)
            }
            None => Ok(mine),
        }
    }

    /// Step (b) of `start_at`, after every item of step (a) is written: a consistent `Query`
    /// of the group. A tombstone refuses the call as retired (a retire that began before (a)
    /// ended has put it by now, or will find the pending items and mark them); an item of the
    /// name on a partition this call did not create (another `start_at`'s or a save's) refuses
    /// it as existing. Of two concurrent calls over disjoint partitions, the one whose `Query`
    /// starts last sees the other's items, which were all written before the other's `Query`
    /// began; so they cannot both pass, and they may both be refused.
    async fn alone_and_not_retired(
        &self,
        group: &str,
        subscription: &str,
        mine: &[u32],
    ) -> Result<(), Error> {
        let found = self
            .subscription(Operation::StartAt, group, subscription)
            .await?;
        if found.tombstone {
            return Err(Error::retired(group, subscription));
        }
        let mine: BTreeSet<u32> = mine.iter().copied().collect();
        if let Some(other) = found
            .items
            .iter()
            .find(|item| !mine.contains(&item.partition))
        {
            tracing::debug!(
                partition = other.partition,
                pending = other.pending,
                "another writer's item under the name"
            );
            return Err(Error::exists(group, subscription));
        }
        Ok(())
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
    /// a second consistent `Query` of the group (a tombstone, or another caller's items of the
    /// name, refuse the call), an `UpdateItem` each. Refused by a concurrent writer of the name,
    /// it takes back what it created and tries again after a random pause (at most
    /// [`START_AT_ATTEMPTS`] times), so of two calls that refused each other one usually goes
    /// through. Not all-or-nothing: see the [crate documentation](crate).
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
        let mut attempt = 1;
        loop {
            let began = Instant::now();
            match self.start_at_once(group, subscription, positions).await {
                Err(Attempt::Contended) if attempt < START_AT_ATTEMPTS => {
                    tracing::debug!(attempt, "refused by a concurrent writer of the name");
                    tokio::time::sleep(start_at_pause(attempt, began.elapsed())).await;
                    attempt += 1;
                }
                Err(Attempt::Contended) => return Err(Error::exists(group, subscription)),
                Err(Attempt::Failed(error)) => return Err(error),
                Ok(()) => return Ok(()),
            }
        }
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
