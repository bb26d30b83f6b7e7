//! The store: its settings, and the monotonic and exclusive operations, each validated, then
//! run through [`requests`](crate::requests) within the store's timeout.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::Client;
use checkpoint_core::batch::highest_per_key;
use checkpoint_core::door::{BoxFuture, Checked, CheckpointDoor, Door, ExclusiveDoor};
use checkpoint_core::settings::{validate_count, validate_timeout};
use checkpoint_core::{Checkpoint, DEFAULT_TIMEOUT, Error, Fingerprint, Operation};
use futures_util::{StreamExt, TryStreamExt, future, stream};

use crate::clock::LeaseClock;
use crate::group_markers::GroupMarkers;
use crate::layout::validate_table_name;
use crate::requests::{checkpoint, compare_and_set, table, write};
use crate::{BACKEND, DEFAULT_MAX_CONCURRENCY, DEFAULT_TABLE};

#[cfg(doc)]
use checkpoint_core::{CheckpointStore, ExclusiveCheckpointStore};

/// A [`CheckpointStore`] and [`ExclusiveCheckpointStore`] on one DynamoDB table.
///
/// Every write is a request with a condition DynamoDB evaluates atomically: one request for a
/// checkpoint that exists, four for its first write (the create protocol). See the
/// [crate documentation](crate) for the table layout and the requests each operation sends.
///
/// Cloning is cheap: the [`Client`] is shared, and so is what the store knows of leases on its
/// own clock (the local deadlines of the owners it acquired for, its observations of other
/// owners' heartbeats: see the crate documentation, "Leases") and the groups whose marker it
/// has written ("Groups").
#[derive(Clone)]
pub struct DynamoDbCheckpointStore {
    client: Client,
    table: String,
    max_concurrency: usize,
    timeout: Option<Duration>,
    query_page_size: Option<i32>,
    lease_clock: Arc<LeaseClock>,
    group_markers: Arc<GroupMarkers>,
}

impl fmt::Debug for DynamoDbCheckpointStore {
    // The client is left out: its configuration is the user's business and holds the credential
    // provider.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DynamoDbCheckpointStore")
            .field("table", &self.table)
            .field("max_concurrency", &self.max_concurrency)
            .field("timeout", &self.timeout)
            .field("query_page_size", &self.query_page_size)
            .finish_non_exhaustive()
    }
}

impl DynamoDbCheckpointStore {
    /// A store on the table [`DEFAULT_TABLE`] through `client`, with a timeout of
    /// [`DEFAULT_TIMEOUT`] per request and [`DEFAULT_MAX_CONCURRENCY`].
    ///
    /// The client's configuration (region, credentials, endpoint, retry and timeout settings)
    /// is used as it is: throttling and transient errors are retried by the SDK as that
    /// configuration says. The table must exist with the layout in the
    /// [crate documentation](crate); [`create_table`](Self::create_table) creates it.
    pub fn new(client: Client) -> Self {
        Self {
            client,
            table: DEFAULT_TABLE.to_owned(),
            max_concurrency: DEFAULT_MAX_CONCURRENCY,
            timeout: Some(DEFAULT_TIMEOUT),
            query_page_size: None,
            lease_clock: Arc::default(),
            group_markers: Arc::default(),
        }
    }

