//! Concurrent histories: generated with proptest, run against a store, and checked against a
//! linearizable max-register.
//!
//! A history is several owners calling the store at the same time over a small key space, some
//! of them zombies that deliver old, lower positions late. Every call records when it started
//! and when it returned on one logical clock; [`HistoryChecker`] then checks the whole history
//! against the model of a max-register, the sequential specification of a checkpoint.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use checkpoint_core::validation::MAX_POSITION;
use checkpoint_core::{Checkpoint, CheckpointStore};
use futures_util::future::join_all;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

use crate::failure::error_chain;
use crate::{CaseResult, Failure, fresh_group};

/// The subscriptions and partitions of the history's key space: four keys, so owners collide.
const SUBSCRIPTIONS: [&str; 2] = ["orders", "orders:1"];
const PARTITIONS: [u32; 2] = [0, 1];
const KEYS: usize = SUBSCRIPTIONS.len() * PARTITIONS.len();

/// A key of the history's key space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key(pub u8);

impl Key {
    fn subscription(self) -> &'static str {
        SUBSCRIPTIONS[usize::from(self.0) / PARTITIONS.len()]
    }
    fn partition(self) -> u32 {
        PARTITIONS[usize::from(self.0) % PARTITIONS.len()]
    }
    fn of(subscription: &str, partition: u32) -> Option<Key> {
        let s = SUBSCRIPTIONS
            .iter()
            .position(|name| *name == subscription)?;
        let p = PARTITIONS.iter().position(|part| *part == partition)?;
        u8::try_from(s * PARTITIONS.len() + p).ok().map(Key)
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.subscription(), self.partition())
    }
}

/// One call an owner makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// `save(key, position)`.
    Save(Key, u64),
    /// `save_all` of these entries.
    SaveAll(Vec<(Key, u64)>),
    /// `load(key)`.
    Load(Key),
    /// `list` of the history's group.
    List,
}

/// One owner's part of a plan.
#[derive(Debug, Clone)]
pub struct OwnerPlan {
    /// A zombie waits, then delivers old, low positions after the others have saved.
    pub zombie: bool,
    /// Calls in order, each preceded by a pause of 0 to 3 scheduler yields.
    pub calls: Vec<(u8, Call)>,
}

/// What proptest generates: the owners of one history.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The owners, running at the same time.
    pub owners: Vec<OwnerPlan>,
}

fn key() -> impl Strategy<Value = Key> {
    (0..KEYS as u8).prop_map(Key)
}

/// Positions of live owners: mostly small so owners collide, sometimes where doubles lose
/// precision or at the top of the range.
fn live_position() -> impl Strategy<Value = u64> {
    prop_oneof![
        8 => 10..200u64,
        1 => prop::sample::select(vec![(1u64 << 53) - 1, 1 << 53, (1 << 53) + 1, MAX_POSITION - 1, MAX_POSITION]),
    ]
}

/// Positions of zombies: behind what the live owners complete.
fn zombie_position() -> impl Strategy<Value = u64> {
    0..60u64
}

fn call(position: SBoxedStrategy<u64>) -> impl Strategy<Value = Call> {
    prop_oneof![
        4 => (key(), position.clone()).prop_map(|(k, p)| Call::Save(k, p)),
        2 => prop::collection::vec((key(), position), 0..6).prop_map(Call::SaveAll),
        2 => key().prop_map(Call::Load),
        1 => Just(Call::List),
    ]
}

fn owner() -> impl Strategy<Value = OwnerPlan> {
    any::<bool>().prop_flat_map(|zombie| {
        let position = if zombie {
            zombie_position().sboxed()
        } else {
            live_position().sboxed()
        };
        prop::collection::vec((0..4u8, call(position)), 1..8)
            .prop_map(move |calls| OwnerPlan { zombie, calls })
    })
}

/// Plans of 2 to 5 owners.
pub fn plans() -> SBoxedStrategy<Plan> {
    prop::collection::vec(owner(), 2..=5)
        .prop_map(|owners| Plan { owners })
        .sboxed()
}

/// How a call returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A save or save_all succeeded.
    Saved,
    /// A load returned this.
    Loaded(Option<u64>),
    /// A list returned these (keys outside the key space are kept as `Err` to be reported).
    Listed(Vec<Result<(Key, u64), Checkpoint>>),
    /// The call failed.
    Failed(String),
}

