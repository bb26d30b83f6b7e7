//! What a worker asks of the store, counted at the store (not by the worker's own counters):
//! the figures the crate doc and README state. A lone worker's cold start claims a settle after
//! `start` (25 ms at the defaults), a fleet's one renew interval after it, each worker its
//! share directly; a worker at rest makes two lease-store requests per renew interval (a renew
//! and a table read), whatever the number of partitions. Also: `Assignments` read as a
//! `Stream`.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use checkpoint_core::door::BoxFuture;
use checkpoint_core::layer::{Around, Call, Layered};
use checkpoint_core::{InMemoryCheckpointStore, Operation};
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
type CountingStore = Layered<Arc<InMemoryCheckpointStore>, Counting>;

/// The layer of a [`CountingStore`]: the requests sent.
#[derive(Default)]
struct Counting {
    sent: Mutex<Vec<Sent>>,
}

fn counting(inner: &Arc<InMemoryCheckpointStore>) -> Arc<CountingStore> {
    Arc::new(Layered::new(Arc::clone(inner), Counting::default()))
}

impl Counting {
    /// The requests sent in `from..until`, in order.
    fn sent_within(&self, from: Instant, until: Instant) -> Vec<Sent> {
        let sent = self.sent.lock().unwrap_or_else(PoisonError::into_inner);
        let within = |sent: &&Sent| from <= sent.at && sent.at < until;
        sent.iter().filter(within).copied().collect()
    }
}

