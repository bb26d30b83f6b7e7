//! What every backend module hands to the runner: the store, and beside it the same server
//! driven without the store (the floor, the raw client, the hand-written alternative).

use std::future::Future;
use std::ops::RangeInclusive;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use checkpoint_conformance::round_trips::CountingProxy;
use checkpoint_core::{CheckpointAdmin, LeaseStore};

/// Any error of the bench: it is printed and the run fails.
pub type BenchError = Box<dyn std::error::Error + Send + Sync>;

/// A boxed, owned future, so that one runner drives every backend's closures.
pub type BoxFut<T> = Pin<Box<dyn Future<Output = Result<T, BenchError>> + Send + 'static>>;

/// One save, with everything owned so the future can be spawned.
#[derive(Debug, Clone)]
pub struct SaveArgs {
    /// The group.
    pub group: Arc<str>,
    /// The subscription.
    pub subscription: Arc<str>,
    /// The partition.
    pub partition: u32,
    /// The position, ahead of every earlier save of the key (see [`next_position`]).
    pub position: u64,
}

/// A save without the store: the raw client or the hand-written alternative.
pub type SaveFn = Arc<dyn Fn(SaveArgs) -> BoxFut<()> + Send + Sync>;
/// A call that takes nothing: the floor.
pub type UnitFn = Arc<dyn Fn() -> BoxFut<()> + Send + Sync>;
/// A batch written without the store: the raw bulk floor of `save_all`.
pub type BulkFn =
    Arc<dyn Fn(Arc<str>, Arc<Vec<checkpoint_core::Checkpoint>>) -> BoxFut<()> + Send + Sync>;
/// A raw listing of a group: the number of rows it returned.
pub type ListFn = Arc<dyn Fn(Arc<str>) -> BoxFut<usize> + Send + Sync>;

/// A store with every contract the bench measures: checkpoints, the operations API, leases.
pub trait BenchStore: CheckpointAdmin + LeaseStore {}

impl<S: CheckpointAdmin + LeaseStore + ?Sized> BenchStore for S {}

/// The store and the same server without it, all on one client (pool or connection) so that
/// the only difference between them is the store's own code.
pub struct Subject {
    /// The store under test.
    pub store: Arc<dyn BenchStore>,
    /// The cheapest request the server answers: one round trip, no work.
    pub floor: UnitFn,
    /// PostgreSQL only: the cheapest durable write, one round trip whose commit waits for a
    /// WAL flush (a one-row `UPDATE`), the floor of any durable save.
    pub commit_floor: Option<UnitFn>,
    /// The store's own save statement or script, sent by the client library directly.
    pub raw_save: SaveFn,
    /// What a user would write by hand: read, compare in the client, write under a guard.
    pub hand_save: SaveFn,
    /// The raw query behind `list`, rows only.
    pub raw_list: ListFn,
    /// The same rows as a `save_all`, written by one unconditional bulk request as the store
    /// sends its batch (see `bulk`); `None` where the backend has no bulk request (DynamoDB).
    pub raw_save_all: Option<BulkFn>,
    /// Redis only: the same rows through the least a conditional script does (read every
    /// field, write them all back, nothing compared; see `bulk::redis_script`).
    pub script_save_all: Option<BulkFn>,
    /// The SQL stores: the two rows a new owner's first acquire writes (its heartbeat and the
    /// lease), upserted with nothing read or judged (see `lease_floor`); its `position` unused.
    pub acquire_floor: Option<SaveFn>,
}

/// Round trips each store operation is documented to take, checked in every run.
#[derive(Debug, Clone, Copy)]
pub struct Documented {
    /// `save`.
    pub save: u64,
    /// `load`.
    pub load: u64,
    /// `save_all` of `n` distinct keys: the fewest and the most exchanges the proxy may count.
    /// One number for a single request. A store that pipelines several requests waits for one
    /// round of replies, but the proxy counts one more exchange each time the server starts
    /// answering before the rest of the pipeline has passed it, which depends on timing.
    pub save_all: fn(usize) -> RangeInclusive<u64>,
    /// `list` of a group of `n`, when the store documents an exact count.
    pub list: Option<fn(usize) -> u64>,
}

/// One backend, ready to run.
pub struct Backend {
    /// Its name in the table.
    pub name: &'static str,
    /// Server and version, as the server reports it.
    pub server: String,
    /// Direct connections: every timing.
    pub direct: Subject,
    /// The same through a [`CountingProxy`]: round trips only. `None` for an embedded
    /// database, which has no wire.
    pub counted: Option<(Subject, CountingProxy)>,
    /// What the store documents, checked against the counts.
    pub documented: Documented,
    /// The store on a table or key prefix of its own, empty at the start of the run, for the
    /// `groups` rows (which see every group of a table).
    pub groups_store: Arc<dyn BenchStore>,
    /// `save_all` batch sizes of this run (1,000 and 10,000, or less for a slow emulator in
    /// the smoke mode).
    pub batch_sizes: [usize; 2],
    /// Notes for the reading of the table.
    pub note: &'static str,
    /// A slow emulator: the full run takes fewer samples of it, so it ends in minutes.
    pub slow: bool,
    /// Exchanges the client library adds after each call on its own: sqlx pings every
    /// connection that returns to its pool (`PoolConnection::return_to_pool` in sqlx-core),
    /// which the caller does not wait for. The proxy counts them; the table shows them apart.
    pub release_exchanges: u64,
}

static POSITION: AtomicU64 = AtomicU64::new(1);

/// A position higher than every one handed out before: every save of the bench moves its
/// checkpoint forward (the steady state of a subscription), whichever worker sends it.
pub fn next_position() -> u64 {
    POSITION.fetch_add(1, Ordering::Relaxed)
}

/// The first `count` positions from now on, reserved at once (for a batch).
pub fn reserve_positions(count: u64) -> u64 {
    POSITION.fetch_add(count, Ordering::Relaxed)
}

/// An error with what the bench was doing when it happened; the cause stays its source.
#[derive(Debug)]
pub struct Failed {
    what: String,
    source: BenchError,
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The cause is printed too: the bench prints errors once, at the top.
        write!(f, "{}: {}", self.what, self.source)
    }
}

impl std::error::Error for Failed {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.source.as_ref())
    }
}

/// Wraps an error with what the bench was doing.
pub fn context<E>(what: impl Into<String>) -> impl FnOnce(E) -> BenchError
where
    E: Into<BenchError>,
{
    let what = what.into();
    move |error| {
        Box::new(Failed {
            what,
            source: error.into(),
        })
    }
}
