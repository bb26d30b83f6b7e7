//! One public case per clause of the exclusive contract: claim with a query fingerprint and a
//! compare-and-set advance.

use std::sync::atomic::{AtomicU64, Ordering};

use checkpoint_core::validation::{MAX_NAME_BYTES, MAX_POSITION};
use checkpoint_core::{
    Argument, Checkpoint, Error, ExclusiveCheckpointStore, Fingerprint, InvalidReason,
};
use futures_util::future::join_all;
use proptest::prelude::*;
use proptest::strategy::ValueTree;

use crate::{CaseResult, Failure, ensure, ensure_eq, fresh_group};

/// Two distinct fingerprints, as two different queries would have.
pub const QUERY_A: Fingerprint = Fingerprint::from_bytes([0xa1; 32]);
/// The fingerprint of a changed query.
pub const QUERY_B: Fingerprint = Fingerprint::from_bytes([0xb2; 32]);

pub(super) fn expect_moved(
    result: Result<(), Error>,
    expected: u64,
    current: Option<u64>,
    what: &str,
) -> CaseResult {
    match result {
        Err(Error::Moved {
            expected: e,
            current: c,
        }) if e == expected && c == current => Ok(()),
        other => Err(Failure::new(format!(
            "{what}: expected Moved {{ expected: {expected}, current: {current:?} }}, got {other:?}"
        ))),
    }
}

/// The first claim creates the checkpoint at the initial position.
pub async fn claim_creates_at_initial_position(store: &dyn ExclusiveCheckpointStore) -> CaseResult {
    let group = fresh_group("claim-create");
    ensure_eq!(
        store.claim(&group, "projection", 0, QUERY_A, 25).await?,
        25,
        "first claim"
    );
    ensure_eq!(
        store.load(&group, "projection", 0).await?,
        Some(25),
        "load after the first claim"
    );
    ensure_eq!(
        store.claim(&group, "zero", 4, QUERY_A, 0).await?,
        0,
        "first claim at 0"
    );
    Ok(())
}

/// A later claim returns the stored position and ignores its own initial position.
pub async fn claim_keeps_stored_position(store: &dyn ExclusiveCheckpointStore) -> CaseResult {
    let group = fresh_group("claim-keep");
    store.claim(&group, "projection", 0, QUERY_A, 25).await?;
    ensure_eq!(
        store.claim(&group, "projection", 0, QUERY_A, 0).await?,
        25,
        "claim with a lower initial"
    );
    ensure_eq!(
        store.claim(&group, "projection", 0, QUERY_A, 900).await?,
        25,
        "claim with a higher initial"
    );
    store.advance(&group, "projection", 0, 25, 30).await?;
    ensure_eq!(
        store.claim(&group, "projection", 0, QUERY_A, 0).await?,
        30,
        "claim after an advance"
    );
    Ok(())
}

/// A claim under a different query fingerprint is refused with both fingerprints, and changes
/// nothing.
pub async fn claim_refuses_changed_query(store: &dyn ExclusiveCheckpointStore) -> CaseResult {
    let group = fresh_group("claim-changed");
    store.claim(&group, "projection", 0, QUERY_A, 5).await?;
    match store.claim(&group, "projection", 0, QUERY_B, 7).await {
        Err(Error::QueryChanged { stored, requested }) => {
            ensure_eq!(stored, QUERY_A, "stored fingerprint in the error");
            ensure_eq!(requested, QUERY_B, "requested fingerprint in the error");
        }
        other => {
            return Err(Failure::new(format!(
                "claim under a changed query: expected QueryChanged, got {other:?}"
            )));
        }
    }
    ensure_eq!(
        store.claim(&group, "projection", 0, QUERY_A, 0).await?,
        5,
        "claim under the original query afterwards"
    );
    // The fingerprint belongs to one key: another partition may use another query.
    ensure_eq!(
        store.claim(&group, "projection", 1, QUERY_B, 3).await?,
        3,
        "claim of another partition under another query"
    );
    Ok(())
}

/// A claim of a checkpoint that was only ever saved monotonically adopts it: it returns the
/// stored position and stores the fingerprint.
pub async fn claim_adopts_monotonic_checkpoint(store: &dyn ExclusiveCheckpointStore) -> CaseResult {
    let group = fresh_group("claim-adopt");
    store.save(&group, "projection", 0, 40).await?;
    ensure_eq!(
        store.claim(&group, "projection", 0, QUERY_A, 0).await?,
        40,
        "claim of a saved checkpoint"
    );
    ensure!(
        matches!(
            store.claim(&group, "projection", 0, QUERY_B, 0).await,
            Err(Error::QueryChanged { .. })
        ),
        "after adoption, a claim under another query must be refused"
    );
    Ok(())
}

/// An advance from the stored position moves it.
pub async fn advance_from_current_position(store: &dyn ExclusiveCheckpointStore) -> CaseResult {
    let group = fresh_group("advance");
    store.claim(&group, "projection", 0, QUERY_A, 10).await?;
    store.advance(&group, "projection", 0, 10, 20).await?;
    ensure_eq!(
        store.load(&group, "projection", 0).await?,
        Some(20),
        "load after advance 10 -> 20"
    );
    store.advance(&group, "projection", 0, 20, 21).await?;
    ensure_eq!(
        store.load(&group, "projection", 0).await?,
        Some(21),
        "load after advance 20 -> 21"
    );
    Ok(())
}

