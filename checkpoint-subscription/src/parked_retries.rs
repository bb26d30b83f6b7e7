//! Retries of parked entries that an operator asked for (`checkpoint parked retry …`): run by
//! the subscription that holds the entry's partition.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use checkpoint_core::Error;
use checkpoint_core::parked::{ParkedEntry, ParkedStore};

use crate::attempts::run_with_retries;
use crate::shared::Shared;

/// Every parked poll interval: lists the group's parked entries and retries those of this
/// subscription whose retry was asked for and whose partition this worker reads now. Runs
/// until aborted.
pub(crate) async fn retry_parked_entries(shared: Arc<Shared>, store: Arc<dyn ParkedStore>) {
    let mut ticks = tokio::time::interval(shared.settings.parked_poll_interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let parked = match store.parked(&shared.group).await {
            Ok(parked) => parked,
            Err(error) => {
                tracing::warn!(group = %shared.group, %error, "listing parked entries failed");
                continue;
            }
        };
        for record in parked {
            let ours = record.subscription == shared.subscription
                && record.retry_requested
                && shared.held_partition(record.partition).is_some();
            if ours && let Err(error) = retry_one(&shared, &*store, &record).await {
                tracing::warn!(
                    partition = record.partition,
                    position = record.position,
                    %error,
                    "recording the retry of a parked entry failed; it is tried again"
                );
            }
        }
    }
}

/// Re-reads the entry from the source and runs the handler on it as for a new entry: unparks
/// it when it succeeds, parks it again (retry request cleared, attempts added) when it fails
/// or the source no longer has it.
async fn retry_one(
    shared: &Shared,
    store: &dyn ParkedStore,
    record: &ParkedEntry,
) -> Result<(), Error> {
    let (partition, position) = (record.partition, record.position);
    let entry = match shared.source.read(partition, position, 1).await {
        Ok(page) => page
            .entries
            .into_iter()
            .next()
            .filter(|entry| entry.position == position),
        Err(error) => {
            tracing::warn!(partition, position, %error, "reading a parked entry failed");
            return Ok(());
        }
    };
    let Some(entry) = entry else {
        let error = format!("a retry was asked for, but the source has no entry at {position}");
        let again = ParkedEntry::new(
            &record.subscription,
            partition,
            position,
            error,
            record.attempts,
        );
        return store.park(&shared.group, &again).await;
    };
    match run_with_retries(shared, partition, &Arc::new(entry)).await {
        Ok(_) => {
            store
                .unpark(&shared.group, &record.subscription, partition, position)
                .await?;
            shared.counters.handled.fetch_add(1, Ordering::Relaxed);
            shared
                .counters
                .parked_retried
                .fetch_add(1, Ordering::Relaxed);
            tracing::info!(
                partition,
                position,
                "parked entry retried and handled; unparked"
            );
            Ok(())
        }
        Err(poison) => {
            let attempts = record.attempts.saturating_add(poison.attempts);
            let again = ParkedEntry::new(
                &record.subscription,
                partition,
                position,
                poison.error,
                attempts,
            );
            store.park(&shared.group, &again).await
        }
    }
}
