//! Generated histories on a paused clock: random logs, handler times, transient failures and
//! poison entries, two subscriptions whose partitions change hands gracefully, and sometimes a
//! store that stops answering one of them (a loss). After each history:
//!
//! - nothing is skipped silently: every entry below a partition's final checkpoint was handled
//!   or parked, and a partition ends past its last entry unless it stopped on a poison entry;
//! - a graceful handover redoes nothing: an entry is handled twice only in a partition the
//!   lost subscription held (or past a poison entry its partition stopped on, where entries in
//!   flight beside it ran and the next owner starts at the poison entry again);
//! - a loss dispatches nothing after the local deadline: the lost subscription starts no
//!   handler later than one lease after its store stopped answering;
//! - retries respect the backoff: consecutive runs of an entry are at least half a step apart;
//! - a poison entry holds only its own partition: every other partition ends past its last
//!   entry.
//!
//! `CHECKPOINT_SUBSCRIPTION_HISTORIES` sets how many histories run (default 40).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use checkpoint_core::parked::ParkedStore;
use checkpoint_core::source::{Entry, InMemorySource};
use checkpoint_core::{CheckpointStore, InMemoryCheckpointStore};
use checkpoint_subscription::{HandlerResult, OnPoison, Retry, Subscription};
use tokio::time::Instant;

use crate::support::{HangingStore, hanging_over};

const LEASE: Duration = Duration::from_secs(2);
const RETRY_FIRST: Duration = Duration::from_millis(20);

/// One generated history's parameters.
#[derive(Debug, Clone)]
struct Plan {
    seed: u64,
    partitions: u32,
    entries: u64,
    max_in_flight: usize,
    ordered_by_key: bool,
    park: bool,
    poison: BTreeSet<(u32, u64)>,
    transient: BTreeMap<(u32, u64), u32>,
    join_after: Duration,
    leave_after: Duration,
    lose_b_after: Option<Duration>,
}

impl Plan {
    fn generate(seed: u64) -> Self {
        let mut rng = fastrand::Rng::with_seed(seed);
        let partitions = rng.u32(1..=4);
        let entries = rng.u64(20..=80);
        let mut poison = BTreeSet::new();
        let mut transient = BTreeMap::new();
        for partition in 0..partitions {
            for position in 1..=entries {
                match rng.u32(0..100) {
                    0..=1 => drop(poison.insert((partition, position))),
                    2..=11 => drop(transient.insert((partition, position), rng.u32(1..=2))),
                    _ => {}
                }
            }
        }
        Self {
            seed,
            partitions,
            entries,
            max_in_flight: rng.usize(1..=8),
            ordered_by_key: rng.bool(),
            park: rng.bool(),
            poison,
            transient,
            join_after: Duration::from_millis(rng.u64(0..3000)),
            leave_after: Duration::from_millis(rng.u64(3000..8000)),
            lose_b_after: rng
                .bool()
                .then(|| Duration::from_millis(rng.u64(4000..12000))),
        }
    }
}

/// A handler run: which subscription, when it started, when it ended, whether it succeeded.
#[derive(Debug, Clone, Copy)]
struct Run {
    by: char,
    started: Instant,
    succeeded: bool,
}

type Runs = Arc<Mutex<BTreeMap<(u32, u64), Vec<Run>>>>;

fn handler(plan: &Plan, by: char, runs: &Runs) -> impl checkpoint_subscription::Handler + use<> {
    let (plan, runs) = (Arc::new(plan.clone()), Arc::clone(runs));
    move |entry: Arc<Entry>| {
        let (plan, runs) = (Arc::clone(&plan), Arc::clone(&runs));
        async move {
            let key = (partition_of(&entry), entry.position);
            let started = Instant::now();
            let earlier = runs
                .lock()
                .expect("not poisoned")
                .get(&key)
                .map_or(0, Vec::len);
            // Deterministic per entry and run: 0 to 300 ms, so that entries finish out of order
            // and are in flight when partitions change hands.
            let pause =
                (entry.position * 31 + earlier as u64 * 7 + u64::from(key.0) * 13) % 31 * 10;
            tokio::time::sleep(Duration::from_millis(pause)).await;
            let fails = plan.poison.contains(&key)
                || plan
                    .transient
                    .get(&key)
                    .is_some_and(|n| earlier < *n as usize);
            let run = Run {
                by,
                started,
                succeeded: !fails,
            };
            runs.lock()
                .expect("not poisoned")
                .entry(key)
                .or_default()
                .push(run);
            if fails {
                return Err("failing on purpose".into());
            }
            HandlerResult::Ok(())
        }
    }
}

