//! What a worker asks of the store, counted at the store (not by the worker's own counters):
//! the figures the crate doc and README state. A cold start's first assignments come one renew
//! interval after `start`, and a worker at rest makes two lease-store requests per renew
//! interval (a renew and a table read), whatever the number of partitions. Also: `Assignments`
//! read as a `Stream`.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use checkpoint_core::{
    Acquired, Checkpoint, CheckpointStore, Error, HeldLease, InMemoryCheckpointStore, LeaseStore,
    LeaseTable, Operation, Released,
};
use checkpoint_worker::{Assignment, Assignments, Worker};
use futures_util::StreamExt;
use tokio::time::Instant;

const RENEW_INTERVAL: Duration = Duration::from_millis(200);

/// A request a worker sent the store.
#[derive(Debug, Clone, Copy)]
struct Sent {
    operation: Operation,
    at: Instant,
    /// The partitions it names (an acquire's, a release's, a handover request's): a join is an
    /// acquire of none.
    partitions: usize,
}

/// One worker's view of a shared in-memory store (on tokio's paused clock), recording every
/// request the worker and its committer send, and when.
struct CountingStore {
    inner: Arc<InMemoryCheckpointStore>,
    sent: Mutex<Vec<Sent>>,
}

impl CountingStore {
    fn new(inner: &Arc<InMemoryCheckpointStore>) -> Arc<Self> {
        Arc::new(Self {
            inner: Arc::clone(inner),
            sent: Mutex::new(Vec::new()),
        })
    }

    fn count(&self, operation: Operation, partitions: usize) {
        let sent = Sent {
            operation,
            at: Instant::now(),
            partitions,
        };
        self.sent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(sent);
    }

    /// The requests sent in `from..until`, in order.
    fn sent_within(&self, from: Instant, until: Instant) -> Vec<Sent> {
        let sent = self.sent.lock().unwrap_or_else(PoisonError::into_inner);
        let within = |sent: &&Sent| from <= sent.at && sent.at < until;
        sent.iter().filter(within).copied().collect()
    }
}

#[async_trait]
impl CheckpointStore for CountingStore {
    async fn list(&self, group: &str) -> Result<Vec<Checkpoint>, Error> {
        self.count(Operation::List, 0);
        self.inner.list(group).await
    }

