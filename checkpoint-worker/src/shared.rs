//! What the worker handle, the lease keeper and the assignments share.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use checkpoint_committer::Committer;
use tokio::sync::mpsc;

use crate::WorkerStore;
use crate::deadline::Deadline;
use crate::event::Event;
use crate::settings::Settings;
use crate::view::View;

/// The worker's identity, settings, counters and the last view of its leases.
pub(crate) struct Shared {
    pub store: Arc<dyn WorkerStore>,
    pub committer: Committer,
    /// Whether the worker started the committer (and so shuts it down).
    pub own_committer: bool,
    pub group: String,
    pub subscription: String,
    /// The partition count, `0..partitions`: only ever raised ([`Worker::grow_partitions`]).
    ///
    /// [`Worker::grow_partitions`]: crate::Worker::grow_partitions
    partitions: AtomicU32,
    pub worker_id: String,
    pub settings: Settings,
    pub deadline: Deadline,
    pub events: mpsc::UnboundedSender<Event>,
    pub counters: Counters,
    pub view: Mutex<View>,
    /// The keeper finished: the worker left (or stopped).
    pub finished: AtomicBool,
    /// The keeper finished because the store refused the subscription (retired), not because
    /// it was asked to shut down: a later `shutdown` says so.
    pub refused: AtomicBool,
    /// The keeper task, so a test can crash the worker (feature `test-hooks`).
    pub keeper_task: Mutex<Option<tokio::task::AbortHandle>>,
}

/// Monotonic counts, read by [`stats`](crate::Worker::stats).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub acquired: AtomicU64,
    pub handovers_in: AtomicU64,
    pub handovers_out: AtomicU64,
    pub drain_timeouts: AtomicU64,
    pub losses: AtomicU64,
    pub renew_failures: AtomicU64,
    pub final_write_failures: AtomicU64,
    pub store_requests: AtomicU64,
    pub rounds: AtomicU64,
}

impl Counters {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }
}

impl Shared {
    #[allow(clippy::too_many_arguments)] // one private constructor, called once
    pub(crate) fn new(
        store: Arc<dyn WorkerStore>,
        committer: Committer,
        own_committer: bool,
        group: String,
        subscription: String,
        partitions: u32,
        worker_id: String,
        settings: Settings,
    ) -> (Arc<Self>, mpsc::UnboundedReceiver<Event>) {
        let (events, receiver) = mpsc::unbounded_channel();
        let shared = Arc::new(Self {
            store,
            committer,
            own_committer,
            group,
            subscription,
            partitions: AtomicU32::new(partitions),
            worker_id,
            settings,
            deadline: Deadline::new(),
            events,
            counters: Counters::default(),
            view: Mutex::new(View::default()),
            finished: AtomicBool::new(false),
            refused: AtomicBool::new(false),
            keeper_task: Mutex::new(None),
        });
        (shared, receiver)
    }

    /// The partition count now: partitions are `0..partitions()`.
    pub(crate) fn partitions(&self) -> u32 {
        self.partitions.load(Ordering::Acquire)
    }

    /// Raises the partition count to `count` if it is below; returns the count before.
    pub(crate) fn raise_partitions(&self, count: u32) -> u32 {
        self.partitions.fetch_max(count, Ordering::AcqRel)
    }

    /// The last view of the leases, under its lock (a panic cannot leave it half written: every
    /// update replaces whole fields).
    pub(crate) fn view(&self) -> std::sync::MutexGuard<'_, View> {
        self.view.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
