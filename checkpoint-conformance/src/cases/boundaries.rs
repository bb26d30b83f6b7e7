//! The edges of the value ranges: the lowest and highest partitions and positions, and where
//! an `f64` stops holding every integer.

use checkpoint_core::CheckpointStore;
use checkpoint_core::validation::MAX_POSITION;

use super::{F64_EXACT_LIMIT, expected, listed};
use crate::{CaseResult, ensure_eq, fresh_group};

/// The lowest and highest partitions are distinct keys and stored exactly.
pub async fn partition_boundaries(store: &dyn CheckpointStore) -> CaseResult {
    let group = fresh_group("partitions");
    let partitions = [
        0,
        1,
        i32::MAX as u32,
        i32::MAX as u32 + 1,
        u32::MAX - 1,
        u32::MAX,
    ];
    for (index, partition) in partitions.iter().enumerate() {
        store.save(&group, "s", *partition, index as u64).await?;
    }
    for (index, partition) in partitions.iter().enumerate() {
        ensure_eq!(
            store.load(&group, "s", *partition).await?,
            Some(index as u64),
            "load of partition {partition}"
        );
    }
    ensure_eq!(
        listed(store, &group).await?,
        expected(
            partitions
                .iter()
                .enumerate()
                .map(|(i, p)| ("s", *p, i as u64))
        ),
        "list of boundary partitions"
    );
    Ok(())
}

/// Positions are kept exactly over the whole valid range, including where an `f64` loses
/// integers (above 2^53) and at `i64::MAX`, and compare exactly there.
pub async fn position_boundaries(store: &dyn CheckpointStore) -> CaseResult {
    let group = fresh_group("positions");
    let values = [
        0,
        1,
        F64_EXACT_LIMIT - 1,
        F64_EXACT_LIMIT,
        F64_EXACT_LIMIT + 1,
        u64::from(u32::MAX) + 1,
        MAX_POSITION - 1,
        MAX_POSITION,
    ];
    for (partition, value) in values.iter().enumerate() {
        store
            .save(&group, "exact", partition as u32, *value)
            .await?;
        ensure_eq!(
            store.load(&group, "exact", partition as u32).await?,
            Some(*value),
            "load of position {value}"
        );
    }
    ensure_eq!(
        listed(store, &group).await?,
        expected(
            values
                .iter()
                .enumerate()
                .map(|(p, v)| ("exact", p as u32, *v))
        ),
        "list of boundary positions"
    );
    // Comparisons where doubles cannot tell the values apart.
    store.save(&group, "cmp", 0, F64_EXACT_LIMIT).await?;
    store.save(&group, "cmp", 0, F64_EXACT_LIMIT + 1).await?;
    ensure_eq!(
        store.load(&group, "cmp", 0).await?,
        Some(F64_EXACT_LIMIT + 1),
        "2^53 + 1 after 2^53"
    );
    store.save(&group, "cmp", 1, MAX_POSITION).await?;
    store.save(&group, "cmp", 1, MAX_POSITION - 1).await?;
    ensure_eq!(
        store.load(&group, "cmp", 1).await?,
        Some(MAX_POSITION),
        "i64::MAX - 1 after i64::MAX"
    );
    store.save(&group, "cmp", 2, MAX_POSITION - 1).await?;
    store.save(&group, "cmp", 2, MAX_POSITION).await?;
    ensure_eq!(
        store.load(&group, "cmp", 2).await?,
        Some(MAX_POSITION),
        "i64::MAX after i64::MAX - 1"
    );
    store.save(&group, "cmp", 3, 10).await?;
    store.save(&group, "cmp", 3, 9).await?;
    store.save(&group, "cmp", 3, 100).await?;
    ensure_eq!(
        store.load(&group, "cmp", 3).await?,
        Some(100),
        "100 after 9 (more digits must compare higher)"
    );
    Ok(())
}