    /// Uses the table `name` instead of [`DEFAULT_TABLE`].
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] with [`Argument::Setting("table")`](checkpoint_core::Argument)
    /// when `name` is not a DynamoDB table name: 3 to 255 characters of `A-Z`, `a-z`, `0-9`,
    /// `_`, `-` and `.`.
    pub fn with_table(mut self, name: &str) -> Result<Self, Error> {
        validate_table_name(name)?;
        self.table = name.to_owned();
        Ok(self)
    }

    /// How many `UpdateItem` requests [`save_all`](CheckpointStore::save_all) keeps in flight at
    /// once ([`DEFAULT_MAX_CONCURRENCY`] unless set).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] with
    /// [`Argument::Setting("max_concurrency")`](checkpoint_core::Argument) for 0.
    pub fn with_max_concurrency(mut self, max_concurrency: usize) -> Result<Self, Error> {
        self.max_concurrency = validate_count("max_concurrency", max_concurrency, usize::MAX)?;
        Ok(self)
    }

    /// Fails a request that takes longer than `timeout`, the SDK's retries of it included, with
    /// [`Error::Timeout`] (the default is [`DEFAULT_TIMEOUT`]).
    ///
    /// Each request is bounded, which is the whole call but for
    /// [`save_all`](CheckpointStore::save_all) (a request per key) and
    /// [`list`](CheckpointStore::list) (one per page): a large valid batch never fails for its
    /// size alone. A save that timed out may or may not have taken effect; retrying it is safe.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] with [`Argument::Setting("timeout")`](checkpoint_core::Argument)
    /// for a zero duration.
    pub fn with_timeout(mut self, timeout: Duration) -> Result<Self, Error> {
        self.timeout = Some(validate_timeout(timeout)?);
        Ok(self)
    }

    /// No timeout of the store's own: a request is then bounded only by the client's
    /// `TimeoutConfig`, and without one there a server that accepts connections and never
    /// answers keeps a call waiting.
    pub fn without_timeout(mut self) -> Self {
        self.timeout = None;
        self
    }

    /// Asks for at most `items` items per `Query` page in [`list`](CheckpointStore::list)
    /// (DynamoDB's `Limit`; without it a page holds up to 1 MB). `list` follows every page
    /// either way, so this only trades requests for response size.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] with
    /// [`Argument::Setting("query_page_size")`](checkpoint_core::Argument) for 0 or a value
    /// above `i32::MAX` (DynamoDB's `Limit` is at least 1).
    pub fn with_query_page_size(mut self, items: u32) -> Result<Self, Error> {
        let items = validate_count("query_page_size", items as usize, i32::MAX as usize)?;
        self.query_page_size = i32::try_from(items).ok();
        Ok(self)
    }

    /// The table this store uses.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The client this store uses.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The store's timeout of one request, if it has one.
    pub(crate) fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// How many items a `Query` or `Scan` page asks for (`None`: up to 1 MB).
    pub(crate) fn query_page_size(&self) -> Option<i32> {
        self.query_page_size
    }

    /// The local deadlines and observations of leases, shared by the store's clones.
    pub(crate) fn lease_clock(&self) -> &LeaseClock {
        &self.lease_clock
    }

    /// The groups whose marker this instance has written, shared by the store's clones.
    pub(crate) fn group_markers(&self) -> &GroupMarkers {
        &self.group_markers
    }

    /// How many requests of one call are in flight at most.
    pub(crate) fn max_concurrency(&self) -> usize {
        self.max_concurrency
    }

    /// Creates the table with on-demand billing if it does not exist, then waits until it is
    /// `ACTIVE` (up to five minutes; the store's timeout bounds each request of the wait), then
    /// makes sure every group has its marker (see the [crate documentation](crate), "Groups"):
    /// one consistent `GetItem` of the "markers complete" item, and only without it (a new
    /// table, or one written by an earlier version of this store) the filling-in of
    /// [`fill_in_group_markers`](Self::fill_in_group_markers), once.
    ///
    /// Meant for tests and quick starts; teams that provision tables themselves use the
    /// definition in the [crate documentation](crate) (the first `groups` then fills the markers
    /// in). Calling it for an existing table is fine: it then only checks that the table's key
    /// schema is the one this store needs, failing with a non-retryable error when it is not,
    /// and fills the markers in if no call did yet.
    #[tracing::instrument(
        name = "checkpoint.create_table",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = %self.table)
    )]
    pub async fn create_table(&self) -> Result<(), Error> {
        table::create_and_wait(self).await?;
        self.ensure_group_markers(Operation::Migrate).await
    }

    /// Fills in the marker of every group of the table (see the [crate documentation](crate),
    /// "Groups"): one consistent `Scan` of the partition keys (one request per page, each
    /// within the store's timeout), a `PutItem` per group found, then the "markers complete"
    /// item. Idempotent.
    ///
    /// `create_table` and the first `groups` of a table without the "markers complete" item do
    /// this by themselves. Call it yourself once the last process running an earlier version of
    /// this store has stopped: a group that such a process created after the markers were first
    /// filled in has no marker, and `groups` shows it only once this runs (or once this version
    /// writes a checkpoint's first write, a `start_at` or a `retire` in it).
    #[tracing::instrument(
        name = "checkpoint.fill_in_group_markers",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = %self.table)
    )]
    pub async fn fill_in_group_markers(&self) -> Result<(), Error> {
        self.fill_in_markers(Operation::Migrate).await
    }
}

checkpoint_core::through_door!(DynamoDbCheckpointStore: checkpoints, exclusive, admin, leases, parked);

impl Door for DynamoDbCheckpointStore {
    const BACKEND: &'static str = BACKEND;

