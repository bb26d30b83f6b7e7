//! The operations API on DynamoDB: `groups`, `start_at`, `retire`, `retired` and `purge`, on
//! the tombstone design of the crate documentation (a tombstone item per retired subscription,
//! `retired` and `pending` flags on checkpoint items, the create protocol of
//! [`requests::create`](crate::requests::create)).
//!
//! `groups` reads the groups' markers (the crate documentation, "Groups"), which `retire`, the
//! create protocol and `start_at` write. These calls send several requests (a page of a
//! `Query`, then one request per item or group); the store's timeout bounds each request, not
//! the call, so that an operation on a large subscription never fails for its size alone.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use checkpoint_core::backoff::{Backoff, Jitter};
use checkpoint_core::door::{AdminDoor, Checked};
use checkpoint_core::{Error, Operation};
use futures_util::{StreamExt, TryStreamExt, stream};

use crate::DynamoDbCheckpointStore;
use crate::layout::MarkerItem;
use crate::requests::admin::{
    delete_checkpoint, delete_tombstone, mark_retired, put_tombstone, read_subscription,
    tombstones_page,
};
use crate::requests::groups::{
    mark, markers_complete, markers_page, put_marker, put_markers_complete, scan_groups_page,
    shown_page,
};
use crate::requests::lease;
use crate::requests::start_at::{self, Attempt};

/// How many items the check that a marked group shows something reads in its first `Query`
/// page; each further page reads [`SHOWN_GROWTH`] times more, up to [`SHOWN_MAX_LIMIT`].
const SHOWN_FIRST_LIMIT: i32 = 1;
/// How many times more items each further page of that check reads.
const SHOWN_GROWTH: i32 = 10;
/// The most items one page of that check reads.
const SHOWN_MAX_LIMIT: i32 = 1_000;

/// How many times `start_at` tries when a concurrent writer of the same name refuses it.
const START_AT_ATTEMPTS: u32 = 4;

/// The pauses of a contended `start_at` whose attempt took `took`: random with full jitter, so
/// that two calls that refused each other do not meet again, and long enough for the other call
/// to finish (up to twice the attempt's own time, or a millisecond if that is more, doubled
/// each attempt), so the one that waits longer finds the other's subscription and answers
/// `Exists`.
fn start_at_backoff(took: Duration) -> Backoff {
    let base = took.max(Duration::from_millis(1));
    // The four attempts pause at most 2³ × `base`; the cap only bounds a longer series.
    Backoff::new(base, base.saturating_mul(32))
        .with_attempts(START_AT_ATTEMPTS)
        .with_jitter(Jitter::Full)
}

impl DynamoDbCheckpointStore {
    /// Fills the markers in unless the "markers complete" item says they are: one `GetItem`.
    pub(crate) async fn ensure_group_markers(&self, op: Operation) -> Result<(), Error> {
        if self.within(op, markers_complete(self, op)).await? {
            return Ok(());
        }
        self.fill_in_markers(op).await
    }

    /// The filling-in: a `Scan` of the table's partition keys, a marker per group found (any
    /// item of it: `groups` checks each marked group anyway), then "markers complete".
    pub(crate) async fn fill_in_markers(&self, op: Operation) -> Result<(), Error> {
        let (found, pages) = self
            .every_page(op, |start| scan_groups_page(self, op, start))
            .await?;
        let found: Vec<String> = found
            .into_iter()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        tracing::info!(
            pages,
            groups = found.len(),
            "filling in the groups' markers"
        );
        self.each(op, found, |group| async move {
            put_marker(self, op, &group).await
        })
        .await?;
        self.within(op, put_markers_complete(self, op)).await
    }

    /// Every marked group, sorted by bytes, from the markers' `Query` (every page); on a table
    /// without the "markers complete" item (it sorts first), the markers are filled in first.
    async fn marked_groups(&self) -> Result<Vec<String>, Error> {
        let op = Operation::Groups;
        let mut filled_in = false;
        loop {
            let (items, pages) = self
                .every_page(op, |start| markers_page(self, start))
                .await?;
            let complete = items.first() == Some(&MarkerItem::Complete);
            if complete || filled_in {
                tracing::debug!(pages, "markers read");
                let groups = items.into_iter().filter_map(|item| match item {
                    MarkerItem::Group(group) => Some(group),
                    MarkerItem::Complete => None,
                });
                return Ok(groups.collect());
            }
            self.fill_in_markers(op).await?;
            filled_in = true;
        }
    }

