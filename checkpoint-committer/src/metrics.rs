//! Every partition's figures through the `metrics` facade (feature `metrics`), published after
//! every tick of the periodic flush. No exporter is chosen here: install the one you use.

use std::sync::atomic::Ordering;

use crate::shared::Shared;

/// Gauge: the highest position known to be in the store.
pub const COMMITTED_POSITION: &str = "checkpoint_committer_committed_position";
/// Gauge: the gap-free position now.
pub const GAP_FREE_POSITION: &str = "checkpoint_committer_gap_free_position";
/// Gauge: gap-free minus committed: positions done but not written yet.
pub const LAG_POSITIONS: &str = "checkpoint_committer_lag_positions";
/// Gauge: entries dispatched and not completed.
pub const IN_FLIGHT: &str = "checkpoint_committer_in_flight";
/// Gauge: seconds the oldest entry in flight has been running (0 when none runs).
pub const OLDEST_IN_FLIGHT_SECONDS: &str = "checkpoint_committer_oldest_in_flight_seconds";
/// Gauge: 1 while the last write of the partition failed, else 0.
pub const WRITE_FAILING: &str = "checkpoint_committer_write_failing";
/// Counter (label `group`): successful `save_all` calls.
pub const WRITES_TOTAL: &str = "checkpoint_committer_writes_total";
/// Counter (label `group`): failed `save_all` calls.
pub const WRITE_ERRORS_TOTAL: &str = "checkpoint_committer_write_errors_total";

/// Publishes the committer's figures: gauges labelled `group`, `subscription` and `partition`,
/// counters labelled `group`.
pub(crate) fn publish(shared: &Shared) {
    let group = shared.group.clone();
    for state in shared.held_partitions() {
        let stats = state.stats(shared.since_epoch());
        let labels = [
            ("group", group.clone()),
            ("subscription", stats.subscription.clone()),
            ("partition", stats.partition.to_string()),
        ];
        // Gauges are f64 in the facade: exact up to 2^53 (the crate doc says so).
        #[allow(clippy::cast_precision_loss)]
        {
            metrics::gauge!(COMMITTED_POSITION, &labels).set(stats.committed as f64);
            metrics::gauge!(GAP_FREE_POSITION, &labels).set(stats.gap_free as f64);
            metrics::gauge!(LAG_POSITIONS, &labels).set(stats.unwritten_positions() as f64);
            metrics::gauge!(IN_FLIGHT, &labels).set(stats.in_flight as f64);
        }
        metrics::gauge!(OLDEST_IN_FLIGHT_SECONDS, &labels).set(
            stats
                .oldest_in_flight_age
                .map_or(0.0, |age| age.as_secs_f64()),
        );
        metrics::gauge!(WRITE_FAILING, &labels).set(if stats.last_error.is_some() {
            1.0
        } else {
            0.0
        });
    }
    let labels = [("group", group)];
    metrics::counter!(WRITES_TOTAL, &labels).absolute(shared.writes.load(Ordering::Relaxed));
    metrics::counter!(WRITE_ERRORS_TOTAL, &labels)
        .absolute(shared.failed_writes.load(Ordering::Relaxed));
}
