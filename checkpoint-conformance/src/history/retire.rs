//! Histories with a retire: owners and zombies keep saving (`save` and `save_all`, on
//! partitions that have a checkpoint and on partitions that have none yet) while one of the
//! two subscriptions of the key space is retired at a random moment.
//!
//! Checked for each history:
//! - the retire and every save under the retired name return `Ok` (a zombie's save is
//!   ignored, never refused);
//! - no `load` or `list` that started after the retire returned shows the retired
//!   subscription, nor does the final state, and `retired` names it;
//! - the other subscription, running all the while, is a linearizable max-register
//!   ([`HistoryChecker`]), as if nothing had been retired.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use checkpoint_core::{CheckpointAdmin, Error};
use proptest::prelude::*;
use proptest::strategy::ValueTree;

use super::checker::{Event, History, HistoryChecker, Outcome};
use super::generator::{Call, Key, PARTITIONS, Plan, SUBSCRIPTIONS, plans, seeded_runner};
use super::runner::{HistoryConfig, perform, read_final_state, record_on};
use crate::{CaseResult, Failure, fresh_group};

/// A history with a retire: the owners' plan, which subscription is retired, and when.
#[derive(Debug, Clone)]
pub struct RetirePlan {
    /// The owners, as in the histories without a retire.
    pub plan: Plan,
    /// Which of the two subscriptions of the key space is retired (0 or 1).
    pub retired: usize,
    /// Milliseconds the retire waits before it starts (zombies wake after 2).
    pub wait_ms: u8,
    /// Scheduler yields after that wait.
    pub yields: u8,
}

impl RetirePlan {
    fn retired_name(&self) -> &'static str {
        SUBSCRIPTIONS[self.retired % SUBSCRIPTIONS.len()]
    }

    fn is_retired(&self, key: Key) -> bool {
        key.subscription() == self.retired_name()
    }

    fn live_name(&self) -> &'static str {
        SUBSCRIPTIONS[(self.retired + 1) % SUBSCRIPTIONS.len()]
    }
}

/// Plans of 2 to 5 owners, one subscription retired after 0 to 3 ms and 0 to 15 yields.
pub fn retire_plans() -> impl Strategy<Value = RetirePlan> {
    (plans(), 0..SUBSCRIPTIONS.len(), 0..=3u8, 0..16u8).prop_map(
        |(plan, retired, wait_ms, yields)| RetirePlan {
            plan,
            retired,
            wait_ms,
            yields,
        },
    )
}

/// Runs `config.cases` histories with a retire against `store`, each in a fresh group, and
/// checks each (see the module doc). The failure names the group, every violation and the
/// whole history.
pub async fn run_retire_histories<S: CheckpointAdmin + ?Sized>(
    store: &S,
    config: &HistoryConfig,
) -> CaseResult {
    let mut runner = seeded_runner(config.cases, config.seed);
    let strategy = retire_plans();
    for case in 0..config.cases {
        let plan = strategy
            .new_tree(&mut runner)
            .map_err(|reason| Failure::new(format!("generating a history: {reason}")))?
            .current();
        run_retire_plan(store, &plan).await.map_err(|failure| {
            Failure::new(format!(
                "history {case} of {} with a retire (CHECKPOINT_SEED={}): {failure}",
                config.cases, config.seed
            ))
        })?;
    }
    Ok(())
}

/// When the retire ran on the logical clock.
struct Retire {
    start: u64,
    end: u64,
}

/// Runs one plan in a fresh group and checks it.
pub async fn run_retire_plan<S: CheckpointAdmin + ?Sized>(
    store: &S,
    plan: &RetirePlan,
) -> CaseResult {
    let group = fresh_group("retire-history");
    let clock = AtomicU64::new(0);
    let (mut history, (retired, retire, late)) = futures_util::future::join(
        record_on(store, &group, &plan.plan, &clock),
        retire_then_save_as_zombie(store, &group, plan, &clock),
    )
    .await;
    history.events.extend(late);
    history.events.sort_by_key(|e| e.start);
    let final_state = read_final_state(store, &group).await?;

    let name = plan.retired_name();
    let mut violations = Vec::new();
    if let Err(error) = retired {
        violations.push(format!(
            "retire({name:?}) failed: {}",
            crate::error_chain(&error)
        ));
    }
    violations.extend(after_retire(&history, plan, &retire));
    violations.extend(retired_in_final_state(plan, &final_state));
    let listed_retired = store.retired(&group).await?;
    if listed_retired != [name] {
        violations.push(format!(
            "retired() returned {listed_retired:?}, not [{name:?}]"
        ));
    }
    violations.extend(live_not_max_register(&history, plan, final_state));
    if violations.is_empty() {
        return Ok(());
    }
    Err(retire_failure(&group, plan, &retire, &violations, &history))
}

/// The retire's side of a history, run alongside the owners: waits as the plan says, retires
/// the subscription, then plays a zombie of it that saves right after. Returns the retire's
/// result, when it ran, and the zombie's events.
async fn retire_then_save_as_zombie<S: CheckpointAdmin + ?Sized>(
    store: &S,
    group: &str,
    plan: &RetirePlan,
    clock: &AtomicU64,
) -> (Result<(), Error>, Retire, Vec<Event>) {
    if plan.wait_ms > 0 {
        tokio::time::sleep(Duration::from_millis(u64::from(plan.wait_ms))).await;
    }
    for _ in 0..plan.yields {
        tokio::task::yield_now().await;
    }
    let start = clock.fetch_add(1, Ordering::SeqCst);
    let result = store.retire(group, plan.retired_name()).await;
    let end = clock.fetch_add(1, Ordering::SeqCst);
    let late = save_as_zombie(store, group, plan, clock).await;
    (result, Retire { start, end }, late)
}

