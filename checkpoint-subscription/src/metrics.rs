//! The subscription's figures through the `metrics` facade (feature `metrics`), published every
//! [lag interval](crate::SubscriptionBuilder::lag_interval). Per partition read, labelled
//! `group`, `subscription`, `partition`: the lag and what runs; per subscription, labelled
//! `group`, `subscription`: counters of what happened. The worker's own figures
//! (`checkpoint_worker_*`) are published by the worker. No exporter is chosen here.

use metrics::{counter, gauge};

use crate::SubscriptionStats;

/// Gauge: positions from the checkpoint to the source's head (0 when caught up).
pub const LAG_POSITIONS: &str = "checkpoint_subscription_lag_positions";
/// Gauge: seconds since the oldest unfinished entry was appended (0 when caught up or unknown).
pub const LAG_SECONDS: &str = "checkpoint_subscription_lag_seconds";
/// Gauge: entries handed to handlers and not finished.
pub const IN_FLIGHT: &str = "checkpoint_subscription_in_flight";
/// Gauge: 1 while the partition is stopped on a poison entry, else 0.
pub const STOPPED_ON_POISON: &str = "checkpoint_subscription_stopped_on_poison";
/// Counter: entries whose handler succeeded.
pub const HANDLED_TOTAL: &str = "checkpoint_subscription_handled_total";
/// Counter: handler runs that failed and were retried.
pub const RETRIES_TOTAL: &str = "checkpoint_subscription_retries_total";
/// Counter: entries parked after their last retry.
pub const PARKED_TOTAL: &str = "checkpoint_subscription_parked_total";
/// Counter: failed reads and waits of the source.
pub const SOURCE_ERRORS_TOTAL: &str = "checkpoint_subscription_source_errors_total";

/// Publishes `stats` of `subscription` in `group`.
pub(crate) fn publish(group: &str, subscription: &str, stats: &SubscriptionStats) {
    for partition in &stats.partitions {
        let labels = [
            ("group", group.to_owned()),
            ("subscription", subscription.to_owned()),
            ("partition", partition.partition.to_string()),
        ];
        gauge!(LAG_POSITIONS, &labels).set(partition.lag_positions as f64);
        gauge!(LAG_SECONDS, &labels).set(partition.lag_time.unwrap_or_default().as_secs_f64());
        gauge!(IN_FLIGHT, &labels).set(partition.in_flight as f64);
        gauge!(STOPPED_ON_POISON, &labels).set(f64::from(u8::from(partition.stopped_at.is_some())));
    }
    let labels = [
        ("group", group.to_owned()),
        ("subscription", subscription.to_owned()),
    ];
    counter!(HANDLED_TOTAL, &labels).absolute(stats.handled);
    counter!(RETRIES_TOTAL, &labels).absolute(stats.retries);
    counter!(PARKED_TOTAL, &labels).absolute(stats.parked);
    counter!(SOURCE_ERRORS_TOTAL, &labels).absolute(stats.source_errors);
}
