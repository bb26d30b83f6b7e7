//! Concurrent histories with a retire.

use checkpoint_core::CheckpointAdmin;

use crate::CaseResult;
use crate::history::{HistoryConfig, run_retire_histories};

/// Owners and zombies keep saving (`save` and `save_all`, to partitions with and without a
/// checkpoint) while one subscription is retired: once the retire returns, no `load` or
/// `list` shows it again, and the other subscription, saved all the while, stays a
/// linearizable max-register. `CHECKPOINT_RETIRE_HISTORIES` sets how many histories run
/// (default 32), `CHECKPOINT_SEED` replays a failing run.
pub async fn retire_during_concurrent_histories<S: CheckpointAdmin + ?Sized>(
    store: &S,
) -> CaseResult {
    run_retire_histories(store, &HistoryConfig::retire_from_env()).await
}
