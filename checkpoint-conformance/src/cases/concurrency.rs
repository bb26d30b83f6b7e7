//! Calls at the same time: concurrent saves and batches keep the maximum, and generated
//! histories of owners and zombies are linearizable.

use checkpoint_core::{Checkpoint, CheckpointStore};
use futures_util::future::join_all;

use std::collections::BTreeMap;

use super::{expect_stored, listed};
use crate::{CaseResult, ensure_eq, fresh_group};

/// Many saves of one key at the same time leave the highest, whatever order they land in;
/// concurrent overlapping batches too.
pub async fn concurrent_saves_keep_the_maximum(store: &dyn CheckpointStore) -> CaseResult {
    let group = fresh_group("concurrent");
    // 64 saves of one key, highest in the middle, all in flight at once.
    let positions: Vec<u64> = (0..64u64).map(|i| (i * 37) % 64).collect();
    let results = join_all(positions.iter().map(|p| store.save(&group, "hot", 0, *p))).await;
    for result in results {
        result?;
    }
    ensure_eq!(
        store.load(&group, "hot", 0).await?,
        Some(63),
        "key (\"hot\", 0) of group {group:?} after 64 concurrent saves"
    );

    // 8 batches over the same 200 keys, each in its own order.
    let batches: Vec<Vec<Checkpoint>> = (0..8u64)
        .map(|b| {
            (0..200u64)
                .map(|k| {
                    // Every batch covers all 200 keys, each in an order of its own.
                    let rotated = (k + 37 * b) % 200;
                    let key = if b % 2 == 0 { rotated } else { 199 - rotated };
                    Checkpoint::new(format!("k{}", key % 5), key as u32, key * 10 + b)
                })
                .collect()
        })
        .collect();
    let results = join_all(batches.iter().map(|batch| store.save_all(&group, batch))).await;
    for result in results {
        result?;
    }
    // The highest of every key is batch 7's.
    let want: BTreeMap<(String, u32), u64> = (0..200u64)
        .map(|key| ((format!("k{}", key % 5), key as u32), key * 10 + 7))
        .collect();
    let mut got = listed(store, &group).await?;
    got.remove(&("hot".to_owned(), 0));
    expect_stored(
        &group,
        &got,
        &want,
        "200 keys after 8 concurrent overlapping batches",
    )
}

/// Concurrent histories of owners and zombies, checked against a linearizable max-register.
pub async fn concurrent_histories(store: &dyn CheckpointStore) -> CaseResult {
    crate::history::run_histories(store, &crate::history::HistoryConfig::from_env()).await
}