/// One call of a history with its real-time interval on the logical clock.
#[derive(Debug, Clone)]
pub struct Event {
    /// Which owner made the call.
    pub owner: usize,
    /// Whether that owner is a zombie.
    pub zombie: bool,
    /// The call.
    pub call: Call,
    /// The logical time it started.
    pub start: u64,
    /// The logical time it returned.
    pub end: u64,
    /// How it returned.
    pub outcome: Outcome,
}

/// A recorded history: its events and the final state read after every call returned.
#[derive(Debug, Clone, Default)]
pub struct History {
    /// Every call, in the order they started.
    pub events: Vec<Event>,
}

impl fmt::Display for History {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut events: Vec<&Event> = self.events.iter().collect();
        events.sort_by_key(|e| e.start);
        for e in events {
            let who = format!(
                "owner {}{}",
                e.owner,
                if e.zombie { " (zombie)" } else { "" }
            );
            let call = match &e.call {
                Call::Save(k, p) => format!("save({k}, {p})"),
                Call::SaveAll(entries) => {
                    let mut text = String::from("save_all[");
                    for (i, (k, p)) in entries.iter().enumerate() {
                        let _ = write!(text, "{}{k}={p}", if i == 0 { "" } else { ", " });
                    }
                    text.push(']');
                    text
                }
                Call::Load(k) => format!("load({k})"),
                Call::List => "list()".to_owned(),
            };
            let outcome = match &e.outcome {
                Outcome::Saved => "ok".to_owned(),
                Outcome::Loaded(v) => format!("{v:?}"),
                Outcome::Listed(entries) => {
                    let mut text = String::from("{");
                    for (i, entry) in entries.iter().enumerate() {
                        let sep = if i == 0 { "" } else { ", " };
                        let _ = match entry {
                            Ok((k, p)) => write!(text, "{sep}{k}={p}"),
                            Err(c) => write!(
                                text,
                                "{sep}UNKNOWN {:?}/{}={}",
                                c.subscription, c.partition, c.position
                            ),
                        };
                    }
                    text.push('}');
                    text
                }
                Outcome::Failed(error) => format!("ERROR {error}"),
            };
            writeln!(
                f,
                "  [{:>4} .. {:>4}] {who:<18} {call} -> {outcome}",
                e.start, e.end
            )?;
        }
        Ok(())
    }
}

/// A write of one key within a history: a `save`, or one entry of a `save_all`.
#[derive(Debug, Clone, Copy)]
struct Write {
    position: u64,
    start: u64,
    end: u64,
    acknowledged: bool,
}

/// A read of one key: a `load`, or what a `list` said of the key (absent is `None`).
#[derive(Debug, Clone, Copy)]
struct Read {
    value: Option<u64>,
    start: u64,
    end: u64,
    event: usize,
}

/// Checks a history against a linearizable max-register per key.
///
/// For every key:
/// - every value read was written by a save that started before the read returned (so no
///   value is ever higher than the highest attempted, and no key appears that was never saved);
/// - a read is at least every save acknowledged before the read started;
/// - a read is never lower than a read that returned before it started (reads never go
///   backwards in real time);
/// - the final value, read after every call returned, is the highest acknowledged save (or a
///   higher one whose call failed, when failures are allowed).
#[derive(Debug, Clone, Default)]
pub struct HistoryChecker {
    /// Whether a failed call is allowed (fault-injection runs) rather than itself a violation.
    pub allow_failures: bool,
}