fn partition_of(entry: &Entry) -> u32 {
    entry
        .key
        .as_deref()
        .and_then(|k| k.split('/').next()?.parse().ok())
        .expect("partition/key")
}

/// The log: a quarter of the entries at the start, the rest appended over 10 s, so that
/// partitions change hands while handlers run.
fn source(plan: &Plan) -> (Arc<InMemorySource>, tokio::task::JoinHandle<()>) {
    let source = Arc::new(InMemorySource::new(plan.partitions));
    let append = |source: &InMemorySource, position: u64| {
        for partition in 0..plan.partitions {
            let mut entry = Entry::new(position, b"x".to_vec());
            entry.key = Some(format!("{partition}/{}", position % 3));
            source.append_entry(partition, entry).expect("ahead");
        }
    };
    let at_start = plan.entries / 4;
    for position in 1..=at_start {
        append(&source, position);
    }
    let pause = Duration::from_secs(10) / u32::try_from(plan.entries).expect("small");
    let writer = {
        let (source, entries) = (Arc::clone(&source), plan.entries);
        let partitions = plan.partitions;
        tokio::spawn(async move {
            for position in at_start + 1..=entries {
                tokio::time::sleep(pause).await;
                for partition in 0..partitions {
                    let mut entry = Entry::new(position, b"x".to_vec());
                    entry.key = Some(format!("{partition}/{}", position % 3));
                    source.append_entry(partition, entry).expect("ahead");
                }
            }
        })
    };
    (source, writer)
}

fn start(
    plan: &Plan,
    by: char,
    store: &Arc<HangingStore>,
    memory: &Arc<InMemoryCheckpointStore>,
    source: &Arc<InMemorySource>,
    runs: &Runs,
) -> Subscription {
    let on_poison = if plan.park {
        OnPoison::park(Arc::clone(memory))
    } else {
        OnPoison::Stop
    };
    Subscription::builder(Arc::clone(store), source.clone(), "model", "s")
        .handler(handler(plan, by, runs))
        .max_in_flight(plan.max_in_flight)
        .ordered_by_key(plan.ordered_by_key)
        .retry(Retry::exponential(RETRY_FIRST, Duration::from_millis(200)).attempts(3))
        .on_poison(on_poison)
        .worker(move |w| {
            w.worker_id(by.to_string())
                .lease_duration(LEASE)
                .drain_timeout(Duration::from_secs(30))
        })
        .start()
        .expect("valid settings")
}

/// Runs one history; returns what the checks need.
async fn run(
    plan: &Plan,
) -> (
    Runs,
    Option<(Instant, BTreeSet<u32>)>,
    Arc<InMemoryCheckpointStore>,
) {
    let memory = Arc::new(InMemoryCheckpointStore::new().with_clock(|| Instant::now().into_std()));
    let (store_a, store_b) = (
        Arc::new(hanging_over(&memory)),
        Arc::new(hanging_over(&memory)),
    );
    let (source, writer) = source(plan);
    let runs: Runs = Arc::default();
    let began = Instant::now();
    let a = start(plan, 'a', &store_a, &memory, &source, &runs);
    tokio::time::sleep_until(began + plan.join_after).await;
    let b = start(plan, 'b', &store_b, &memory, &source, &runs);
    let mut lost = None;
    if let Some(after) = plan.lose_b_after.filter(|after| *after < plan.leave_after) {
        tokio::time::sleep_until(began + after).await;
        let held: BTreeSet<u32> = b.stats().worker.held.iter().map(|h| h.partition).collect();
        store_b.around().hang.store(true, Ordering::SeqCst);
        lost = Some((Instant::now(), held));
    }
    tokio::time::sleep_until(began + plan.leave_after).await;
    a.shutdown().await.expect("a hands over");
    let c = start(
        plan,
        'c',
        &Arc::new(hanging_over(&memory)),
        &memory,
        &source,
        &runs,
    );
    writer.await.expect("the writer");
    tokio::time::sleep(Duration::from_secs(60)).await; // long enough for everything, on the paused clock
    c.shutdown().await.expect("c hands over");
    if lost.is_none() {
        b.shutdown().await.expect("b hands over");
    }
    (runs, lost, memory)
}

