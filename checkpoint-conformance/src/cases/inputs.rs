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
        let base = fresh_group("arbitrary");
        let mut model: BTreeMap<String, BTreeMap<(String, u32), u64>> = BTreeMap::new();
        let context = |what: String| format!("run {run} (CHECKPOINT_SEED={}): {what}", config.seed);
        for (group_suffix, subscription, partition, position) in &calls {
            let group = format!("{base}{group_suffix}");
            let expected_argument = first_invalid(
                &group,
                Some(subscription),
                &[(Argument::Position, *position)],
            );
            let what = format!("save({group:?}, {subscription:?}, {partition}, {position})");
            match expected_argument {
                Some(argument) => {
                    expect_invalid(
                        store
                            .save(&group, subscription, *partition, *position)
                            .await,
                        argument,
                        &context(what.clone()),
                    )?;
                    let batch = [Checkpoint::new(subscription.clone(), *partition, *position)];
                    expect_invalid(
                        store.save_all(&group, &batch).await,
                        argument,
                        &context(format!("save_all of {what}")),
                    )?;
                    if argument != Argument::Position {
                        expect_invalid(
                            store.load(&group, subscription, *partition).await,
                            argument,
                            &context(format!("load of {what}")),
                        )?;
                    }
                    if argument == Argument::Group {
                        expect_invalid(
                            store.list(&group).await,
                            argument,
                            &context(format!("list({group:?})")),
                        )?;
                    }
                }
                None => {
                    store
                        .save(&group, subscription, *partition, *position)
                        .await?;
                    let stored = model
                        .entry(group.clone())
                        .or_default()
                        .entry((subscription.clone(), *partition))
                        .or_insert(*position);
                    *stored = (*stored).max(*position);
                    let want = Some(*stored);
                    ensure_eq!(
                        store.load(&group, subscription, *partition).await?,
                        want,
                        "{}",
                        context(format!("load after {what}"))
                    );
                }
            }
        }
        for (group, want) in &model {
            ensure!(
                listed(store, group).await? == *want,
                "{}",
                context(format!(
                    "list({group:?}) does not return exactly what was saved"
                ))
            );
        }
    }
    Ok(())
}