/// An advance from a position that is no longer stored is refused with where it is now, and
/// changes nothing; so is an advance of a checkpoint that does not exist.
pub async fn advance_from_stale_position_is_refused(
    store: &dyn ExclusiveCheckpointStore,
) -> CaseResult {
    let group = fresh_group("advance-stale");
    store.claim(&group, "projection", 0, QUERY_A, 10).await?;
    store.advance(&group, "projection", 0, 10, 20).await?;
    expect_moved(
        store.advance(&group, "projection", 0, 10, 30).await,
        10,
        Some(20),
        "advance from a stale 10",
    )?;
    expect_moved(
        store.advance(&group, "projection", 0, 15, 30).await,
        15,
        Some(20),
        "advance from 15, never stored",
    )?;
    expect_moved(
        store.advance(&group, "projection", 0, 25, 30).await,
        25,
        Some(20),
        "advance from ahead of the stored",
    )?;
    ensure_eq!(
        store.load(&group, "projection", 0).await?,
        Some(20),
        "load after refused advances"
    );
    expect_moved(
        store.advance(&group, "absent", 0, 0, 1).await,
        0,
        None,
        "advance of a checkpoint never claimed",
    )?;
    ensure_eq!(
        store.load(&group, "absent", 0).await?,
        None,
        "a refused advance must not create the checkpoint"
    );
    Ok(())
}

/// Exclusive checkpoints are in the same storage as monotonic ones: `list` and `load` show
/// them, and a monotonic save never moves one back.
pub async fn exclusive_checkpoints_are_listed(store: &dyn ExclusiveCheckpointStore) -> CaseResult {
    let group = fresh_group("exclusive-list");
    store.claim(&group, "projection", 0, QUERY_A, 3).await?;
    store.advance(&group, "projection", 0, 3, 8).await?;
    store.save(&group, "consumer", 0, 5).await?;
    store.save(&group, "projection", 0, 4).await?;
    let mut listed = store.list(&group).await?;
    listed.sort();
    ensure_eq!(
        listed,
        vec![
            Checkpoint::new("consumer", 0, 5),
            Checkpoint::new("projection", 0, 8)
        ],
        "list of a group with an exclusive and a monotonic checkpoint"
    );
    Ok(())
}

/// Positions of claims and advances are exact over the whole range.
pub async fn exclusive_positions_are_exact(store: &dyn ExclusiveCheckpointStore) -> CaseResult {
    let group = fresh_group("exclusive-exact");
    let near = 1u64 << 53;
    ensure_eq!(
        store.claim(&group, "p", 0, QUERY_A, near).await?,
        near,
        "claim at 2^53"
    );
    expect_moved(
        store.advance(&group, "p", 0, near + 1, near + 2).await,
        near + 1,
        Some(near),
        "advance from 2^53 + 1 when 2^53 is stored",
    )?;
    store.advance(&group, "p", 0, near, near + 1).await?;
    store
        .advance(&group, "p", 0, near + 1, MAX_POSITION)
        .await?;
    ensure_eq!(
        store.load(&group, "p", 0).await?,
        Some(MAX_POSITION),
        "load after advancing to i64::MAX"
    );
    ensure_eq!(
        store.claim(&group, "q", 0, QUERY_A, MAX_POSITION).await?,
        MAX_POSITION,
        "claim at i64::MAX"
    );
    Ok(())
}

/// Invalid claims and advances are rejected with the invalid-input error before any I/O;
/// an advance must move forward.
pub async fn exclusive_invalid_inputs_are_rejected(
    store: &dyn ExclusiveCheckpointStore,
) -> CaseResult {
    let group = fresh_group("exclusive-invalid");
    let too_long = "n".repeat(MAX_NAME_BYTES + 1);
    for bad in ["", too_long.as_str(), "a\0"] {
        ensure!(
            matches!(store.claim(bad, "p", 0, QUERY_A, 0).await, Err(Error::InvalidInput(ref i)) if i.argument == Argument::Group),
            "claim with group {bad:?} must be invalid input"
        );
        ensure!(
            matches!(store.claim(&group, bad, 0, QUERY_A, 0).await, Err(Error::InvalidInput(ref i)) if i.argument == Argument::Subscription),
            "claim with subscription {bad:?} must be invalid input"
        );
        ensure!(
            matches!(store.advance(&group, bad, 0, 0, 1).await, Err(Error::InvalidInput(ref i)) if i.argument == Argument::Subscription),
            "advance with subscription {bad:?} must be invalid input"
        );
    }
    ensure!(
        matches!(store.claim(&group, "p", 0, QUERY_A, MAX_POSITION + 1).await, Err(Error::InvalidInput(ref i)) if i.argument == Argument::InitialPosition),
        "claim at i64::MAX + 1 must be invalid input"
    );
    store.claim(&group, "p", 0, QUERY_A, 5).await?;
    for (from, to) in [(5, 5), (5, 4), (5, 0)] {
        match store.advance(&group, "p", 0, from, to).await {
            Err(Error::InvalidInput(invalid))
                if invalid.reason == (InvalidReason::NotAhead { from, to }) => {}
            other => {
                return Err(Failure::new(format!(
                    "advance {from} -> {to}: expected NotAhead, got {other:?}"
                )));
            }
        }
    }
    ensure!(
        matches!(store.advance(&group, "p", 0, 5, MAX_POSITION + 1).await, Err(Error::InvalidInput(ref i)) if i.argument == Argument::To),
        "advance to i64::MAX + 1 must be invalid input"
    );
    ensure_eq!(
        store.load(&group, "p", 0).await?,
        Some(5),
        "load after invalid advances"
    );
    ensure_eq!(
        store.list(&group).await?.len(),
        1,
        "invalid claims must create nothing"
    );
    Ok(())
}

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
