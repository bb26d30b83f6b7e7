//! The readers of the source: one task per partition each, reading from 0 until they have
//! everything the writers committed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use checkpoint_core::source::Source;
use checkpoint_source_postgres::PostgresSource;
use tokio::task::JoinHandle;

use super::PARTITIONS;
use super::truth::{PartitionLog, Truth};

/// How long readers go on after the writers have stopped before giving up (the check then
/// reports what is missing).
const CATCH_UP: Duration = Duration::from_secs(60);

/// A reader of every partition; its logs once it has read everything (or given up).
pub fn spawn(
    reader: usize,
    source: PostgresSource,
    truth: Arc<Truth>,
) -> JoinHandle<(usize, Vec<PartitionLog>)> {
    tokio::spawn(async move {
        let tasks: Vec<_> = (0..PARTITIONS)
            .map(|partition| {
                let (source, truth) = (source.clone(), Arc::clone(&truth));
                tokio::spawn(async move { read_partition(&source, partition, &truth).await })
            })
            .collect();
        let mut logs = Vec::new();
        for task in tasks {
            logs.push(task.await.unwrap());
        }
        (reader, logs)
    })
}

async fn read_partition(source: &PostgresSource, partition: u32, truth: &Truth) -> PartitionLog {
    let mut log = PartitionLog::default();
    let mut from = 0;
    let mut done_at = None;
    loop {
        let page = source.read(partition, from, 64).await.unwrap();
        assert!(page.next >= from, "next {} below from {from}", page.next);
        let mut previous = None;
        for entry in &page.entries {
            assert!(entry.position >= from && previous < Some(entry.position));
            previous = Some(entry.position);
            let id = u64::from_be_bytes(entry.payload[..].try_into().unwrap());
            log.entries.push((entry.position, id));
        }
        if let Some(last) = previous {
            assert!(page.next > last);
        }
        log.pages.push((page.next, log.entries.len()));
        from = page.next;
        if !page.entries.is_empty() {
            continue;
        }
        if let Some(expected) = truth.expected() {
            let done_at = *done_at.get_or_insert_with(Instant::now);
            if log.entries.len() >= expected[partition as usize] || done_at.elapsed() > CATCH_UP {
                return log;
            }
        }
        let _ = tokio::time::timeout(Duration::from_millis(500), source.wait(partition, from))
            .await
            .map(Result::unwrap);
    }
}