    async fn load(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> Result<Option<u64>, Error> {
        self.count(Operation::Load, 0);
        self.inner.load(group, subscription, partition).await
    }

    async fn save(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<(), Error> {
        self.count(Operation::Save, 0);
        self.inner
            .save(group, subscription, partition, position)
            .await
    }

    async fn save_all(&self, group: &str, checkpoints: &[Checkpoint]) -> Result<(), Error> {
        self.count(Operation::SaveAll, 0);
        self.inner.save_all(group, checkpoints).await
    }
}

#[async_trait]
impl LeaseStore for CountingStore {
    async fn acquire(
        &self,
        group: &str,
        subscription: &str,
        owner: &str,
        partitions: &[u32],
        duration: Duration,
    ) -> Result<Acquired, Error> {
        self.count(Operation::Acquire, partitions.len());
        self.inner
            .acquire(group, subscription, owner, partitions, duration)
            .await
    }

    async fn renew(
        &self,
        group: &str,
        subscription: &str,
        owner: &str,
        duration: Duration,
    ) -> Result<Vec<HeldLease>, Error> {
        self.count(Operation::Renew, 0);
        self.inner.renew(group, subscription, owner, duration).await
    }

    async fn release(
        &self,
        group: &str,
        subscription: &str,
        owner: &str,
        partitions: &[u32],
    ) -> Result<Released, Error> {
        self.count(Operation::Release, partitions.len());
        self.inner
            .release(group, subscription, owner, partitions)
            .await
    }

    async fn leave(&self, group: &str, subscription: &str, owner: &str) -> Result<Vec<u32>, Error> {
        self.count(Operation::Leave, 0);
        self.inner.leave(group, subscription, owner).await
    }

    async fn leases(&self, group: &str, subscription: &str) -> Result<LeaseTable, Error> {
        self.count(Operation::Leases, 0);
        self.inner.leases(group, subscription).await
    }

    async fn request_handover(
        &self,
        group: &str,
        subscription: &str,
        requester: &str,
        partitions: &[u32],
    ) -> Result<(), Error> {
        self.count(Operation::RequestHandover, partitions.len());
        self.inner
            .request_handover(group, subscription, requester, partitions)
            .await
    }
}

fn paused_store() -> Arc<InMemoryCheckpointStore> {
    Arc::new(InMemoryCheckpointStore::new().with_clock(|| tokio::time::Instant::now().into_std()))
}

fn start(store: &Arc<CountingStore>, id: &str, partitions: u32) -> (Worker, Assignments) {
    Worker::builder(Arc::clone(store), "g", "s", partitions)
        .worker_id(id)
        .lease_duration(Duration::from_secs(2))
        .renew_interval(RENEW_INTERVAL)
        .start()
        .expect("valid settings")
}

/// What a cold start handed out: each worker, the partitions it was assigned with when, and
/// its store.
type Fleet = Vec<(Worker, Vec<(u32, Instant)>, Arc<CountingStore>)>;

/// Starts `ids` together on a fresh store of `partitions` and returns when, and the fleet with
/// the assignments each worker received within `within` of the start (then shut down).
async fn cold_start(ids: &[&str], partitions: u32, within: Duration) -> (Instant, Fleet) {
    let shared = paused_store();
    let started = Instant::now();
    let mut fleet = Vec::new();
    for id in ids {
        let store = CountingStore::new(&shared);
        let (worker, assignments) = start(&store, id, partitions);
        // Read as a stream: each arrival stamped when the stream yields it. The assignments
        // are kept (not dropped), as an application holds them.
        let received = tokio::spawn(
            assignments
                .map(|assignment| {
                    let stamp = (assignment.partition(), Instant::now());
                    (assignment, stamp)
                })
                .collect::<Vec<_>>(),
        );
        fleet.push((worker, received, store));
    }
    tokio::time::sleep(within).await;
    let mut handed = Vec::new();
    for (worker, received, store) in fleet {
        // Shut down first: the stream ends then, and the task returns what it received.
        worker.shutdown().await.expect("a graceful shutdown");
        let received = received.await.expect("the reading task");
        // What came after `within` came from the shutdowns (another worker's partitions).
        let stamps = received
            .into_iter()
            .map(|(_, stamp)| stamp)
            .filter(|&(_, at)| at < started + within)
            .collect();
        handed.push((worker, stamps, store));
    }
    (started, handed)
}

#[tokio::test(start_paused = true)]
async fn a_cold_starts_first_assignments_come_one_renew_interval_after_start() {
    // Alone, and three workers starting together over 8 partitions.
    for ids in [&["alone"][..], &["a", "b", "c"]] {
        let (started, fleet) = cold_start(ids, 8, RENEW_INTERVAL * 3 / 2).await;
        let floor = 8 / ids.len();
        let mut claimed = Vec::new();
        let mut shares = Vec::new();
        for (worker, received, store) in &fleet {
            let id = worker.id();
            let after: Vec<Duration> = received.iter().map(|&(_, at)| at - started).collect();
            // The doc's figure is the interval; a tenth of it leaves room for the keeper's own
            // scheduling, and none for a second round.
            let first_round = |after: &&Duration| **after < RENEW_INTERVAL + RENEW_INTERVAL / 10;
            assert!(
                after.iter().all(|after| *after >= RENEW_INTERVAL),
                "{id}: assigned {after:?} after start, before its first round"
            );
            assert!(
                after.iter().filter(first_round).count() >= floor,
                "{id}: assigned {after:?} after start: not its share in its first round"
            );
            // Before its first round: the join (an acquire of no partition) and one table
            // read that only looks.
            let before = store.sent_within(started, started + RENEW_INTERVAL);
            let before: Vec<(Operation, usize)> =
                before.iter().map(|s| (s.operation, s.partitions)).collect();
            assert_eq!(
                before,
                [(Operation::Acquire, 0), (Operation::Leases, 0)],
                "{id}: a cold start's first round only looks"
            );
            // Each claimed its share directly: nothing was asked for or handed over.
            assert_eq!(worker.stats().handovers_in, 0, "{id}");
            claimed.extend(received.iter().map(|&(partition, _)| partition));
            shares.push(received.len());
        }
        claimed.sort_unstable();
        assert_eq!(claimed, (0..8).collect::<Vec<u32>>(), "{ids:?}: {shares:?}");
        shares.sort_unstable();
        let expected: &[usize] = if ids.len() == 1 { &[8] } else { &[2, 3, 3] };
        assert_eq!(shares, expected, "{ids:?}: balanced");
    }
}

/// Per worker, over `intervals` renew intervals at rest: (renews, table reads, other requests,
/// the requests the worker's own `store_requests` counted).
async fn at_rest(partitions: u32, intervals: u32) -> Vec<(String, usize, usize, usize, u64)> {
    let shared = paused_store();
    let mut fleet = Vec::new();
    for id in ["a", "b"] {
        let store = CountingStore::new(&shared);
        let (worker, assignments) = start(&store, id, partitions);
        // The application holds its assignments and reports nothing: at rest.
        tokio::spawn(assignments.collect::<Vec<_>>());
        fleet.push((worker, store));
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    // Off the rounds' instants, so that no request sits on the window's edges.
    tokio::time::sleep(RENEW_INTERVAL / 2).await;
    let from = Instant::now();
    let before: Vec<u64> = fleet
        .iter()
        .map(|(w, _)| w.stats().store_requests)
        .collect();
    tokio::time::sleep(RENEW_INTERVAL * intervals).await;
    let until = Instant::now();
    let mut counts = Vec::new();
    for ((worker, store), before) in fleet.iter().zip(before) {
        let stats = worker.stats();
        assert_eq!(
            stats.held.len(),
            partitions as usize / 2,
            "{}",
            stats.worker_id
        );
        let sent = store.sent_within(from, until);
        let of = |operation| sent.iter().filter(|s| s.operation == operation).count();
        let (renews, reads) = (of(Operation::Renew), of(Operation::Leases));
        let others = sent.len() - renews - reads;
        let counted = stats.store_requests - before;
        counts.push((stats.worker_id, renews, reads, others, counted));
    }
    for (worker, _) in fleet {
        worker.shutdown().await.expect("a graceful shutdown");
    }
    counts
}

#[tokio::test(start_paused = true)]
async fn at_rest_a_worker_sends_the_store_two_requests_per_renew_interval_whatever_the_partitions()
{
    const INTERVALS: u32 = 25;
    let every = usize::try_from(INTERVALS).expect("small");
    for partitions in [4, 64] {
        for (worker, renews, reads, others, counted) in at_rest(partitions, INTERVALS).await {
            assert_eq!(
                (renews, reads, others),
                (every, every, 0),
                "{worker} with {partitions} partitions over {INTERVALS} renew intervals at rest: \
                 (renews, table reads, other requests)"
            );
            assert_eq!(
                counted,
                (renews + reads) as u64,
                "{worker}: its own store_requests agrees with the store"
            );
        }
    }
}

#[tokio::test(start_paused = true)]
async fn assignments_are_a_stream_that_ends_after_the_shutdown() {
    let store = CountingStore::new(&paused_store());
    let (worker, mut assignments) = start(&store, "streamed", 3);
    // StreamExt's `next` (the inherent one would win on a method call), then `take`.
    let first = StreamExt::next(&mut assignments)
        .await
        .expect("an assignment");
    let rest: Vec<Assignment> = assignments.by_ref().take(2).collect().await;
    let mut partitions: Vec<u32> = rest.iter().map(Assignment::partition).collect();
    partitions.push(first.partition());
    partitions.sort_unstable();
    assert_eq!(partitions, [0, 1, 2]);
    // Dropped: drained, so the shutdown hands them over at once.
    drop((first, rest));
    worker.shutdown().await.expect("a graceful shutdown");
    let after: Vec<Assignment> = assignments.collect().await;
    assert!(
        after.is_empty(),
        "the stream ends once the worker has stopped"
    );
}

#[tokio::test(start_paused = true)]
async fn from_the_start_a_worker_counts_every_request_it_sends() {
    // 4 partitions: where they resume is read with a load each (8 at most), the path a larger
    // grant replaces with one list.
    let store = CountingStore::new(&paused_store());
    let from = Instant::now();
    let (worker, assignments) = start(&store, "counted", 4);
    tokio::spawn(assignments.collect::<Vec<_>>());
    tokio::time::sleep(Duration::from_secs(3)).await;
    let stats = worker.stats();
    assert_eq!(stats.held.len(), 4);
    let sent = store.sent_within(from, Instant::now());
    let loads = sent
        .iter()
        .filter(|s| s.operation == Operation::Load)
        .count();
    assert_eq!(loads, 4, "a load per partition granted");
    assert_eq!(
        stats.store_requests,
        sent.len() as u64,
        "its own store_requests agrees with the store"
    );
    worker.shutdown().await.expect("a graceful shutdown");
}
