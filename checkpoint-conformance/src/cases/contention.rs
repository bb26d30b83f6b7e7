//! Exclusive contenders: several processes under one name claim at once and race to advance;
//! one winner per step, one chain of positions.

use std::sync::atomic::{AtomicU64, Ordering};

use checkpoint_core::{Error, ExclusiveCheckpointStore};
use futures_util::future::join_all;
use proptest::prelude::*;
use proptest::strategy::ValueTree;

use super::QUERY_A;
use crate::{CaseResult, Failure, ensure, ensure_eq, fresh_group};

/// The plan of one contention run: the initial position each process proposes, and the step
/// sizes each tries to advance by.
#[derive(Debug, Clone)]
pub struct ContentionPlan {
    initials: Vec<u64>,
    steps: Vec<Vec<u64>>,
}

fn contention_plans() -> impl Strategy<Value = ContentionPlan> {
    (2..=4usize).prop_flat_map(|processes| {
        (
            prop::collection::vec(0..1_000u64, processes),
            prop::collection::vec(prop::collection::vec(1..50u64, 1..8), processes),
        )
            .prop_map(|(initials, steps)| ContentionPlan { initials, steps })
    })
}

/// An advance that won, on the logical clock.
#[derive(Debug, Clone, Copy)]
struct Won {
    process: usize,
    from: u64,
    to: u64,
    start: u64,
    end: u64,
}

/// Several processes under one name claim at once and then race to advance: every first claim
/// returns the same position, exactly one process wins each step, a loser learns where the
/// position is, and the winning advances form one chain that never skips or goes back.
pub async fn exclusive_contenders_one_winner_per_step(
    store: &dyn ExclusiveCheckpointStore,
) -> CaseResult {
    let config = crate::history::HistoryConfig::from_env();
    let runs = (config.cases / 4).max(16);
    let mut runner = crate::history::seeded_runner(runs, config.seed);
    let strategy = contention_plans();
    for run in 0..runs {
        let plan = strategy
            .new_tree(&mut runner)
            .map_err(|reason| Failure::new(format!("generating a contention plan: {reason}")))?
            .current();
        contend(store, &plan).await.map_err(|failure| {
            Failure::new(format!(
                "contention run {run} (CHECKPOINT_SEED={}), plan {plan:?}:\n{failure}",
                config.seed
            ))
        })?;
    }
    Ok(())
}

async fn contend(store: &dyn ExclusiveCheckpointStore, plan: &ContentionPlan) -> CaseResult {
    let group = fresh_group("contend");
    let group = group.as_str();
    let initial = claim_all_at_once(store, group, plan).await?;
    let (mut won, refused) = race_to_advance(store, group, plan, initial).await?;
    won.sort_by_key(|w| w.from);
    let chain = ensure_one_chain(initial, &won)?;
    ensure_refusals_name_chain_positions(&refused, &chain)?;
    ensure_eq!(
        store.load(group, "projection", 0).await?,
        chain.last().copied(),
        "final position after the contention"
    );
    Ok(())
}

/// A refused advance: the process, the position it expected and the current one it was told.
type Refusal = (usize, u64, Option<u64>);

/// Phase 1 of a contention run, apart so that [`contend`] reads as its phases: every process
/// claims at once, each proposing its own initial position, and all must get back the one that
/// was created, which is returned.
async fn claim_all_at_once(
    store: &dyn ExclusiveCheckpointStore,
    group: &str,
    plan: &ContentionPlan,
) -> Result<u64, Failure> {
    let claims = join_all(
        plan.initials
            .iter()
            .map(|initial| store.claim(group, "projection", 0, QUERY_A, *initial)),
    )
    .await;
    let claimed: Vec<u64> = claims.into_iter().collect::<Result<_, _>>()?;
    let initial = claimed[0];
    ensure!(
        claimed.iter().all(|p| *p == initial) && plan.initials.contains(&initial),
        "concurrent first claims returned {claimed:?} for proposed initial positions {:?}: all must return the one that was created",
        plan.initials
    );
    Ok(initial)
}

/// Phase 2 of a contention run: every process of the plan advances concurrently from where it
/// believes the position is, on one shared logical clock; returns all wins and all refusals.
async fn race_to_advance(
    store: &dyn ExclusiveCheckpointStore,
    group: &str,
    plan: &ContentionPlan,
    initial: u64,
) -> Result<(Vec<Won>, Vec<Refusal>), Failure> {
    let clock = AtomicU64::new(0);
    let processes = plan.steps.iter().enumerate().map(|(process, steps)| {
        advance_as_one_process(store, group, &clock, process, steps, initial)
    });
    let mut won = Vec::new();
    let mut refused = Vec::new();
    for result in join_all(processes).await {
        let (w, r) = result?;
        won.extend(w);
        refused.extend(r);
    }
    Ok((won, refused))
}

/// One contending process: tries each of its steps in turn, yielding a varying number of times
/// first so that the processes interleave, stamps each advance on the shared `clock`, and
/// re-claims to learn the position when it loses.
async fn advance_as_one_process(
    store: &dyn ExclusiveCheckpointStore,
    group: &str,
    clock: &AtomicU64,
    process: usize,
    steps: &[u64],
    initial: u64,
) -> Result<(Vec<Won>, Vec<Refusal>), Failure> {
    let mut won = Vec::new();
    let mut refused = Vec::new();
    let mut position = initial;
    for (i, step) in steps.iter().enumerate() {
        for _ in 0..(i + process) % 3 {
            tokio::task::yield_now().await;
        }
        let start = clock.fetch_add(1, Ordering::SeqCst);
        let result = store
            .advance(group, "projection", 0, position, position + step)
            .await;
        let end = clock.fetch_add(1, Ordering::SeqCst);
        match result {
            Ok(()) => {
                won.push(Won {
                    process,
                    from: position,
                    to: position + step,
                    start,
                    end,
                });
                position += step;
            }
            Err(Error::Moved { expected, current }) => {
                refused.push((process, expected, current));
                position = store.claim(group, "projection", 0, QUERY_A, 0).await?;
            }
            Err(error) => return Err(Failure::from(error)),
        }
    }
    Ok((won, refused))
}

/// Checks that the wins, sorted by where they start, form one chain from the initial position:
/// exactly one winner per step, no skip, no going back, and no win returning before the win it
/// depends on started. Returns the chain of positions, the initial one first.
fn ensure_one_chain(initial: u64, won: &[Won]) -> Result<Vec<u64>, Failure> {
    let mut expected_from = initial;
    let mut chain = vec![initial];
    for (i, w) in won.iter().enumerate() {
        ensure!(
            w.from == expected_from,
            "winning advances do not form one chain: {}. step is {} -> {} by process {}, but the position was {expected_from}; all wins: {won:?}",
            i + 1,
            w.from,
            w.to,
            w.process
        );
        if i > 0 {
            let previous = won[i - 1];
            ensure!(
                previous.start < w.end,
                "advance {} -> {} returned before advance {} -> {} (which it depends on) started",
                w.from,
                w.to,
                previous.from,
                previous.to
            );
        }
        expected_from = w.to;
        chain.push(w.to);
    }
    Ok(chain)
}

/// Checks that every refusal named a position the checkpoint really had, other than the one
/// expected.
fn ensure_refusals_name_chain_positions(refused: &[Refusal], chain: &[u64]) -> CaseResult {
    for (process, expected, current) in refused {
        ensure!(
            current.is_some_and(|c| c != *expected && chain.contains(&c)),
            "process {process} was refused at {expected} with current position {current:?}, which is not a position of the chain {chain:?}"
        );
    }
    Ok(())
}