    /// Whether a marked group shows something (a tombstone or a live checkpoint): a `Query` of
    /// the group from its end, one item at first, more on each further page, until one is
    /// found or the group is read to its start.
    async fn is_shown(&self, group: &str) -> Result<bool, Error> {
        let op = Operation::Groups;
        let mut limit = SHOWN_FIRST_LIMIT;
        let mut start = None;
        loop {
            let page = self
                .within(op, shown_page(self, group, limit, start.take()))
                .await?;
            if !page.items.is_empty() {
                return Ok(true);
            }
            match page.next {
                Some(next) => start = Some(next),
                None => return Ok(false),
            }
            limit = limit.saturating_mul(SHOWN_GROWTH).min(SHOWN_MAX_LIMIT);
        }
    }

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

impl AdminDoor for DynamoDbCheckpointStore {
    /// A consistent `Query` of the groups' markers, every page followed
    /// ([`with_query_page_size`](DynamoDbCheckpointStore::with_query_page_size) items per page,
    /// else 1 MB), then for each marked group, at most
    /// [`with_max_concurrency`](DynamoDbCheckpointStore::with_max_concurrency) at once, a
    /// consistent `Query` with `Limit` 1 of its last item that is a tombstone or a live
    /// checkpoint (a group emptied by `purge` keeps its marker, and is left out). On a table
    /// without the "markers complete" item, the markers are filled in first, once.
    async fn send_groups(&self, _checked: Checked) -> Result<Vec<String>, Error> {
        let marked = self.marked_groups().await?;
        // Each request of a check is bounded by the timeout, not the check (`is_shown`).
        let checked: Vec<(String, bool)> = stream::iter(marked)
            .map(|group| async move {
                let shown = self.is_shown(&group).await?;
                Ok::<_, Error>((group, shown))
            })
            .buffer_unordered(self.max_concurrency())
            .try_collect()
            .await?;
        // A `BTreeSet<String>` is sorted by the bytes of the names.
        let groups: BTreeSet<String> = checked
            .into_iter()
            .filter_map(|(group, shown)| shown.then_some(group))
            .collect();
        tracing::debug!(groups = groups.len(), "checked");
        Ok(groups.into_iter().collect())
    }

    /// A consistent `Query` of the group (is there any item or a tombstone?), then the create
    /// protocol for every partition at once: a `PutItem` each (pending, only where no item is),
    /// a second consistent `Query` of the group (a tombstone, or another caller's items of the
    /// name, refuse the call), an `UpdateItem` each. Refused by a concurrent writer of the name,
    /// it takes back what it created and tries again after a random pause (four attempts in
    /// all), so of two calls that refused each other one usually goes through. Not
    /// all-or-nothing: see the [crate documentation](crate).
    async fn send_start_at(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        positions: &[(u32, u64)],
    ) -> Result<(), Error> {
        let mut attempt = 1;
        loop {
            let began = Instant::now();
            match start_at::attempt(self, group, subscription, positions).await {
                Err(Attempt::Contended) => {
                    let Some(pause) = start_at_backoff(began.elapsed()).retry_after(attempt) else {
                        return Err(Error::exists(group, subscription));
                    };
                    tracing::debug!(attempt, "refused by a concurrent writer of the name");
                    tokio::time::sleep(pause).await;
                    attempt += 1;
                }
                Err(Attempt::Failed(error)) => return Err(error),
                Ok(()) => return Ok(()),
            }
        }
    }

    /// A `PutItem` of the group's marker (unless this instance wrote it already), then one of
    /// the tombstone, then a consistent `Query` of the group, every page followed, and an
    /// `UpdateItem` setting `retired` on each of the subscription's items.
    async fn send_retire(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
    ) -> Result<(), Error> {
        let op = Operation::Retire;
        // The group's marker before the tombstone, which shows the group at once.
        self.within(op, mark(self, op, group)).await?;
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
    async fn send_retired(&self, _checked: Checked, group: &str) -> Result<Vec<String>, Error> {
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
    async fn send_purge(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
    ) -> Result<(), Error> {
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
