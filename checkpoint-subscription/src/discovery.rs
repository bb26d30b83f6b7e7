//! Partitions that grow: asking the source for its count every discovery interval and raising
//! the worker's.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use checkpoint_worker::{Worker, WorkerError};
use tokio::time::MissedTickBehavior;

use crate::shared::Shared;

/// Asks the source for its partition count at start and every discovery interval, for as long
/// as the subscription lives, and raises the worker's count when it grew. A failed look-up is
/// counted with the source errors and tried again at the next interval: the partitions known
/// are read meanwhile. A count below the worker's changes nothing (a source refuses a count
/// that went down; the worker's never decreases).
pub(crate) async fn discover_partitions(shared: Arc<Shared>, worker: Worker) {
    let mut ticks = tokio::time::interval(shared.settings.discovery_interval);
    // A slow look-up must not be followed by a burst of them.
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let count = match shared.source.discover_partitions().await {
            Ok(count) => count,
            Err(error) => {
                shared
                    .counters
                    .source_errors
                    .fetch_add(1, Ordering::Relaxed);
                tracing::warn!(group = %shared.group, subscription = %shared.subscription, %error, "looking the source's partition count up failed; trying again at the next interval");
                continue;
            }
        };
        if count <= worker.partitions() {
            continue;
        }
        match worker.grow_partitions(count) {
            Ok(_) => {
                tracing::info!(group = %shared.group, subscription = %shared.subscription, partitions = count, "the source has more partitions: leasing the new ones");
            }
            Err(WorkerError::Stopped) => return,
            Err(error) => {
                tracing::warn!(group = %shared.group, subscription = %shared.subscription, partitions = count, %error, "the worker refused the source's new partition count");
            }
        }
    }
}