impl Around for Counting {
    fn around<'a, T: Send + 'static>(
        &'a self,
        call: Call<'a>,
        request: BoxFuture<'a, T>,
    ) -> BoxFuture<'a, T> {
        let sent = Sent {
            operation: call.operation(),
            at: Instant::now(),
            partitions: call.partitions().len(),
        };
        self.sent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(sent);
        request
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

/// Starts each of `starts` (an id, and how long after the first it starts) on a fresh store
/// of `partitions` and returns when the first started, and the fleet with the assignments
/// each worker received within `within` of that (then shut down). The assignments are kept,
/// never dropped, as an application holds them.
async fn cold_start(
    starts: &[(&str, Duration)],
    partitions: u32,
    within: Duration,
) -> (Instant, Fleet) {
    let shared = paused_store();
    let started = Instant::now();
    let mut fleet = Vec::new();
    for &(id, after) in starts {
        tokio::time::sleep_until(started + after).await;
        let store = counting(&shared);
        let (worker, assignments) = start(&store, id, partitions);
        // Read as a stream: each arrival stamped when the stream yields it.
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
    tokio::time::sleep_until(started + within).await;
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

/// The lease requests (not the checkpoint reads) `store` saw in `from..until`, with the
/// partitions each named.
fn lease_requests(store: &CountingStore, from: Instant, until: Instant) -> Vec<(Operation, usize)> {
    store
        .around()
        .sent_within(from, until)
        .iter()
        .filter(|s| !matches!(s.operation, Operation::Load | Operation::List))
        .map(|s| (s.operation, s.partitions))
        .collect()
}

/// The worker's settle before a lone cold start's second look: a tenth of the renew interval
/// (at most 25 ms).
const SETTLE: Duration = Duration::from_millis(20);

#[tokio::test(start_paused = true)]
async fn a_lone_worker_claims_everything_a_settle_after_start_not_a_renew_interval() {
    let (started, fleet) = cold_start(&[("alone", Duration::ZERO)], 8, RENEW_INTERVAL / 2).await;
    let (worker, received, store) = &fleet[0];
    let after: Vec<Duration> = received.iter().map(|&(_, at)| at - started).collect();
    assert_eq!(
        after, [SETTLE; 8],
        "alone: every partition assigned a settle after the start (it was a renew interval)"
    );
    // The join (an acquire of no partition), the first look, the second look a settle later
    // (still alone), and the acquire of all 8: no renew interval waited for anybody. (The
    // round that claimed looks again soon after, as every round that moved something.)
    assert_eq!(
        lease_requests(store, started, started + SETTLE + Duration::from_millis(1)),
        [
            (Operation::Acquire, 0),
            (Operation::Leases, 0),
            (Operation::Leases, 0),
            (Operation::Acquire, 8)
        ],
        "a lone cold start looks twice, then claims"
    );
    assert_eq!(worker.stats().handovers_in, 0);
}

#[tokio::test(start_paused = true)]
async fn a_lone_worker_at_the_default_settings_claims_within_100_ms_of_its_start() {
    // The default lease (10 s) and renew interval (2 s): the settle is at its most, 25 ms.
    let store = counting(&paused_store());
    let started = Instant::now();
    let (worker, mut assignments) = Worker::builder(Arc::clone(&store), "g", "s", 4)
        .worker_id("alone")
        .start()
        .expect("valid settings");
    let mut after = Vec::new();
    for _ in 0..4 {
        let assignment = StreamExt::next(&mut assignments)
            .await
            .expect("an assignment");
        after.push((assignment.partition(), started.elapsed()));
    }
    after.sort_unstable();
    let expected: Vec<(u32, Duration)> = (0..4).map(|p| (p, Duration::from_millis(25))).collect();
    assert_eq!(after, expected, "(partition, assigned after start)");
    worker.shutdown().await.expect("a graceful shutdown");
}

/// Checks a fleet that started together: nothing assigned before one renew interval, each
/// worker's share in one round after it, nothing asked for or handed over, every partition
/// assigned once, the shares `expected`.
fn claimed_directly(started: Instant, fleet: &Fleet, partitions: u32, expected: &[usize]) {
    let floor = partitions as usize / fleet.len();
    let mut claimed = Vec::new();
    let mut shares = Vec::new();
    for (worker, received, store) in fleet {
        let id = worker.id();
        let after: Vec<Duration> = received.iter().map(|&(_, at)| at - started).collect();
        // One round: a worker that looked alone first and saw the others a settle later
        // waits one renew interval from that second look; a tenth of an interval leaves room
        // for the keeper's own scheduling, and none for a second round.
        let first_round =
            |after: &&Duration| **after < RENEW_INTERVAL + SETTLE + RENEW_INTERVAL / 10;
        assert!(
            after.iter().all(|after| *after >= RENEW_INTERVAL),
            "{id}: assigned {after:?} after start, before its round one renew interval on"
        );
        assert!(
            after.iter().filter(first_round).count() >= floor,
            "{id}: assigned {after:?} after start: not its share in its first round"
        );
        // Before then: the join (an acquire of no partition) and the table reads that only
        // look, nothing claimed.
        let before = lease_requests(store, started, started + RENEW_INTERVAL);
        assert!(
            before
                .iter()
                .all(|&(operation, partitions)| operation == Operation::Leases
                    || (operation, partitions) == (Operation::Acquire, 0)),
            "{id}: a fleet's cold start only looks for a renew interval: {before:?}"
        );
        // Each claimed its share directly: nothing was asked for or handed over.
        assert_eq!(worker.stats().handovers_in, 0, "{id}");
        claimed.extend(received.iter().map(|&(partition, _)| partition));
        shares.push(received.len());
    }
    claimed.sort_unstable();
    assert_eq!(claimed, (0..partitions).collect::<Vec<u32>>(), "{shares:?}");
    shares.sort_unstable();
    assert_eq!(shares, expected, "balanced");
}

#[tokio::test(start_paused = true)]
async fn workers_starting_together_claim_their_shares_directly_one_renew_interval_after_start() {
    let starts = [
        ("a", Duration::ZERO),
        ("b", Duration::ZERO),
        ("c", Duration::ZERO),
    ];
    let (started, fleet) = cold_start(&starts, 8, RENEW_INTERVAL * 3 / 2).await;
    claimed_directly(started, &fleet, 8, &[2, 3, 3]);
}

#[tokio::test(start_paused = true)]
async fn a_worker_joining_within_the_first_ones_settle_makes_it_a_fleet_start() {
    // The first looks alone, and sees the second at its second look: neither claims before a
    // renew interval, and each claims its share directly.
    let starts = [("a", Duration::ZERO), ("b", SETTLE / 2)];
    let (started, fleet) = cold_start(&starts, 8, RENEW_INTERVAL * 3 / 2).await;
    claimed_directly(started, &fleet, 8, &[4, 4]);
}

/// Holds every assignment until it is stopped, then drops it (drained at once).
fn hold_until_stopped(assignments: Assignments) {
    tokio::spawn(assignments.for_each(|assignment| async move {
        tokio::spawn(async move {
            let _ = assignment.stopped().await;
        });
    }));
}

#[tokio::test(start_paused = true)]
async fn a_worker_joining_after_the_first_ones_settle_gets_its_share_by_handover() {
    // A process started a while after the first (longer than its settle) joins a running
    // fleet: the first claimed everything alone, and hands over the newcomer's share, nothing
    // more.
    let shared = paused_store();
    let (a, a_assignments) = start(&counting(&shared), "a", 8);
    hold_until_stopped(a_assignments);
    tokio::time::sleep(SETTLE + Duration::from_millis(1)).await;
    assert_eq!(
        a.stats().held.len(),
        8,
        "alone, a holds everything a settle after its start"
    );
    tokio::time::sleep(RENEW_INTERVAL / 2).await;
    let (b, b_assignments) = start(&counting(&shared), "b", 8);
    hold_until_stopped(b_assignments);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        (a.stats().held.len(), b.stats().held.len()),
        (4, 4),
        "balanced"
    );
    assert_eq!(
        (a.stats().handovers_out, b.stats().handovers_in),
        (4, 4),
        "only b's share moved"
    );
    assert_eq!(a.stats().losses + b.stats().losses, 0);
    for worker in [a, b] {
        worker.shutdown().await.expect("a graceful shutdown");
    }
}

/// Per worker, over `intervals` renew intervals at rest: (renews, table reads, other requests,
/// the requests the worker's own `store_requests` counted).
async fn at_rest(partitions: u32, intervals: u32) -> Vec<(String, usize, usize, usize, u64)> {
    let shared = paused_store();
    let mut fleet = Vec::new();
    for id in ["a", "b"] {
        let store = counting(&shared);
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
        let sent = store.around().sent_within(from, until);
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
    let store = counting(&paused_store());
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
    let store = counting(&paused_store());
    let from = Instant::now();
    let (worker, assignments) = start(&store, "counted", 4);
    tokio::spawn(assignments.collect::<Vec<_>>());
    tokio::time::sleep(Duration::from_secs(3)).await;
    let stats = worker.stats();
    assert_eq!(stats.held.len(), 4);
    let sent = store.around().sent_within(from, Instant::now());
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
