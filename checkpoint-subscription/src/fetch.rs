//! The read-ahead of one partition: pages from the source into a bounded buffer, and the
//! source's head for lag.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use checkpoint_core::source::Entry;
use tokio::sync::mpsc;

use crate::partition::PartitionState;
use crate::retry::Retry;
use crate::settings::{FIRST_READ_PAUSE, LONGEST_WAIT};
use crate::shared::Shared;

/// Reads the partition from `from` on, page after page, into `pages` (bounded: a full buffer
/// holds the reads back). When caught up, waits on the source (at most [`LONGEST_WAIT`], in
/// case a notification is lost). A failed read or wait is retried after a pause that doubles up
/// to [`LONGEST_WAIT`]. Runs until the reader drops `pages` or aborts it.
pub(crate) async fn read_ahead(
    shared: Arc<Shared>,
    state: Arc<PartitionState>,
    mut from: u64,
    pages: mpsc::Sender<Vec<Entry>>,
) {
    let (source, partition) = (&shared.source, state.partition);
    let pauses = Retry::exponential(FIRST_READ_PAUSE, LONGEST_WAIT);
    let mut failures = 0;
    loop {
        let page = match source
            .read(partition, from, shared.settings.page_size)
            .await
        {
            Ok(page) => page,
            Err(error) => {
                failures += 1;
                shared
                    .counters
                    .source_errors
                    .fetch_add(1, Ordering::Relaxed);
                tracing::warn!(partition, from, %error, "reading the source failed; retrying");
                tokio::time::sleep(pauses.pause(failures)).await;
                continue;
            }
        };
        failures = 0;
        from = page.next.max(from);
        if page.entries.is_empty() {
            let waited = tokio::time::timeout(LONGEST_WAIT, source.wait(partition, from)).await;
            // A timeout is no failure: read again anyway (a notification may have been lost).
            if let Ok(Err(error)) = waited {
                shared
                    .counters
                    .source_errors
                    .fetch_add(1, Ordering::Relaxed);
                tracing::warn!(partition, from, %error, "waiting on the source failed");
                tokio::time::sleep(pauses.pause(1)).await;
            }
            continue;
        }
        state.read(
            page.entries
                .iter()
                .map(|entry| (entry.position, entry.appended_at)),
        );
        if pages.send(page.entries).await.is_err() {
            return;
        }
    }
}

/// Reads the source's head of the partition every lag interval, so that the lag shows a
/// backlog the reader has not reached yet.
pub(crate) async fn watch_head(shared: Arc<Shared>, state: Arc<PartitionState>) {
    let mut ticks = tokio::time::interval(shared.settings.lag_interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        match shared.source.head(state.partition).await {
            Ok(head) => state.set_head(head),
            Err(error) => {
                shared
                    .counters
                    .source_errors
                    .fetch_add(1, Ordering::Relaxed);
                tracing::debug!(partition = state.partition, %error, "reading the head failed");
            }
        }
    }
}
