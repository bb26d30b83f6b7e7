//! Fresh random groups, so cases never see each other's checkpoints.

use std::future::Future;
use std::sync::Mutex;

tokio::task_local! {
    /// The groups the running case made, so that its failure can name them.
    static CASE_GROUPS: Mutex<Vec<String>>;
}

/// Runs `case`, noting every group [`fresh_group`] makes on its task; returns them with the
/// case's output, oldest first.
pub(crate) async fn noting_groups<F: Future>(case: F) -> (F::Output, Vec<String>) {
    CASE_GROUPS
        .scope(Mutex::new(Vec::new()), async {
            let output = case.await;
            let groups = CASE_GROUPS
                .try_with(|groups| {
                    std::mem::take(&mut *groups.lock().unwrap_or_else(|e| e.into_inner()))
                })
                .unwrap_or_default();
            (output, groups)
        })
        .await
}

/// A group name no other case or run uses: `ck-<label>-<16 random hex digits>`.
///
/// Every case works in groups of its own, so all cases can run in parallel against one shared
/// server, and what a run leaves behind never disturbs another.
pub fn fresh_group(label: &str) -> String {
    // 64 random bits: a clash among the groups of every run against one server is out of reach.
    let group = format!("ck-{label}-{:016x}", fastrand::u64(..));
    // Outside a case run by the kit's macros there is nothing to note it in.
    let _ = CASE_GROUPS.try_with(|groups| {
        groups
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(group.clone());
    });
    group
}