/// A zombie of the retired subscription saves right after the retire, to both partitions,
/// alone and in a batch with the live subscription; its saves must be ignored, never refused.
async fn save_as_zombie<S: CheckpointAdmin + ?Sized>(
    store: &S,
    group: &str,
    plan: &RetirePlan,
    clock: &AtomicU64,
) -> Vec<Event> {
    let zombie = plan.plan.owners.len();
    let retired_key = |partition| Key::of(plan.retired_name(), partition);
    let live_key = Key::of(plan.live_name(), PARTITIONS[0]);
    let mut late = Vec::new();
    if let (Some(first), Some(second), Some(live)) = (
        retired_key(PARTITIONS[0]),
        retired_key(PARTITIONS[1]),
        live_key,
    ) {
        for call in [
            Call::Save(first, 1_000),
            Call::SaveAll(vec![(second, 1_001), (live, 3), (first, 1_002)]),
        ] {
            let start = clock.fetch_add(1, Ordering::SeqCst);
            let outcome = perform(store, group, &call).await;
            let end = clock.fetch_add(1, Ordering::SeqCst);
            late.push(Event {
                owner: zombie,
                zombie: true,
                call,
                start,
                end,
                outcome,
            });
        }
    }
    late
}

/// Every checkpoint of the retired subscription that load and list still show after the
/// history.
fn retired_in_final_state(plan: &RetirePlan, final_state: &BTreeMap<Key, u64>) -> Vec<String> {
    let mut violations = Vec::new();
    for (key, position) in final_state {
        if plan.is_retired(*key) {
            violations.push(format!(
                "after the history, load and list show retired {key} at {position}"
            ));
        }
    }
    violations
}

/// The live subscription must be a linearizable max-register as if nothing had been retired:
/// its part of the history is checked against its part of the final state.
fn live_not_max_register(
    history: &History,
    plan: &RetirePlan,
    final_state: BTreeMap<Key, u64>,
) -> Option<String> {
    let live_state: BTreeMap<Key, u64> = final_state
        .into_iter()
        .filter(|(key, _)| !plan.is_retired(*key))
        .collect();
    HistoryChecker::default()
        .check(&live_only(history, plan), &live_state)
        .err()
        .map(|violation| {
            format!(
                "the live subscription {:?} is not a max-register:\n{violation}",
                plan.live_name()
            )
        })
}

/// The failure of a history with a retire: the group, when the retire ran, every violation
/// and the whole history, so that it can be replayed by eye.
fn retire_failure(
    group: &str,
    plan: &RetirePlan,
    retire: &Retire,
    violations: &[String],
    history: &History,
) -> Failure {
    let mut text = format!(
        "in group {group:?}, with {:?} retired during [{} .. {}]:\n",
        plan.retired_name(),
        retire.start,
        retire.end
    );
    for violation in violations {
        let _ = writeln!(text, "  {violation}");
    }
    let _ = write!(
        text,
        "history (logical time, owner, call -> outcome):\n{history}"
    );
    Failure::new(text)
}

/// Every read that started after the retire returned and still shows the retired
/// subscription, and every call that failed.
fn after_retire(history: &History, plan: &RetirePlan, retire: &Retire) -> Vec<String> {
    let mut violations = Vec::new();
    for (index, e) in history.events.iter().enumerate() {
        if let Outcome::Failed(error) = &e.outcome {
            violations.push(format!("call #{index} failed: {error}"));
        }
        if e.start <= retire.end {
            continue;
        }
        let shown: Vec<String> = match (&e.call, &e.outcome) {
            (Call::Load(key), Outcome::Loaded(Some(position))) if plan.is_retired(*key) => {
                vec![format!("{key}={position}")]
            }
            (Call::List, Outcome::Listed(entries)) => entries
                .iter()
                .filter_map(|entry| match entry {
                    Ok((key, position)) if plan.is_retired(*key) => {
                        Some(format!("{key}={position}"))
                    }
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        if !shown.is_empty() {
            violations.push(format!(
                "call #{index} [{} .. {}] started after the retire returned and shows {}",
                e.start,
                e.end,
                shown.join(", ")
            ));
        }
    }
    violations
}

/// The history of the live subscription alone: the retired one's saves, loads and listed
/// entries left out.
fn live_only(history: &History, plan: &RetirePlan) -> History {
    let live = |key: &Key| !plan.is_retired(*key);
    let events = history
        .events
        .iter()
        .filter_map(|e| {
            let call = match &e.call {
                Call::Save(key, _) | Call::Load(key) if !live(key) => return None,
                Call::SaveAll(entries) => {
                    Call::SaveAll(entries.iter().filter(|(k, _)| live(k)).cloned().collect())
                }
                call => call.clone(),
            };
            let outcome = match &e.outcome {
                Outcome::Listed(entries) => Outcome::Listed(
                    entries
                        .iter()
                        .filter(|entry| entry.as_ref().map_or(true, |(k, _)| live(k)))
                        .cloned()
                        .collect(),
                ),
                outcome => outcome.clone(),
            };
            Some(Event {
                call,
                outcome,
                ..e.clone()
            })
        })
        .collect();
    History { events }
}