async fn check(plan: &Plan) {
    let (runs, lost, store) = run(plan).await;
    let runs = runs.lock().expect("not poisoned").clone();
    let parked: BTreeSet<(u32, u64)> = store
        .parked("model")
        .await
        .expect("parked")
        .into_iter()
        .map(|p| (p.partition, p.position))
        .collect();
    let label = format!("history {} ({plan:?})", plan.seed);
    for partition in 0..plan.partitions {
        let end = store
            .load("model", "s", partition)
            .await
            .expect("load")
            .unwrap_or(1);
        let first_poison = plan
            .poison
            .iter()
            .find(|(p, _)| *p == partition)
            .map(|(_, x)| *x);
        let want = match (plan.park, first_poison) {
            (false, Some(poison)) => poison,
            _ => plan.entries + 1,
        };
        assert_eq!(
            end, want,
            "{label}: partition {partition}'s final checkpoint"
        );
        for position in 1..end {
            let handled = runs
                .get(&(partition, position))
                .is_some_and(|r| r.iter().any(|r| r.succeeded));
            assert!(
                handled || parked.contains(&(partition, position)),
                "{label}: ({partition}, {position}) skipped"
            );
        }
    }
    let poison_parked: BTreeSet<_> = if plan.park {
        plan.poison.clone()
    } else {
        BTreeSet::new()
    };
    assert_eq!(parked, poison_parked, "{label}: parked entries");
    for (key, entry_runs) in &runs {
        let successes = entry_runs.iter().filter(|r| r.succeeded).count();
        let lost_partition = lost.as_ref().is_some_and(|(_, held)| held.contains(&key.0));
        // Past a poison entry a partition stopped on, entries that were in flight beside it
        // ran; the next owner starts at the poison entry again and may run them again.
        let past_a_stop = !plan.park && plan.poison.iter().any(|(p, x)| *p == key.0 && *x < key.1);
        assert!(
            successes <= 1 || lost_partition || past_a_stop,
            "{label}: {key:?} redone without a loss: {entry_runs:?}"
        );
        check_backoff(&label, *key, entry_runs);
    }
    if let Some((hung_at, _)) = lost {
        let late: Vec<_> = runs
            .iter()
            .flat_map(|(k, r)| r.iter().map(move |r| (k, r)))
            .filter(|(_, r)| r.by == 'b' && r.started > hung_at + LEASE)
            .collect();
        assert!(
            late.is_empty(),
            "{label}: the lost subscription ran handlers after its deadline: {late:?}"
        );
    }
}

/// Runs of one entry by one subscription are at least half a retry step apart.
fn check_backoff(label: &str, key: (u32, u64), runs: &[Run]) {
    for by in ['a', 'b', 'c'] {
        let starts: Vec<Instant> = runs
            .iter()
            .filter(|r| r.by == by)
            .map(|r| r.started)
            .collect();
        for (n, pair) in starts.windows(2).enumerate() {
            let step =
                Retry::exponential(RETRY_FIRST, Duration::from_millis(200)).step(n as u32 + 1);
            assert!(
                pair[1] - pair[0] >= step / 2,
                "{label}: {key:?} retried {:?} after a failure (step {step:?})",
                pair[1] - pair[0]
            );
        }
    }
}

#[test]
fn generated_histories_keep_every_rule() {
    let histories: u64 = std::env::var("CHECKPOINT_SUBSCRIPTION_HISTORIES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(40);
    for seed in 0..histories {
        let plan = Plan::generate(seed);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .expect("a runtime");
        runtime.block_on(check(&plan));
    }
}
