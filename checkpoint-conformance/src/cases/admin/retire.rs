//! `retire` and `retired`: a retired subscription is gone from `list` and `load` and stays
//! gone, whatever its zombies save; nothing else moves.

use std::collections::BTreeMap;

use checkpoint_core::validation::MAX_POSITION;
use checkpoint_core::{Checkpoint, CheckpointAdmin};

use super::super::{expect_stored, expected, listed};
use super::{expect_gone, expect_ignored, expect_sorted_once};
use crate::{CaseResult, ensure, ensure_eq, fresh_group};

/// When `retire` returns, the subscription is gone from `list` and from `load` of each of its
/// partitions, and `retired` names it; the other subscription of the group stays.
pub async fn retire_hides_from_list_and_load<S: CheckpointAdmin + ?Sized>(store: &S) -> CaseResult {
    let group = fresh_group("retire");
    store
        .save_all(
            &group,
            &[
                Checkpoint::new("old", 0, 10),
                Checkpoint::new("old", 1, 20),
                Checkpoint::new("old", 9, 30),
                Checkpoint::new("live", 0, 5),
            ],
        )
        .await?;
    store.retire(&group, "old").await?;
    expect_stored(
        &group,
        &listed(store, &group).await?,
        &expected([("live", 0, 5)]),
        "list after retiring \"old\"",
    )?;
    expect_gone(store, &group, "old", &[0, 1, 9], "after retire").await?;
    ensure_eq!(
        store.retired(&group).await?,
        vec!["old".to_owned()],
        "retired({group:?}) after retiring \"old\""
    );
    Ok(())
}

/// A zombie owner's `save` and `save_all` under a retired name are `Ok` and ignored: ahead of
/// what was stored, on partitions that had a checkpoint and on partitions that never had one
/// (the lowest and highest included), alone or in a batch with a live subscription's entries,
/// which are saved.
pub async fn zombie_saves_after_retire_are_ignored<S: CheckpointAdmin + ?Sized>(
    store: &S,
) -> CaseResult {
    let group = fresh_group("retire-zombie");
    store
        .save_all(
            &group,
            &[
                Checkpoint::new("old", 0, 10),
                Checkpoint::new("old", 1, 20),
                Checkpoint::new("live", 0, 5),
            ],
        )
        .await?;
    store.retire(&group, "old").await?;
    // Existing partitions, ahead and equal; partitions never saved.
    for (partition, position) in [(0, 11), (1, 20), (2, 1), (u32::MAX, MAX_POSITION)] {
        expect_ignored(
            store.save(&group, "old", partition, position).await,
            &format!("save({group:?}, \"old\", {partition}, {position}) after retire"),
        )?;
    }
    expect_ignored(
        store
            .save_all(
                &group,
                &[
                    Checkpoint::new("old", 0, 99),
                    Checkpoint::new("old", 3, 7),
                    Checkpoint::new("live", 0, 6),
                    Checkpoint::new("live", 1, 1),
                    Checkpoint::new("old", 2, 50),
                ],
            )
            .await,
        "save_all of retired \"old\" and live \"live\" entries",
    )?;
    expect_stored(
        &group,
        &listed(store, &group).await?,
        &expected([("live", 0, 6), ("live", 1, 1)]),
        "list after a zombie's save and save_all under retired \"old\" (partitions 0 and 1 \
         existed, 2, 3 and u32::MAX never did)",
    )?;
    expect_gone(
        store,
        &group,
        "old",
        &[0, 1, 2, 3, u32::MAX],
        "after a zombie's saves",
    )
    .await
}

/// Retiring a name that never had a checkpoint is allowed and guards it: a zombie that had not
/// saved yet saves in vain.
pub async fn retire_of_an_unknown_name_guards_it<S: CheckpointAdmin + ?Sized>(
    store: &S,
) -> CaseResult {
    let group = fresh_group("retire-unknown");
    store.retire(&group, "ghost").await?;
    expect_ignored(
        store.save(&group, "ghost", 0, 5).await,
        "save under \"ghost\", retired before it ever saved",
    )?;
    expect_ignored(
        store
            .save_all(
                &group,
                &[
                    Checkpoint::new("ghost", 1, 6),
                    Checkpoint::new("ghost", 0, 7),
                ],
            )
            .await,
        "save_all under \"ghost\", retired before it ever saved",
    )?;
    expect_stored(
        &group,
        &listed(store, &group).await?,
        &expected([]),
        "list after saves under \"ghost\", retired before it ever saved",
    )?;
    expect_gone(store, &group, "ghost", &[0, 1], "after a zombie's saves").await?;
    ensure_eq!(
        store.retired(&group).await?,
        vec!["ghost".to_owned()],
        "retired({group:?}) after retiring a name that never saved"
    );
    Ok(())
}

