//! The operations API on DynamoDB: `groups`, `start_at`, `retire`, `retired` and `purge`, on
//! the tombstone design of the crate documentation (a tombstone item per retired subscription,
//! `retired` and `pending` flags on checkpoint items, the create protocol of
//! [`requests::create`](crate::requests::create)).
//!
//! These calls send several requests (a page of a `Query` or `Scan`, then one request per
//! item); the store's timeout bounds each request, not the call, so that an operation on a
//! large subscription never fails for its size alone.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use checkpoint_core::validation::{validate_group, validate_key, validate_start_at};
use checkpoint_core::{CheckpointAdmin, Error, Operation};

use crate::requests::admin::{
    delete_checkpoint, delete_tombstone, groups_page, mark_retired, put_tombstone,
    read_subscription, tombstones_page,
};
use crate::requests::lease;
use crate::requests::start_at::{self, Attempt};
use crate::{BACKEND, DynamoDbCheckpointStore};

/// How many times `start_at` tries when a concurrent writer of the same name refuses it.
const START_AT_ATTEMPTS: u32 = 4;

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

impl DynamoDbCheckpointStore {
    /// `purge` of a retired subscription: every lease and heartbeat it has, each item deleted
    /// (under the tombstone, which refuses every `acquire` meanwhile).
    async fn purge_leases(&self, group: &str, subscription: &str) -> Result<(), Error> {
        let op = Operation::Purge;
        let name = (group, subscription);
        let (items, _pages) = self
            .every_page(op, |start| lease::leases_page(self, op, name, start))
            .await?;
        tracing::debug!(items = items.len(), "purging leases and heartbeats");
        self.each(op, items, |item| async move {
            lease::delete(self, name, &item).await
        })
        .await
        .map(drop)
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
        let (shown, pages) = self
            .every_page(op, |start| groups_page(self, start))
            .await?;
        // A `BTreeSet<String>` is sorted by the bytes of the names.
        let groups: BTreeSet<String> = shown.into_iter().collect();
        tracing::debug!(pages, groups = groups.len(), "scanned");
        Ok(groups.into_iter().collect())
    }

    /// A consistent `Query` of the group (is there any item or a tombstone?), then the create
    /// protocol for every partition at once: a `PutItem` each (pending, only where no item is),
    /// a second consistent `Query` of the group (a tombstone, or another caller's items of the
    /// name, refuse the call), an `UpdateItem` each. Refused by a concurrent writer of the name,
    /// it takes back what it created and tries again after a random pause (four attempts in
    /// all), so of two calls that refused each other one usually goes through. Not
    /// all-or-nothing: see the [crate documentation](crate).
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
            match start_at::attempt(self, group, subscription, positions).await {
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
        self.within(op, put_tombstone(self, group, subscription))
            .await?;
        // Only after the tombstone: any item created from here on sees it at step (b).
        let found = read_subscription(self, op, group, subscription).await?;
        let partitions: Vec<u32> = found
            .items
            .iter()
            .filter(|item| !item.retired)
            .map(|item| item.partition)
            .collect();
        tracing::debug!(items = partitions.len(), "marking retired");
        self.for_each_partition(op, partitions, |partition| {
            mark_retired(self, op, (group, subscription, partition))
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
        let (names, _pages) = self
            .every_page(Operation::Retired, |start| {
                tombstones_page(self, group, start)
            })
            .await?;
        let names: BTreeSet<String> = names.into_iter().collect();
        Ok(names.into_iter().collect())
    }

    /// A consistent `Query` of the group, then a `DeleteItem` per item of the subscription;
    /// under a tombstone, a consistent `Query` of the subscription's leases and a `DeleteItem`
    /// per lease and heartbeat; last, one of the tombstone. Without a tombstone, live
    /// checkpoints are refused ([`Error::NotRetired`]), retired leftovers deleted, and leases
    /// left alone.
    #[tracing::instrument(
        name = "checkpoint.purge",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = %self.table(), group = group, subscription = subscription)
    )]
    async fn purge(&self, group: &str, subscription: &str) -> Result<(), Error> {
        validate_key(group, subscription)?;
        let op = Operation::Purge;
        let found = read_subscription(self, op, group, subscription).await?;
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
        self.for_each_partition(op, partitions, |partition| {
            delete_checkpoint(self, (group, subscription, partition))
        })
        .await?;
        if found.tombstone {
            self.purge_leases(group, subscription).await?;
        }
        // The tombstone last: a purge that fails midway leaves the name retired, and runs again.
        if found.tombstone {
            self.within(op, delete_tombstone(self, group, subscription))
                .await?;
        }
        Ok(())
    }
}
