//! The committer under a worker: the committer's end-to-end row (16 handlers over 64
//! partitions, completions shuffled, entries counted once written) with the committer handles
//! of a worker's assignments, against the same row with the committer alone, interleaved
//! round by round in the same run.

use std::sync::Arc;
use std::time::Duration;

use checkpoint_core::CheckpointStore;
use checkpoint_worker::{Assignment, Worker};

use super::Findings;
use super::report::Figure;
use crate::committer::{
    self, PARTITIONS, SUBSCRIPTION, Tally, check_stored, drive, start_committer, with_committer,
};
use crate::subject::{BenchError, BenchStore};

/// The worker may cost this much of the committer alone's entries per second (the target).
const WITHIN: f64 = 0.10;

/// How long a worker alone takes to acquire the 64 partitions before the run fails.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(60);

/// The rounds of both, interleaved, and the figure.
pub(super) async fn measure(
    findings: &mut Findings,
    backend: &'static str,
    store: &Arc<dyn BenchStore>,
    smoke: bool,
) -> Result<(), BenchError> {
    let plan = committer::Plan::new(smoke);
    let checkpoints: Arc<dyn CheckpointStore> = Arc::clone(store) as Arc<dyn CheckpointStore>;
    if plan.warm_up {
        let slice = Duration::from_millis(300);
        with_committer(&checkpoints, slice).await?;
        under_worker(store, &checkpoints, slice).await?;
    }
    let (mut alone, mut under) = (Tally::default(), Tally::default());
    for _ in 0..plan.rounds {
        alone.add(with_committer(&checkpoints, plan.slice).await?);
        under.add(under_worker(store, &checkpoints, plan.slice).await?);
    }
    let (with, without) = (under.per_sec(), alone.per_sec());
    let ratio = with / without;
    findings.figures.push(Figure {
        row: "Committer under a worker",
        backend,
        setting: format!(
            "the committer's end-to-end row ({PARTITIONS} partitions), {} round(s) of {} ms \
             each, interleaved; the worker with its default lease",
            plan.rounds,
            plan.slice.as_millis()
        ),
        measured: format!(
            "{with:.0} entries/s under the worker vs {without:.0} alone: {:.0} %",
            ratio * 100.0
        ),
        target: format!("within {:.0} % of the committer alone", WITHIN * 100.0),
        anchor: "the committer alone, this run",
        met: Some(ratio >= 1.0 - WITHIN),
    });
    Ok(())
}

/// One round of the end-to-end row through a worker's assignments: the worker acquires the 64
/// partitions (untimed), the handlers run on the assignments' handles, then the worker hands
/// everything over and leaves (untimed) and the stored checkpoints are checked.
async fn under_worker(
    store: &Arc<dyn BenchStore>,
    checkpoints: &Arc<dyn CheckpointStore>,
    slice: Duration,
) -> Result<Tally, BenchError> {
    let group = committer::group("under-worker");
    let committer = start_committer(checkpoints, &group)?;
    let (worker, mut assignments) =
        Worker::builder(Arc::clone(store), &*group, SUBSCRIPTION, PARTITIONS)
            .worker_id(format!("{group}-worker"))
            .committer(committer.clone())
            .start()?;
    let mut held: Vec<Assignment> = Vec::new();
    while held.len() < PARTITIONS as usize {
        let next = tokio::time::timeout(ACQUIRE_TIMEOUT, assignments.next()).await;
        held.push(
            next.ok()
                .flatten()
                .ok_or("the worker did not acquire every partition")?,
        );
    }
    held.sort_by_key(Assignment::partition);
    let partitions: Vec<_> = held.iter().map(|a| a.committer().clone()).collect();
    let (tally, ends) = drive(&committer, &partitions, slice).await?;
    // Drained: the handlers are done, so the shutdown's handovers need not wait.
    drop(partitions);
    drop(held);
    worker.shutdown().await?;
    committer.shutdown().await?;
    check_stored(checkpoints, &group, &ends).await?;
    Ok(tally)
}