/// Retiring twice is allowed and leaves the subscription retired, once, and still guarded.
pub async fn retire_is_idempotent<S: CheckpointAdmin + ?Sized>(store: &S) -> CaseResult {
    let group = fresh_group("retire-twice");
    store.save(&group, "old", 0, 10).await?;
    store.retire(&group, "old").await?;
    store.retire(&group, "old").await?;
    store.retire(&group, "ghost").await?;
    store.retire(&group, "ghost").await?;
    ensure_eq!(
        store.retired(&group).await?,
        vec!["ghost".to_owned(), "old".to_owned()],
        "retired({group:?}) after retiring each name twice"
    );
    expect_ignored(
        store.save(&group, "old", 0, 11).await,
        "save under \"old\", retired twice",
    )?;
    expect_ignored(
        store.save(&group, "ghost", 3, 11).await,
        "save under \"ghost\", retired twice",
    )?;
    expect_gone(store, &group, "old", &[0], "after retiring twice").await?;
    expect_gone(store, &group, "ghost", &[3], "after retiring twice").await
}

/// `retired` lists the retired names of its group only, sorted by bytes, each once; a group
/// with none (or never used) has none.
pub async fn retired_lists_sorted_names<S: CheckpointAdmin + ?Sized>(store: &S) -> CaseResult {
    let group = fresh_group("retired-list");
    let longer = format!("{group}-more");
    store.save(&group, "live", 0, 1).await?;
    store.start_at(&group, "started", &[(0, 1)]).await?;
    for name in ["b", "a", "a:1", "A", "é", "a", "a b", "b"] {
        store.save(&group, name, 0, 3).await?;
        store.retire(&group, name).await?;
    }
    store.retire(&longer, "zzz").await?;
    let retired = store.retired(&group).await?;
    expect_sorted_once(&retired, &format!("retired({group:?})"))?;
    ensure_eq!(
        retired,
        ["A", "a", "a b", "a:1", "b", "é"]
            .map(str::to_owned)
            .to_vec(),
        "retired({group:?})"
    );
    ensure_eq!(
        store.retired(&longer).await?,
        vec!["zzz".to_owned()],
        "retired({longer:?}), a group whose name extends {group:?}"
    );
    ensure_eq!(
        store.retired(&fresh_group("retired-none")).await?,
        Vec::<String>::new(),
        "retired() of a group never used"
    );
    expect_stored(
        &group,
        &listed(store, &group).await?,
        &expected([("live", 0, 1), ("started", 0, 1)]),
        "list after retiring six names",
    )
}

/// What [`retire_and_purge_leave_others_untouched`] saves in each group around its own.
const ELSEWHERE: [(&str, u32, u64); 2] = [("orders", 0, 20), ("orders", 1, 21)];

/// `retire` and `purge` touch nothing but their own subscription: not a subscription whose
/// name is a prefix of it or extends it, not the same name in a group whose name is a prefix
/// of the group or extends it, nor in another group.
pub async fn retire_and_purge_leave_others_untouched<S: CheckpointAdmin + ?Sized>(
    store: &S,
) -> CaseResult {
    let base = fresh_group("untouched");
    let group = format!("{base}/g");
    let (shorter, longer, other) = (
        base.clone(),
        format!("{group}0"),
        fresh_group("untouched-other"),
    );
    let in_group = [
        ("orders", 0, 10),
        ("orders", 1, 11),
        ("order", 0, 12),
        ("orders2", 0, 13),
        ("orders:1", 0, 14),
        ("orders/0", 0, 15),
    ];
    let batch = |entries: &[(&str, u32, u64)]| -> Vec<Checkpoint> {
        entries
            .iter()
            .map(|(s, p, position)| Checkpoint::new(*s, *p, *position))
            .collect()
    };
    store.save_all(&group, &batch(&in_group)).await?;
    for g in [&shorter, &longer, &other] {
        store.save_all(g, &batch(&ELSEWHERE)).await?;
    }
    let mut others_in_group = expected(in_group.iter().copied().filter(|(s, _, _)| *s != "orders"));
    let around = [shorter.as_str(), longer.as_str(), other.as_str()];

    store.retire(&group, "orders").await?;
    expect_others(store, &group, &others_in_group, around, "after retiring").await?;
    let groups = store.groups().await?;
    for g in [&group, &shorter, &longer, &other] {
        ensure!(
            groups.binary_search(g).is_ok(),
            "groups() lost {g:?} after \"orders\" of {group:?} was retired"
        );
    }
    // The other subscriptions still save.
    store.save(&group, "order", 0, 112).await?;
    ensure_eq!(
        store.load(&group, "order", 0).await?,
        Some(112),
        "load({group:?}, \"order\", 0) after a save beside a retired \"orders\""
    );
    store.save(&group, "order", 0, 12).await?;

    store.purge(&group, "orders").await?;
    others_in_group.insert(("order".to_owned(), 0), 112);
    expect_others(store, &group, &others_in_group, around, "after purging").await
}

/// Fails unless `group` holds `others` and each group `around` what the case saved there.
async fn expect_others<S: CheckpointAdmin + ?Sized>(
    store: &S,
    group: &str,
    others: &BTreeMap<(String, u32), u64>,
    around: [&str; 3],
    when: &str,
) -> CaseResult {
    expect_stored(
        group,
        &listed(store, group).await?,
        others,
        &format!("list {when} \"orders\" of this group"),
    )?;
    for g in around {
        expect_stored(
            g,
            &listed(store, g).await?,
            &expected(ELSEWHERE),
            &format!("list of another group {when} \"orders\" of {group:?}"),
        )?;
        ensure_eq!(
            store.retired(g).await?,
            Vec::<String>::new(),
            "retired({g:?}) {when} \"orders\" of {group:?}"
        );
    }
    Ok(())
}
