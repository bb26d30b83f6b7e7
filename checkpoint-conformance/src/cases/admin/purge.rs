//! `purge`: refused on a live subscription, nothing to do on nothing, and afterwards the name
//! is free again.

use checkpoint_core::{Checkpoint, CheckpointAdmin};

use super::super::{expect_stored, expected, listed};
use super::{Refusal, expect_refused};
use crate::{CaseResult, ensure_eq, fresh_group};

/// `purge` of a subscription with live checkpoints is refused with
/// [`Error::NotRetired`](checkpoint_core::Error::NotRetired) and changes nothing: its
/// checkpoints stay, and it saves on as before.
pub async fn purge_of_a_live_subscription_is_refused<S: CheckpointAdmin + ?Sized>(
    store: &S,
) -> CaseResult {
    let group = fresh_group("purge-live");
    store
        .save_all(
            &group,
            &[
                Checkpoint::new("live", 0, 10),
                Checkpoint::new("live", 1, 20),
                Checkpoint::new("other", 0, 1),
            ],
        )
        .await?;
    let refused = store.purge(&group, "live").await;
    let mut want = expected([("live", 0, 10), ("live", 1, 20), ("other", 0, 1)]);
    expect_stored(
        &group,
        &listed(store, &group).await?,
        &want,
        "list after purge of the live subscription \"live\": it must delete nothing",
    )?;
    expect_refused(
        refused,
        Refusal::NotRetired,
        &group,
        "live",
        "purge of a live subscription",
    )?;
    store.save(&group, "live", 0, 11).await?;
    store.save(&group, "live", 2, 1).await?;
    want.insert(("live".to_owned(), 0), 11);
    want.insert(("live".to_owned(), 2), 1);
    expect_stored(
        &group,
        &listed(store, &group).await?,
        &want,
        "list after saves under \"live\" following a refused purge",
    )?;
    ensure_eq!(
        store.retired(&group).await?,
        Vec::<String>::new(),
        "retired({group:?}) after a refused purge"
    );
    Ok(())
}

/// `purge` of a name with nothing stored is `Ok`, and leaves nothing behind: the name saves
/// as any other afterwards.
pub async fn purge_of_nothing_is_ok<S: CheckpointAdmin + ?Sized>(store: &S) -> CaseResult {
    let group = fresh_group("purge-nothing");
    store.purge(&group, "nothing").await?;
    store.purge(&group, "nothing").await?;
    ensure_eq!(
        store.retired(&group).await?,
        Vec::<String>::new(),
        "retired({group:?}) after purging a name with nothing stored"
    );
    store.save(&group, "nothing", 0, 5).await?;
    ensure_eq!(
        store.load(&group, "nothing", 0).await?,
        Some(5),
        "load({group:?}, \"nothing\", 0) after a purge of nothing and a save: the purge must not \
         retire the name"
    );
    Ok(())
}

/// After `retire` and `purge`, nothing of the old subscription is left (not even what a
/// zombie saved after the retire), `retired` no longer names it, a second purge is `Ok`, and
/// the name can be started, or saved, again.
pub async fn purged_name_can_be_started_and_saved_again<S: CheckpointAdmin + ?Sized>(
    store: &S,
) -> CaseResult {
    let group = fresh_group("purge");
    store
        .save_all(
            &group,
            &[
                Checkpoint::new("old", 0, 10),
                Checkpoint::new("old", 1, 20),
                Checkpoint::new("keep", 0, 1),
            ],
        )
        .await?;
    store.retire(&group, "old").await?;
    store.save(&group, "old", 2, 5).await?;
    store.purge(&group, "old").await?;
    ensure_eq!(
        store.retired(&group).await?,
        Vec::<String>::new(),
        "retired({group:?}) after purging \"old\""
    );
    expect_stored(
        &group,
        &listed(store, &group).await?,
        &expected([("keep", 0, 1)]),
        "list after retiring and purging \"old\"",
    )?;
    store.purge(&group, "old").await?;

    store.start_at(&group, "old", &[(0, 3)]).await?;
    ensure_eq!(
        store.load(&group, "old", 1).await?,
        None,
        "load({group:?}, \"old\", 1) after purging and starting \"old\" again at partition 0: \
         the purged checkpoint must not come back"
    );
    store.retire(&group, "ghost").await?;
    store.purge(&group, "ghost").await?;
    store.save(&group, "ghost", 0, 7).await?;
    expect_stored(
        &group,
        &listed(store, &group).await?,
        &expected([("keep", 0, 1), ("old", 0, 3), ("ghost", 0, 7)]),
        "list after starting purged \"old\" at [(0, 3)] and saving purged \"ghost\" at 7",
    )
}
