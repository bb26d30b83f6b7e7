//! The worker's figures through the `metrics` facade (feature `metrics`), published after every
//! round of the lease keeper, labelled `group`, `subscription` and `worker`. No exporter is
//! chosen here: install the one you use.

use metrics::{counter, gauge};

use crate::WorkerStats;
use crate::shared::Shared;

/// Gauge: partitions the worker holds.
pub const PARTITIONS_HELD: &str = "checkpoint_worker_partitions_held";
/// Gauge: live workers of the subscription in the last table read.
pub const LIVE_WORKERS: &str = "checkpoint_worker_live_workers";
/// Gauge: partitions nobody held live in the last table read.
pub const UNOWNED_PARTITIONS: &str = "checkpoint_worker_unowned_partitions";
/// Gauge: seconds the longest-unowned partition has been seen unowned (0 when none).
pub const LONGEST_UNOWNED_SECONDS: &str = "checkpoint_worker_longest_unowned_seconds";
/// Counter: leases granted to the worker.
pub const ACQUIRED_TOTAL: &str = "checkpoint_worker_acquired_total";
/// Counter: of those, the ones it asked another owner to hand over.
pub const HANDOVERS_IN_TOTAL: &str = "checkpoint_worker_handovers_in_total";
/// Counter: partitions it handed over and released.
pub const HANDOVERS_OUT_TOTAL: &str = "checkpoint_worker_handovers_out_total";
/// Counter: partitions it lost (deadline passed, or no longer held).
pub const LOSSES_TOTAL: &str = "checkpoint_worker_losses_total";
/// Counter: lease requests that failed.
pub const RENEW_FAILURES_TOTAL: &str = "checkpoint_worker_renew_failures_total";
/// Counter: lease-store requests made.
pub const STORE_REQUESTS_TOTAL: &str = "checkpoint_worker_store_requests_total";

/// Publishes the worker's figures.
pub(crate) fn publish(shared: &Shared) {
    let stats = WorkerStats::read(shared);
    let labels = [
        ("group", shared.group.clone()),
        ("subscription", shared.subscription.clone()),
        ("worker", shared.worker_id.clone()),
    ];
    gauge!(PARTITIONS_HELD, &labels).set(stats.held.len() as f64);
    gauge!(LIVE_WORKERS, &labels).set(stats.live_workers as f64);
    gauge!(UNOWNED_PARTITIONS, &labels).set(stats.unowned_partitions as f64);
    gauge!(LONGEST_UNOWNED_SECONDS, &labels)
        .set(stats.longest_unowned.unwrap_or_default().as_secs_f64());
    counter!(ACQUIRED_TOTAL, &labels).absolute(stats.acquired);
    counter!(HANDOVERS_IN_TOTAL, &labels).absolute(stats.handovers_in);
    counter!(HANDOVERS_OUT_TOTAL, &labels).absolute(stats.handovers_out);
    counter!(LOSSES_TOTAL, &labels).absolute(stats.losses);
    counter!(RENEW_FAILURES_TOTAL, &labels).absolute(stats.renew_failures);
    counter!(STORE_REQUESTS_TOTAL, &labels).absolute(stats.store_requests);
}
