//! The loop a user wrote before subscriptions (the README's, without the committer): per
//! partition, one task reads a page from the checkpoint, "handles" each entry, and saves the
//! checkpoint after the page.

use std::sync::Arc;
use std::time::{Duration, Instant};

use checkpoint_core::source::Source;
use tokio::task::JoinSet;

use super::{SUBSCRIPTION, TIMEOUT};
use crate::subject::{BenchError, BenchStore, context};

/// What one run of the loop took.
pub(super) struct Looped {
    /// From the first load to the last save of every partition.
    pub took: Duration,
    /// `save` calls, one per page.
    pub saves: u64,
}

/// Reads every partition of `source` in `group` until `per_partition` entries of each are
/// handled, all partitions at once.
pub(super) async fn run(
    store: &Arc<dyn BenchStore>,
    source: &Arc<dyn Source>,
    group: &str,
    per_partition: u64,
    page: usize,
) -> Result<Looped, BenchError> {
    let group: Arc<str> = group.into();
    let started = Instant::now();
    let mut tasks = JoinSet::new();
    for partition in 0..source.partitions() {
        let (store, source, group) = (Arc::clone(store), Arc::clone(source), Arc::clone(&group));
        tasks.spawn(async move {
            partition_loop(&*store, &*source, &group, partition, per_partition, page).await
        });
    }
    let mut saves = 0;
    while let Some(done) = tasks.join_next().await {
        saves += done??;
    }
    Ok(Looped {
        took: started.elapsed(),
        saves,
    })
}

/// One partition's loop; returns its saves.
async fn partition_loop(
    store: &dyn BenchStore,
    source: &dyn Source,
    group: &str,
    partition: u32,
    per_partition: u64,
    page: usize,
) -> Result<u64, BenchError> {
    let mut from = store
        .load(group, SUBSCRIPTION, partition)
        .await?
        .unwrap_or(0);
    let (mut handled, mut saves) = (0, 0);
    while handled < per_partition {
        let read = source.read(partition, from, page).await?;
        if read.entries.is_empty() {
            // Everything was written before the loop started; a source may still show it
            // a moment later (a stream's consumer), so wait rather than spin.
            tokio::time::timeout(TIMEOUT, source.wait(partition, from))
                .await
                .map_err(context("the hand loop waited for entries already written"))??;
            continue;
        }
        for entry in &read.entries {
            std::hint::black_box(entry);
            handled += 1;
        }
        from = read.next;
        store.save(group, SUBSCRIPTION, partition, from).await?;
        saves += 1;
    }
    Ok(saves)
}
