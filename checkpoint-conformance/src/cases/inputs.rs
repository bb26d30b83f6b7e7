//! Inputs outside the contract: rejected with the invalid-input error naming the argument,
//! before anything is stored; arbitrary ones either round-trip or are rejected.

use std::collections::BTreeMap;

use checkpoint_core::validation::{MAX_NAME_BYTES, MAX_POSITION};
use checkpoint_core::{Argument, Checkpoint, CheckpointStore};

use proptest::prelude::*;
use proptest::strategy::ValueTree;

use super::{expect_invalid, listed};
use crate::history::{HistoryConfig, seeded_runner};
use crate::inputs::{self, first_invalid};
use crate::{CaseResult, Failure, ensure, ensure_eq, fresh_group};

/// Every input outside the contract's valid values is rejected with the invalid-input error,
/// naming the argument, and nothing of it is stored; a batch with one invalid entry is
/// rejected whole.
pub async fn invalid_inputs_are_rejected(store: &dyn CheckpointStore) -> CaseResult {
    let group = fresh_group("invalid");
    let too_long = "n".repeat(MAX_NAME_BYTES + 1);
    let too_long_multibyte = format!("{}é", "n".repeat(MAX_NAME_BYTES - 1));
    let bad_names = [
        "",
        too_long.as_str(),
        too_long_multibyte.as_str(),
        "a\0b",
        "\0",
    ];
    for bad in bad_names {
        expect_invalid(
            store.list(bad).await,
            Argument::Group,
            &format!("list({bad:?})"),
        )?;
        expect_invalid(
            store.load(bad, "s", 0).await,
            Argument::Group,
            &format!("load with group {bad:?}"),
        )?;
        expect_invalid(
            store.load(&group, bad, 0).await,
            Argument::Subscription,
            &format!("load with subscription {bad:?}"),
        )?;
        expect_invalid(
            store.save(bad, "s", 0, 1).await,
            Argument::Group,
            &format!("save with group {bad:?}"),
        )?;
        expect_invalid(
            store.save(&group, bad, 0, 1).await,
            Argument::Subscription,
            &format!("save with subscription {bad:?}"),
        )?;
        expect_invalid(
            store.save_all(bad, &[Checkpoint::new("s", 0, 1)]).await,
            Argument::Group,
            &format!("save_all with group {bad:?}"),
        )?;
        expect_invalid(
            store
                .save_all(
                    &group,
                    &[Checkpoint::new("ok", 0, 1), Checkpoint::new(bad, 0, 1)],
                )
                .await,
            Argument::Subscription,
            &format!("save_all with an entry of subscription {bad:?}"),
        )?;
    }
    for bad in [MAX_POSITION + 1, u64::MAX] {
        expect_invalid(
            store.save(&group, "s", 0, bad).await,
            Argument::Position,
            &format!("save of position {bad}"),
        )?;
        expect_invalid(
            store
                .save_all(
                    &group,
                    &[Checkpoint::new("ok", 0, 1), Checkpoint::new("s", 0, bad)],
                )
                .await,
            Argument::Position,
            &format!("save_all with an entry at position {bad}"),
        )?;
    }
    ensure_eq!(
        store.list(&group).await?,
        Vec::<Checkpoint>::new(),
        "list after only invalid calls: a rejected batch must store nothing"
    );
    Ok(())
}

/// One arbitrary call: the group suffix, the subscription, the partition and the position.
type ArbitraryCall = (String, String, u32, u64);

/// What the store must hold after the valid calls of one run: for each group, the highest
/// position saved for each subscription and partition.
type SavedModel = BTreeMap<String, BTreeMap<(String, u32), u64>>;

