//! The runner: plans run against a store, every call recorded on one logical clock, each
//! history checked, a failing one shrunk and printed.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use checkpoint_core::{Checkpoint, CheckpointStore};
use futures_util::future::join_all;
use proptest::strategy::{Strategy, ValueTree};

use super::checker::{Event, History, HistoryChecker, Outcome};
use super::generator::{Call, KEYS, Key, Plan, plans, seeded_runner};
use crate::failure::error_chain;
use crate::{CaseResult, Failure, fresh_group};

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

    /// The histories with a retire ([`run_retire_histories`](super::run_retire_histories)):
    /// `CHECKPOINT_RETIRE_HISTORIES` of them (default 32), from `CHECKPOINT_SEED`'s seed.
    pub fn retire_from_env() -> Self {
        let cases = std::env::var("CHECKPOINT_RETIRE_HISTORIES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(32);
        Self {
            cases,
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
            .unwrap_or_else(|| fastrand::u64(..));
        Self {
            cases,
            seed,
            shrink_runs: 64,
        }
    }
}

/// Runs `config.cases` generated histories against `store`, each in a fresh group, and checks
/// each with [`HistoryChecker`]. A failing history is shrunk for a bounded number of re-runs
/// and printed.
pub async fn run_histories(store: &dyn CheckpointStore, config: &HistoryConfig) -> CaseResult {
    let mut runner = seeded_runner(config.cases, config.seed);
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
        .map_err(|violation| (history, format!("in group {group:?}:\n{violation}"))))
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
    let mut runner = seeded_runner(config.cases, config.seed);
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
                "history {case} of {} under a fault (CHECKPOINT_SEED={}) violates the max-register model in group {group:?}:\n{violation}\nhistory (logical time, owner, call -> outcome):\n{history}",
                config.cases, config.seed
            )));
        }
    }
    Ok(failed_calls)
}

async fn record(store: &dyn CheckpointStore, group: &str, plan: &Plan) -> History {
    record_on(store, group, plan, &AtomicU64::new(0)).await
}

/// Runs `plan` in `group`, every call timed on `clock` (which other calls running beside the
/// plan share).
pub(crate) async fn record_on<S: CheckpointStore + ?Sized>(
    store: &S,
    group: &str,
    plan: &Plan,
    clock: &AtomicU64,
) -> History {
    let owners = plan.owners.iter().enumerate().map(|(owner, owner_plan)| {
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

pub(crate) async fn perform<S: CheckpointStore + ?Sized>(
    store: &S,
    group: &str,
    call: &Call,
) -> Outcome {
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

pub(crate) async fn read_final_state<S: CheckpointStore + ?Sized>(
    store: &S,
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
