//! `start_at` is one "create or refuse" step per (group, subscription): of concurrent calls
//! for one new name, at most one succeeds, whatever partitions each names.

use std::collections::BTreeMap;

use checkpoint_core::{CheckpointAdmin, Error};
use futures_util::future::join_all;

use super::super::{expect_stored, listed};
use super::{Refusal, expect_refused};
use crate::{CaseResult, Failure, fresh_group};

/// How many callers race in each round.
const RACERS: u32 = 3;

/// How many partitions each caller names; the callers' partitions never overlap, so a store
/// whose only guard is the per-checkpoint key lets them all through.
const PARTITIONS_PER_CALLER: u32 = 2;

/// Rounds of [`concurrent_start_ats_of_one_name_let_at_most_one_through`]:
/// `CHECKPOINT_START_RACES`, else 32.
fn rounds_from_env() -> u32 {
    std::env::var("CHECKPOINT_START_RACES")
        .ok()
        .and_then(|rounds| rounds.parse().ok())
        .unwrap_or(32)
}

/// What caller `racer` asks for: its own partitions, at positions that say whose they are.
fn positions_of(racer: u32) -> Vec<(u32, u64)> {
    (0..PARTITIONS_PER_CALLER)
        .map(|i| {
            let partition = racer * PARTITIONS_PER_CALLER + i;
            (partition, 1_000 * u64::from(racer + 1) + u64::from(i))
        })
        .collect()
}

/// `start_at` races: in each round (`CHECKPOINT_START_RACES`, default 32) three callers start
/// one new name at the same time over disjoint partitions. At most one may succeed; every
/// other gets [`Error::Exists`] naming the subscription; and the subscription then holds
/// exactly the winner's checkpoints (nothing when every call was refused, which a store that
/// cannot be all-or-nothing may answer), never a mix of two calls' partitions.
pub async fn concurrent_start_ats_of_one_name_let_at_most_one_through<
    S: CheckpointAdmin + ?Sized,
>(
    store: &S,
) -> CaseResult {
    let group = fresh_group("start-race");
    let rounds = rounds_from_env();
    let mut refused_all = 0;
    for round in 0..rounds {
        let name = format!("replay-{round}");
        let asked: Vec<Vec<(u32, u64)>> = (0..RACERS).map(positions_of).collect();
        let outcomes = join_all(
            asked
                .iter()
                .map(|positions| store.start_at(&group, &name, positions)),
        )
        .await;
        let winner = judge_round(&group, &name, round, outcomes)?;
        let want: BTreeMap<(String, u32), u64> = winner
            .map(|racer| asked[racer].clone())
            .unwrap_or_default()
            .into_iter()
            .map(|(partition, position)| ((name.clone(), partition), position))
            .collect();
        let stored: BTreeMap<(String, u32), u64> = listed(store, &group)
            .await?
            .into_iter()
            .filter(|((subscription, _), _)| *subscription == name)
            .collect();
        let who = winner.map_or("none succeeded".to_owned(), |racer| {
            format!("caller {racer} succeeded")
        });
        expect_stored(
            &group,
            &stored,
            &want,
            &format!(
                "round {round}: {RACERS} concurrent start_at({name:?}) over disjoint partitions, \
                 {who}: the subscription must hold exactly that call's checkpoints"
            ),
        )?;
        refused_all += u32::from(winner.is_none());
    }
    eprintln!(
        "start_at races: {rounds} rounds of {RACERS} concurrent calls; {} let exactly one \
         through, {refused_all} refused all, none let two or more through",
        rounds - refused_all
    );
    Ok(())
}

/// The one caller that succeeded in a round, if any; fails when two or more did, or when a
/// refusal is anything but `Exists` for this subscription.
fn judge_round(
    group: &str,
    name: &str,
    round: u32,
    outcomes: Vec<Result<(), Error>>,
) -> Result<Option<usize>, Failure> {
    let winners: Vec<usize> = (0..outcomes.len())
        .filter(|&racer| outcomes[racer].is_ok())
        .collect();
    if winners.len() > 1 {
        return Err(Failure::new(format!(
            "round {round}: {} of {RACERS} concurrent start_at({name:?}) calls in group \
             {group:?} succeeded (callers {winners:?}, each over partitions of its own): \
             start_at must create the subscription or refuse it with Exists as one step, so at \
             most one may succeed",
            winners.len()
        )));
    }
    for (racer, outcome) in outcomes.into_iter().enumerate() {
        if outcome.is_err() {
            expect_refused(
                outcome,
                Refusal::Exists,
                group,
                name,
                &format!("round {round}: caller {racer}'s start_at raced by {RACERS} callers"),
            )?;
        }
    }
    Ok(winners.first().copied())
}
