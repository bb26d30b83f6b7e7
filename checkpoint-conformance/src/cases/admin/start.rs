//! `start_at`: a new subscription at chosen positions, never one that exists or is retired.

use checkpoint_core::validation::MAX_POSITION;
use checkpoint_core::{Checkpoint, CheckpointAdmin};

use super::super::{expect_stored, expected, listed};
use super::{Refusal, expect_gone, expect_refused};
use crate::{CaseResult, ensure_eq, fresh_group};

/// `start_at` creates exactly one checkpoint per `(partition, position)` given (the lowest and
/// highest partitions and positions included) and nothing else; the new subscription is then
/// an ordinary one, moved forward only by saves.
pub async fn start_at_creates_exactly_the_positions<S: CheckpointAdmin + ?Sized>(
    store: &S,
) -> CaseResult {
    let group = fresh_group("start-at");
    store.save(&group, "old", 0, 500).await?;
    let high = (1u64 << 53) + 1;
    let positions = [(0, 10), (3, 0), (7, MAX_POSITION), (u32::MAX, high)];
    store.start_at(&group, "replay", &positions).await?;
    let mut want = expected([
        ("old", 0, 500),
        ("replay", 0, 10),
        ("replay", 3, 0),
        ("replay", 7, MAX_POSITION),
        ("replay", u32::MAX, high),
    ]);
    expect_stored(
        &group,
        &listed(store, &group).await?,
        &want,
        "list after start_at(\"replay\", [(0, 10), (3, 0), (7, i64::MAX), (u32::MAX, 2^53 + 1)])",
    )?;
    for (partition, position) in positions {
        ensure_eq!(
            store.load(&group, "replay", partition).await?,
            Some(position),
            "load({group:?}, \"replay\", {partition}) after start_at"
        );
    }
    ensure_eq!(
        store.load(&group, "replay", 1).await?,
        None,
        "load({group:?}, \"replay\", 1), a partition start_at did not name"
    );
    // Saves move it forward only, as any checkpoint.
    store.save(&group, "replay", 0, 9).await?;
    store.save(&group, "replay", 3, 4).await?;
    want.insert(("replay".to_owned(), 3), 4);
    expect_stored(
        &group,
        &listed(store, &group).await?,
        &want,
        "list after saving 9 and 4 to partitions 0 and 3 of the started subscription",
    )
}

/// `start_at` refuses a subscription that has any checkpoint with
/// [`Error::Exists`](checkpoint_core::Error::Exists), also when the only one is a partition it does not name,
/// or one it started itself, and moves or creates nothing.
pub async fn start_at_refuses_an_existing_subscription<S: CheckpointAdmin + ?Sized>(
    store: &S,
) -> CaseResult {
    let group = fresh_group("start-exists");
    store
        .save_all(
            &group,
            &[
                Checkpoint::new("orders", 0, 100),
                Checkpoint::new("orders", 1, 50),
            ],
        )
        .await?;
    let refused = store
        .start_at(&group, "orders", &[(0, 5), (1, 500), (2, 7)])
        .await;
    let want = expected([("orders", 0, 100), ("orders", 1, 50)]);
    expect_stored(
        &group,
        &listed(store, &group).await?,
        &want,
        "list after start_at(\"orders\", [(0, 5), (1, 500), (2, 7)]) of a subscription with two \
         checkpoints: it must move and create nothing",
    )?;
    expect_refused(
        refused,
        Refusal::Exists,
        &group,
        "orders",
        "start_at of a subscription with two checkpoints",
    )?;

    // Its one checkpoint is on a partition start_at does not name.
    store.save(&group, "single", 4, 9).await?;
    let refused = store.start_at(&group, "single", &[(0, 1), (1, 1)]).await;
    let want = expected([("orders", 0, 100), ("orders", 1, 50), ("single", 4, 9)]);
    expect_stored(
        &group,
        &listed(store, &group).await?,
        &want,
        "list after start_at(\"single\", [(0, 1), (1, 1)]) of a subscription whose one \
         checkpoint is on partition 4",
    )?;
    expect_refused(
        refused,
        Refusal::Exists,
        &group,
        "single",
        "start_at of a subscription whose one checkpoint is on a partition it does not name",
    )?;

    // Started once, started again.
    store.start_at(&group, "started", &[(0, 3)]).await?;
    let refused = store.start_at(&group, "started", &[(0, 1), (1, 1)]).await;
    let want = expected([
        ("orders", 0, 100),
        ("orders", 1, 50),
        ("single", 4, 9),
        ("started", 0, 3),
    ]);
    expect_stored(
        &group,
        &listed(store, &group).await?,
        &want,
        "list after a second start_at of \"started\"",
    )?;
    expect_refused(
        refused,
        Refusal::Exists,
        &group,
        "started",
        "a second start_at of the same subscription",
    )
}

/// `start_at` refuses a retired name with [`Error::Retired`](checkpoint_core::Error::Retired),
/// one that had checkpoints and one that never had, and creates nothing under it.
pub async fn start_at_refuses_a_retired_name<S: CheckpointAdmin + ?Sized>(store: &S) -> CaseResult {
    let group = fresh_group("start-retired");
    store.save(&group, "old", 0, 40).await?;
    store.retire(&group, "old").await?;
    store.retire(&group, "never-saved").await?;
    for name in ["old", "never-saved"] {
        let refused = store.start_at(&group, name, &[(0, 1), (5, 2)]).await;
        expect_gone(
            store,
            &group,
            name,
            &[0, 5],
            &format!("after start_at of retired {name:?}"),
        )
        .await?;
        expect_refused(
            refused,
            Refusal::Retired,
            &group,
            name,
            &format!("start_at of retired {name:?}"),
        )?;
    }
    ensure_eq!(
        store.retired(&group).await?,
        vec!["never-saved".to_owned(), "old".to_owned()],
        "retired({group:?}) after refused start_at calls"
    );
    Ok(())
}