impl HistoryChecker {
    /// Checks `history` and the `final_state` read after it; the error lists every violation.
    pub fn check(&self, history: &History, final_state: &BTreeMap<Key, u64>) -> Result<(), String> {
        let mut violations = Vec::new();
        let mut writes: BTreeMap<Key, Vec<Write>> = BTreeMap::new();
        let mut reads: BTreeMap<Key, Vec<Read>> = BTreeMap::new();
        for (index, e) in history.events.iter().enumerate() {
            if let Outcome::Failed(error) = &e.outcome
                && !self.allow_failures
            {
                violations.push(format!("call #{index} failed: {error}"));
            }
            let acknowledged = e.outcome == Outcome::Saved;
            let mut write = |key: Key, position: u64| {
                writes.entry(key).or_default().push(Write {
                    position,
                    start: e.start,
                    end: e.end,
                    acknowledged,
                });
            };
            match (&e.call, &e.outcome) {
                (Call::Save(k, p), _) => write(*k, *p),
                (Call::SaveAll(entries), _) => entries.iter().for_each(|(k, p)| write(*k, *p)),
                (Call::Load(k), Outcome::Loaded(value)) => {
                    reads.entry(*k).or_default().push(Read {
                        value: *value,
                        start: e.start,
                        end: e.end,
                        event: index,
                    });
                }
                (Call::List, Outcome::Listed(entries)) => {
                    let mut seen = BTreeMap::new();
                    for entry in entries {
                        match entry {
                            Ok((k, p)) => {
                                if seen.insert(*k, *p).is_some() {
                                    violations.push(format!("call #{index}: list returned {k} twice"));
                                }
                            }
                            Err(c) => violations.push(format!(
                                "call #{index}: list returned a key never saved in this group: {:?}/{}",
                                c.subscription, c.partition
                            )),
                        }
                    }
                    for k in (0..KEYS as u8).map(Key) {
                        reads.entry(k).or_default().push(Read {
                            value: seen.get(&k).copied(),
                            start: e.start,
                            end: e.end,
                            event: index,
                        });
                    }
                }
                _ => {}
            }
        }
        for k in (0..KEYS as u8).map(Key) {
            let writes = writes.get(&k).map(Vec::as_slice).unwrap_or_default();
            let reads = reads.get(&k).map(Vec::as_slice).unwrap_or_default();
            for read in reads {
                // Written by a save that started before the read returned.
                if let Some(value) = read.value
                    && !writes
                        .iter()
                        .any(|w| w.position == value && w.start < read.end)
                {
                    let highest = writes
                        .iter()
                        .filter(|w| w.start < read.end)
                        .map(|w| w.position)
                        .max();
                    violations.push(format!(
                        "call #{}: read {k} = {value}, which no save started before it returned had written (highest attempted by then: {highest:?})",
                        read.event
                    ));
                }
                // At least every save acknowledged before the read started.
                let floor = writes
                    .iter()
                    .filter(|w| w.acknowledged && w.end < read.start)
                    .map(|w| w.position)
                    .max();
                if floor.is_some() && read.value < floor {
                    violations.push(format!(
                        "call #{}: read {k} = {:?}, below {floor:?} which was acknowledged before the read started",
                        read.event, read.value
                    ));
                }
            }
            // Reads never go backwards in real time.
            for earlier in reads {
                for later in reads.iter().filter(|later| earlier.end < later.start) {
                    if later.value < earlier.value {
                        violations.push(format!(
                            "call #{}: read {k} = {:?} after call #{} had already read {:?}: went backwards",
                            later.event, later.value, earlier.event, earlier.value
                        ));
                    }
                }
            }
            // The final value.
            let highest_acknowledged = writes
                .iter()
                .filter(|w| w.acknowledged)
                .map(|w| w.position)
                .max();
            let final_value = final_state.get(&k).copied();
            let possible: BTreeSet<Option<u64>> = std::iter::once(highest_acknowledged)
                .chain(
                    writes
                        .iter()
                        .filter(|w| !w.acknowledged && Some(w.position) > highest_acknowledged)
                        .map(|w| Some(w.position)),
                )
                .collect();
            if !possible.contains(&final_value) {
                violations.push(format!(
                    "final {k} = {final_value:?}, but the highest acknowledged save was {highest_acknowledged:?}"
                ));
            }
        }
        for (k, value) in final_state {
            if usize::from(k.0) >= KEYS {
                violations.push(format!("final state has unknown key {k:?} = {value}"));
            }
        }
        if violations.is_empty() {
            Ok(())
        } else {
            Err(violations.join("\n"))
        }
    }
}

/// How many histories to run, and from which seed.
#[derive(Debug, Clone)]
pub struct HistoryConfig {
    /// Histories to run (`CHECKPOINT_HISTORIES`, default 64).
    pub cases: u32,
    /// The seed of the generator (`CHECKPOINT_SEED`, default random); printed on failure so a
    /// failing run can be replayed.
    pub seed: u64,
    /// How many re-runs to spend shrinking a failing history to a smaller one.
    pub shrink_runs: u32,
}

