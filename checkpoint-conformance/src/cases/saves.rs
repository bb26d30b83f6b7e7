//! Saves: a checkpoint moves forward only, whatever order saves arrive in.

use checkpoint_core::{Checkpoint, CheckpointStore};

use super::{expected, listed};
use crate::{CaseResult, ensure_eq, fresh_group};

/// The first save of a key stores its position.
pub async fn first_save_is_stored(store: &dyn CheckpointStore) -> CaseResult {
    let group = fresh_group("first-save");
    store.save(&group, "orders", 3, 17).await?;
    ensure_eq!(
        store.load(&group, "orders", 3).await?,
        Some(17),
        "load after the first save"
    );
    Ok(())
}

/// A save ahead of the stored position moves it.
pub async fn higher_save_moves_forward(store: &dyn CheckpointStore) -> CaseResult {
    let group = fresh_group("higher");
    store.save(&group, "orders", 0, 10).await?;
    store.save(&group, "orders", 0, 11).await?;
    ensure_eq!(
        store.load(&group, "orders", 0).await?,
        Some(11),
        "load after saving 10 then 11"
    );
    store.save(&group, "orders", 0, 1_000_000).await?;
    ensure_eq!(
        store.load(&group, "orders", 0).await?,
        Some(1_000_000),
        "load after saving 1,000,000"
    );
    Ok(())
}

/// Saving the stored position again changes nothing and is not an error.
pub async fn equal_save_changes_nothing(store: &dyn CheckpointStore) -> CaseResult {
    let group = fresh_group("equal");
    store.save(&group, "orders", 0, 42).await?;
    store.save(&group, "orders", 0, 42).await?;
    ensure_eq!(
        store.load(&group, "orders", 0).await?,
        Some(42),
        "load after saving 42 twice"
    );
    ensure_eq!(
        listed(store, &group).await?,
        expected([("orders", 0, 42)]),
        "list after saving 42 twice"
    );
    Ok(())
}

/// A save behind the stored position changes nothing and is not an error.
pub async fn lower_save_is_ignored(store: &dyn CheckpointStore) -> CaseResult {
    let group = fresh_group("lower");
    store.save(&group, "orders", 0, 100).await?;
    store.save(&group, "orders", 0, 99).await?;
    store.save(&group, "orders", 0, 0).await?;
    ensure_eq!(
        store.load(&group, "orders", 0).await?,
        Some(100),
        "load after saving 100, 99, 0"
    );
    Ok(())
}

/// A lease handover: the old owner keeps saving late and lower after the new owner saved; the
/// checkpoint never moves back.
pub async fn zombie_save_after_handover_is_ignored(store: &dyn CheckpointStore) -> CaseResult {
    let group = fresh_group("zombie");
    // The old owner completes up to 120 and saves 100 (its periodic save lags).
    store.save(&group, "orders", 7, 100).await?;
    // The lease moves; the new owner resumes from 100 and completes up to 180.
    store.save(&group, "orders", 7, 180).await?;
    // The zombie's late saves arrive: 120 and, from an even older batch, 90.
    store.save(&group, "orders", 7, 120).await?;
    store
        .save_all(
            &group,
            &[
                Checkpoint::new("orders", 7, 90),
                Checkpoint::new("orders", 7, 110),
            ],
        )
        .await?;
    ensure_eq!(
        store.load(&group, "orders", 7).await?,
        Some(180),
        "load after the zombie's late saves"
    );
    Ok(())
}