    fn place(&self) -> Option<&dyn fmt::Display> {
        Some(&self.table)
    }

    /// Nothing around the whole call: the store's timeout bounds each request of it
    /// (`bounded.rs`), so that a large batch, group or subscription never fails for its size
    /// alone.
    fn bound<'a, T: Send + 'a>(
        &'a self,
        _operation: Operation,
        request: BoxFuture<'a, T>,
    ) -> BoxFuture<'a, T> {
        request
    }
}

impl CheckpointDoor for DynamoDbCheckpointStore {
    /// One `Query` on the group's partition key with `ConsistentRead`, followed through every
    /// page.
    async fn send_list(&self, _checked: Checked, group: &str) -> Result<Vec<Checkpoint>, Error> {
        let (checkpoints, pages) = self
            .every_page(Operation::List, |start| {
                checkpoint::list_page(self, group, start)
            })
            .await?;
        tracing::debug!(pages, checkpoints = checkpoints.len(), "listed");
        Ok(checkpoints)
    }

    /// One `GetItem` with `ConsistentRead`.
    async fn send_load(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> Result<Option<u64>, Error> {
        let op = Operation::Load;
        let key = (group, subscription, partition);
        self.within(op, checkpoint::load(self, op, key)).await
    }

    /// One `UpdateItem` with the condition
    /// `position < :p AND attribute_not_exists(retired) AND attribute_not_exists(pending)` on a
    /// checkpoint that exists; the first save of a checkpoint creates it with the create
    /// protocol (4 requests in all, see the [crate documentation](crate)).
    async fn send_save(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<(), Error> {
        let op = Operation::Save;
        let key = (group, subscription, partition);
        self.within(op, write::save(self, op, key, position)).await
    }

    /// One conditional `UpdateItem` per distinct key (and the create protocol for a key saved
    /// for the first time), at most
    /// [`with_max_concurrency`](DynamoDbCheckpointStore::with_max_concurrency) in flight.
    ///
    /// That is the fewest requests DynamoDB allows while every entry stays independent:
    /// `BatchWriteItem` takes no conditions (it would move checkpoints backwards), and
    /// `TransactWriteItems` is all-or-nothing (one entry that is not ahead would cancel the
    /// others, and it takes at most 100 items). Repeated keys are collapsed to their highest
    /// position first. The first failing request fails the call; requests still in flight are
    /// dropped, so some entries may be saved and others not, as the contract allows.
    async fn send_save_all(
        &self,
        _checked: Checked,
        group: &str,
        checkpoints: &[Checkpoint],
    ) -> Result<(), Error> {
        let op = Operation::SaveAll;
        // Each future owns its entry: borrowing from the collapsed batch makes the future's
        // type higher-ranked over the borrow, which `Send` inference cannot prove.
        stream::iter(highest_per_key(checkpoints))
            .map(|entry| async move {
                let key = (group, entry.subscription.as_str(), entry.partition);
                self.within(op, write::save(self, op, key, entry.position))
                    .await
            })
            .buffer_unordered(self.max_concurrency)
            .try_for_each(|()| future::ready(Ok(())))
            .await
    }
}

impl ExclusiveDoor for DynamoDbCheckpointStore {
    /// One `UpdateItem` with `if_not_exists` for the position and the fingerprint on an
    /// existing, live checkpoint, returning the item as it is after the update; the stored
    /// fingerprint is compared here. A reply without the item costs one consistent `GetItem`
    /// more; the first claim of a checkpoint creates it with the create protocol.
    async fn send_claim(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
        fingerprint: Fingerprint,
        initial_position: u64,
    ) -> Result<u64, Error> {
        let key = (group, subscription, partition);
        let claim = write::claim(self, key, fingerprint, initial_position);
        self.within(Operation::Claim, claim).await
    }

    /// One `UpdateItem` with the condition `position = :from`; when it fails, the item as it
    /// was comes back in the same response (`ReturnValuesOnConditionCheckFailure`) and gives
    /// [`Error::Moved`] its current position. A refusal whose reply holds no item (the checkpoint
    /// does not exist, or the server does not return old items) costs one consistent `GetItem`
    /// more, so that `Moved` never reports an existing checkpoint as absent.
    async fn send_advance(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
    ) -> Result<(), Error> {
        let key = (group, subscription, partition);
        let advance = compare_and_set::advance(self, key, from, to);
        self.within(Operation::Advance, advance).await
    }
}
