//! Loads and lists: absent keys, every part of a key, groups empty, small and large.

use std::collections::BTreeMap;

use checkpoint_core::{Checkpoint, CheckpointStore};

use super::listed;
use crate::{CaseResult, ensure, ensure_eq, fresh_group};

/// `load` of a key never saved is `None`, also when other keys of the group exist.
pub async fn load_of_absent_key_is_none(store: &dyn CheckpointStore) -> CaseResult {
    let group = fresh_group("absent");
    ensure_eq!(
        store.load(&group, "orders", 0).await?,
        None,
        "load in an empty group"
    );
    store.save(&group, "orders", 0, 5).await?;
    ensure_eq!(
        store.load(&group, "orders", 1).await?,
        None,
        "load of another partition"
    );
    ensure_eq!(
        store.load(&group, "order", 0).await?,
        None,
        "load of a prefix subscription"
    );
    ensure_eq!(
        store.load(&group, "orders0", 0).await?,
        None,
        "load of a longer subscription"
    );
    ensure_eq!(
        store
            .load(&fresh_group("absent-other"), "orders", 0)
            .await?,
        None,
        "load of the same key in another group"
    );
    Ok(())
}

/// The group, the subscription and the partition each tell keys apart.
pub async fn keys_differ_by_every_part(store: &dyn CheckpointStore) -> CaseResult {
    let group = fresh_group("parts");
    let other_group = fresh_group("parts-other");
    store.save(&group, "a", 0, 1).await?;
    store.save(&group, "a", 1, 2).await?;
    store.save(&group, "b", 0, 3).await?;
    store.save(&other_group, "a", 0, 4).await?;
    ensure_eq!(store.load(&group, "a", 0).await?, Some(1), "(group, a, 0)");
    ensure_eq!(store.load(&group, "a", 1).await?, Some(2), "(group, a, 1)");
    ensure_eq!(store.load(&group, "b", 0).await?, Some(3), "(group, b, 0)");
    ensure_eq!(
        store.load(&other_group, "a", 0).await?,
        Some(4),
        "(other group, a, 0)"
    );
    Ok(())
}

/// `list` of a group with no checkpoints is empty.
pub async fn list_of_empty_group_is_empty(store: &dyn CheckpointStore) -> CaseResult {
    let group = fresh_group("empty");
    ensure_eq!(
        store.list(&group).await?,
        Vec::<Checkpoint>::new(),
        "list of an unused group"
    );
    Ok(())
}

/// `list` of a group with one checkpoint returns exactly it.
pub async fn list_of_one_checkpoint(store: &dyn CheckpointStore) -> CaseResult {
    let group = fresh_group("one");
    store.save(&group, "orders", 2, 9).await?;
    ensure_eq!(
        store.list(&group).await?,
        vec![Checkpoint::new("orders", 2, 9)],
        "list after one save"
    );
    Ok(())
}

/// `list` returns every checkpoint of a large group (2,600 keys over several subscriptions),
/// with nothing missing, repeated or stale.
pub async fn list_of_large_group_is_complete(store: &dyn CheckpointStore) -> CaseResult {
    let group = fresh_group("large");
    let mut batch = Vec::new();
    for subscription in 0..13u32 {
        for partition in 0..200u32 {
            let name = format!("subscription-{subscription:02}");
            batch.push(Checkpoint::new(
                name,
                partition * 7,
                u64::from(subscription * 1000 + partition),
            ));
        }
    }
    for chunk in batch.chunks(500) {
        store.save_all(&group, chunk).await?;
    }
    // Move a few after the first save, so a list that returns stale rows is caught too.
    store.save(&group, "subscription-00", 0, 99_999).await?;
    store
        .save(&group, "subscription-12", 7 * 199, 77_777)
        .await?;
    let mut want: BTreeMap<(String, u32), u64> = batch
        .iter()
        .map(|c| ((c.subscription.clone(), c.partition), c.position))
        .collect();
    want.insert(("subscription-00".into(), 0), 99_999);
    want.insert(("subscription-12".into(), 7 * 199), 77_777);
    let got = listed(store, &group).await?;
    ensure_eq!(got.len(), want.len(), "number of checkpoints listed");
    ensure!(
        got == want,
        "list of 2,600 checkpoints differs from what was saved"
    );
    Ok(())
}
