//! `save_all`: each entry saved as `save` would, repeated keys, any order, empty and large
//! batches.

use std::collections::BTreeMap;

use checkpoint_core::{Checkpoint, CheckpointStore};

use super::{expect_stored, expected, listed};
use crate::{CaseResult, ensure_eq, fresh_group};

/// `save_all` with a key repeated keeps the highest of its positions, wherever it stands.
pub async fn save_all_repeated_keys_keep_highest(store: &dyn CheckpointStore) -> CaseResult {
    let group = fresh_group("repeated");
    store
        .save_all(
            &group,
            &[
                Checkpoint::new("s", 0, 5),
                Checkpoint::new("s", 0, 9),
                Checkpoint::new("s", 1, 4),
                Checkpoint::new("s", 0, 7),
                Checkpoint::new("s", 1, 4),
                Checkpoint::new("s", 0, 1),
            ],
        )
        .await?;
    expect_stored(
        &group,
        &listed(store, &group).await?,
        &expected([("s", 0, 9), ("s", 1, 4)]),
        "list after a batch with repeated keys",
    )?;
    Ok(())
}

/// `save_all` in any order saves each entry as `save` would, never moving a stored checkpoint
/// back.
pub async fn save_all_any_order_never_moves_back(store: &dyn CheckpointStore) -> CaseResult {
    let group = fresh_group("shuffled");
    store.save(&group, "s", 2, 50).await?;
    store.save(&group, "s", 3, 50).await?;
    // A fixed shuffle: entries not in key order, some behind what is stored.
    store
        .save_all(
            &group,
            &[
                Checkpoint::new("t", 9, 3),
                Checkpoint::new("s", 3, 60),
                Checkpoint::new("a", 0, 1),
                Checkpoint::new("s", 2, 40),
                Checkpoint::new("t", 1, 8),
                Checkpoint::new("s", 2, 49),
            ],
        )
        .await?;
    expect_stored(
        &group,
        &listed(store, &group).await?,
        &expected([
            ("a", 0, 1),
            ("s", 2, 50),
            ("s", 3, 60),
            ("t", 1, 8),
            ("t", 9, 3),
        ]),
        "list after a shuffled batch, partly behind",
    )?;
    Ok(())
}

/// An empty batch does nothing and is not an error.
pub async fn save_all_empty_batch_does_nothing(store: &dyn CheckpointStore) -> CaseResult {
    let group = fresh_group("empty-batch");
    store.save_all(&group, &[]).await?;
    ensure_eq!(
        store.list(&group).await?,
        Vec::<Checkpoint>::new(),
        "list after an empty batch"
    );
    Ok(())
}

/// A batch of 10,000 entries is saved whole, and saved again with some ahead and some behind.
pub async fn save_all_of_ten_thousand(store: &dyn CheckpointStore) -> CaseResult {
    let group = fresh_group("ten-thousand");
    let batch: Vec<Checkpoint> = (0..10_000u32)
        .map(|i| Checkpoint::new(format!("s{}", i % 10), i / 10, u64::from(i) * 3))
        .collect();
    store.save_all(&group, &batch).await?;
    let as_map = |batch: &[Checkpoint]| -> BTreeMap<(String, u32), u64> {
        batch
            .iter()
            .map(|c| ((c.subscription.clone(), c.partition), c.position))
            .collect()
    };
    expect_stored(
        &group,
        &listed(store, &group).await?,
        &as_map(&batch),
        "a batch of 10,000",
    )?;
    // Again: even entries ahead by one, odd ones behind by one.
    let second: Vec<Checkpoint> = batch
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let position = if i % 2 == 0 {
                c.position + 1
            } else {
                c.position.saturating_sub(1)
            };
            Checkpoint::new(c.subscription.clone(), c.partition, position)
        })
        .collect();
    store.save_all(&group, &second).await?;
    // Ahead ones moved, behind ones did not.
    let want: Vec<Checkpoint> = batch
        .iter()
        .zip(&second)
        .map(|(first, again)| {
            Checkpoint::new(
                first.subscription.clone(),
                first.partition,
                first.position.max(again.position),
            )
        })
        .collect();
    expect_stored(
        &group,
        &listed(store, &group).await?,
        &as_map(&want),
        "a second batch of 10,000, half ahead and half behind",
    )
}