impl HistoryConfig {
    /// `cases` histories from `CHECKPOINT_SEED`'s seed (or a random one), without shrinking:
    /// what a fault-injection test runs, where each history costs a restart or a kill.
    pub fn for_faults(cases: u32) -> Self {
        Self {
            cases,
            shrink_runs: 0,
            ..Self::from_env()
        }
    }

    /// From `CHECKPOINT_HISTORIES` and `CHECKPOINT_SEED`.
    pub fn from_env() -> Self {
        let cases = std::env::var("CHECKPOINT_HISTORIES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(64);
        let seed = std::env::var("CHECKPOINT_SEED")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| {
                use std::hash::{BuildHasher, Hasher};
                let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
                hasher.write_u64(0);
                hasher.finish()
            });
        Self {
            cases,
            seed,
            shrink_runs: 64,
        }
    }
}

/// The generator's runner for a seed.
pub(crate) fn runner(cases: u32, seed: u64) -> TestRunner {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    TestRunner::new_with_rng(
        Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        },
        TestRng::from_seed(RngAlgorithm::ChaCha, &bytes),
    )
}

/// Runs `config.cases` generated histories against `store`, each in a fresh group, and checks
/// each with [`HistoryChecker`]. A failing history is shrunk for a bounded number of re-runs
/// and printed.
pub async fn run_histories(store: &dyn CheckpointStore, config: &HistoryConfig) -> CaseResult {
    let mut runner = runner(config.cases, config.seed);
    let strategy = plans();
    let checker = HistoryChecker::default();
    for case in 0..config.cases {
        let mut tree = strategy
            .new_tree(&mut runner)
            .map_err(|reason| Failure::new(format!("generating a history: {reason}")))?;
        let Err((mut history, mut violation)) = run_plan(store, &tree.current(), &checker).await?
        else {
            continue;
        };
        // Shrink: simplify while the simpler plan still fails. Histories are concurrent, so a
        // simpler plan may pass by chance; the budget bounds the re-runs.
        let mut runs = 0;
        while runs < config.shrink_runs && tree.simplify() {
            runs += 1;
            match run_plan(store, &tree.current(), &checker).await? {
                Err((smaller, why)) => (history, violation) = (smaller, why),
                Ok(()) => {
                    if !tree.complicate() {
                        break;
                    }
                }
            }
        }
        return Err(Failure::new(format!(
            "history {case} of {} (CHECKPOINT_SEED={}) violates the max-register model:\n{violation}\nhistory (logical time, owner, call -> outcome):\n{history}",
            config.cases, config.seed
        )));
    }
    Ok(())
}

/// Runs one plan in a fresh group; `Err` carries the history and its violations.
pub(crate) async fn run_plan(
    store: &dyn CheckpointStore,
    plan: &Plan,
    checker: &HistoryChecker,
) -> Result<Result<(), (History, String)>, Failure> {
    let group = fresh_group("history");
    let history = record(store, &group, plan).await;
    let final_state = read_final_state(store, &group).await?;
    Ok(checker
        .check(&history, &final_state)
        .map_err(|violation| (history, violation)))
}