/// Arbitrary names, partitions and positions through every entry point: valid ones are stored
/// and read back exactly, invalid ones are rejected with the invalid-input error naming the
/// first invalid argument (group, then subscription, then position), and leave nothing.
pub async fn arbitrary_inputs_round_trip_or_are_rejected(
    store: &dyn CheckpointStore,
) -> CaseResult {
    let config = HistoryConfig::from_env();
    let runs = (config.cases / 4).max(16);
    let mut runner = seeded_runner(runs, config.seed);
    let calls = prop::collection::vec(
        (
            inputs::name(),
            inputs::name(),
            any::<u32>(),
            inputs::position(),
        ),
        1..10,
    );
    for run in 0..runs {
        let calls = calls
            .new_tree(&mut runner)
            .map_err(|reason| Failure::new(format!("generating inputs: {reason}")))?
            .current();
        let context = |what: String| format!("run {run} (CHECKPOINT_SEED={}): {what}", config.seed);
        run_arbitrary_calls(store, &calls, &context).await?;
    }
    Ok(())
}

/// One run of [`arbitrary_inputs_round_trip_or_are_rejected`] under a fresh group prefix, apart
/// so that the case reads as generate-then-run: each call is either rejected or round-trips,
/// then every group is listed against the model of what was saved.
async fn run_arbitrary_calls(
    store: &dyn CheckpointStore,
    calls: &[ArbitraryCall],
    context: &dyn Fn(String) -> String,
) -> CaseResult {
    let base = fresh_group("arbitrary");
    let mut model = SavedModel::new();
    for call in calls {
        let (group_suffix, subscription, partition, position) = call;
        let group = format!("{base}{group_suffix}");
        let expected_argument = first_invalid(
            &group,
            Some(subscription),
            &[(Argument::Position, *position)],
        );
        let what = format!("save({group:?}, {subscription:?}, {partition}, {position})");
        match expected_argument {
            Some(argument) => {
                expect_rejected_everywhere(store, &group, call, argument, &what, context).await?;
            }
            None => save_and_read_back(store, &mut model, &group, call, &what, context).await?,
        }
    }
    ensure_lists_match_model(store, &model, context).await
}

/// An invalid call must be rejected, naming `argument`, by every entry point that takes the
/// invalid argument: save and save_all always, load unless only the position is invalid, and
/// list when the group is.
async fn expect_rejected_everywhere(
    store: &dyn CheckpointStore,
    group: &str,
    (_, subscription, partition, position): &ArbitraryCall,
    argument: Argument,
    what: &str,
    context: &dyn Fn(String) -> String,
) -> CaseResult {
    expect_invalid(
        store.save(group, subscription, *partition, *position).await,
        argument,
        &context(what.to_owned()),
    )?;
    let batch = [Checkpoint::new(subscription.clone(), *partition, *position)];
    expect_invalid(
        store.save_all(group, &batch).await,
        argument,
        &context(format!("save_all of {what}")),
    )?;
    if argument != Argument::Position {
        expect_invalid(
            store.load(group, subscription, *partition).await,
            argument,
            &context(format!("load of {what}")),
        )?;
    }
    if argument == Argument::Group {
        expect_invalid(
            store.list(group).await,
            argument,
            &context(format!("list({group:?})")),
        )?;
    }
    Ok(())
}

/// A valid call is saved, recorded in `model` (which keeps the highest position, as the
/// monotonic contract does), and must load back as the model says.
async fn save_and_read_back(
    store: &dyn CheckpointStore,
    model: &mut SavedModel,
    group: &str,
    (_, subscription, partition, position): &ArbitraryCall,
    what: &str,
    context: &dyn Fn(String) -> String,
) -> CaseResult {
    store
        .save(group, subscription, *partition, *position)
        .await?;
    let stored = model
        .entry(group.to_owned())
        .or_default()
        .entry((subscription.clone(), *partition))
        .or_insert(*position);
    *stored = (*stored).max(*position);
    let want = Some(*stored);
    ensure_eq!(
        store.load(group, subscription, *partition).await?,
        want,
        "{}",
        context(format!("load after {what}"))
    );
    Ok(())
}

/// At the end of a run, every group the model knows must list exactly what was saved in it.
async fn ensure_lists_match_model(
    store: &dyn CheckpointStore,
    model: &SavedModel,
    context: &dyn Fn(String) -> String,
) -> CaseResult {
    for (group, want) in model {
        ensure!(
            listed(store, group).await? == *want,
            "{}",
            context(format!(
                "list({group:?}) does not return exactly what was saved"
            ))
        );
    }
    Ok(())
}