/// Runs `config.cases` generated histories while a fault is injected during each one, and
/// checks them with failures allowed: a call may fail (with an error, never a panic), but
/// nothing acknowledged may be lost and nothing may move backwards.
///
/// `fault(case)` runs concurrently with history `case`: for example it waits a moment, then
/// kills the store's server-side connections. After each history the final state is read,
/// retried for up to `recovery` while the store reconnects; a store that does not recover
/// within it fails the run. Returns how many calls failed over all histories, so a test can
/// show the fault really hit.
pub async fn run_histories_with_faults<F, Fut>(
    store: &dyn CheckpointStore,
    config: &HistoryConfig,
    recovery: Duration,
    mut fault: F,
) -> Result<u64, Failure>
where
    F: FnMut(u32) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut runner = runner(config.cases, config.seed);
    let strategy = plans();
    let checker = HistoryChecker {
        allow_failures: true,
    };
    let mut failed_calls = 0;
    for case in 0..config.cases {
        let plan = strategy
            .new_tree(&mut runner)
            .map_err(|reason| Failure::new(format!("generating a history: {reason}")))?
            .current();
        let group = fresh_group("fault-history");
        let (history, ()) =
            futures_util::future::join(record(store, &group, &plan), fault(case)).await;
        failed_calls += history
            .events
            .iter()
            .filter(|e| matches!(e.outcome, Outcome::Failed(_)))
            .count() as u64;
        let started = std::time::Instant::now();
        let final_state = loop {
            match read_final_state(store, &group).await {
                Ok(state) => break state,
                Err(_) if started.elapsed() < recovery => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(failure) => {
                    return Err(Failure::new(format!(
                        "the store did not recover within {recovery:?} after the fault of history {case}: {failure}"
                    )));
                }
            }
        };
        if let Err(violation) = checker.check(&history, &final_state) {
            return Err(Failure::new(format!(
                "history {case} of {} under a fault (CHECKPOINT_SEED={}) violates the max-register model:\n{violation}\nhistory (logical time, owner, call -> outcome):\n{history}",
                config.cases, config.seed
            )));
        }
    }
    Ok(failed_calls)
}

async fn record(store: &dyn CheckpointStore, group: &str, plan: &Plan) -> History {
    let clock = AtomicU64::new(0);
    let owners = plan.owners.iter().enumerate().map(|(owner, owner_plan)| {
        let clock = &clock;
        async move {
            let mut events = Vec::new();
            if owner_plan.zombie {
                // The zombie wakes up late, after the live owners have started saving.
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            for (pause, call) in &owner_plan.calls {
                for _ in 0..*pause {
                    tokio::task::yield_now().await;
                }
                let start = clock.fetch_add(1, Ordering::SeqCst);
                let outcome = perform(store, group, call).await;
                let end = clock.fetch_add(1, Ordering::SeqCst);
                events.push(Event {
                    owner,
                    zombie: owner_plan.zombie,
                    call: call.clone(),
                    start,
                    end,
                    outcome,
                });
            }
            events
        }
    });
    let mut events: Vec<Event> = join_all(owners).await.into_iter().flatten().collect();
    events.sort_by_key(|e| e.start);
    History { events }
}

async fn perform(store: &dyn CheckpointStore, group: &str, call: &Call) -> Outcome {
    let result = match call {
        Call::Save(k, p) => store
            .save(group, k.subscription(), k.partition(), *p)
            .await
            .map(|()| Outcome::Saved),
        Call::SaveAll(entries) => {
            let batch: Vec<Checkpoint> = entries
                .iter()
                .map(|(k, p)| Checkpoint::new(k.subscription(), k.partition(), *p))
                .collect();
            store.save_all(group, &batch).await.map(|()| Outcome::Saved)
        }
        Call::Load(k) => store
            .load(group, k.subscription(), k.partition())
            .await
            .map(Outcome::Loaded),
        Call::List => store.list(group).await.map(|checkpoints| {
            Outcome::Listed(
                checkpoints
                    .into_iter()
                    .map(|c| {
                        Key::of(&c.subscription, c.partition)
                            .map(|k| (k, c.position))
                            .ok_or(c)
                    })
                    .collect(),
            )
        }),
    };
    result.unwrap_or_else(|error| Outcome::Failed(error_chain(&error)))
}

async fn read_final_state(
    store: &dyn CheckpointStore,
    group: &str,
) -> Result<BTreeMap<Key, u64>, Failure> {
    let mut loaded = BTreeMap::new();
    for k in (0..KEYS as u8).map(Key) {
        if let Some(position) = store.load(group, k.subscription(), k.partition()).await? {
            loaded.insert(k, position);
        }
    }
    let mut listed = BTreeMap::new();
    for c in store.list(group).await? {
        let key = Key::of(&c.subscription, c.partition)
            .ok_or_else(|| Failure::new(format!("final list returned a key never saved: {c:?}")))?;
        listed.insert(key, c.position);
    }
    if listed != loaded {
        return Err(Failure::new(format!(
            "after the history, list and load disagree:\n  list: {listed:?}\n  load: {loaded:?}"
        )));
    }
    Ok(loaded)
}
