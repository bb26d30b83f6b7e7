//! Reading until what a case committed is readable: a source may delay an entry (on
//! PostgreSQL any open transaction of the cluster holds the readable horizon back), never
//! lose it, so a case waits on the source before it judges.

use std::time::{Duration, Instant};

use checkpoint_core::source::{Entry, Source};

use super::env_count;
use super::paging::{payloads, read_to_end};
use crate::Failure;

/// How long a case waits for what it committed to become readable, from
/// `CHECKPOINT_SOURCE_CATCH_UP_MS` (default 10 000): a delay the contract allows ("a long
/// transaction may delay reading"), which another session of the server may cause.
pub(crate) fn catch_up() -> Duration {
    Duration::from_millis(env_count("CHECKPOINT_SOURCE_CATCH_UP_MS", 10_000))
}

/// Reads `partition` from 0, page after page with every page checked, until every payload of
/// `expected` was read, waiting on the source (`wait` from the last `next`) while one is
/// missing, for at most [`catch_up`]. Returns what was read and where the next read starts.
///
/// The reads go on from each `next` they were given, never back: an entry that appears below
/// one (a late arrival) is never read here and fails the case, named as such.
pub(crate) async fn read_committed<S: Source + ?Sized>(
    source: &S,
    partition: u32,
    expected: &[String],
) -> Result<(Vec<Entry>, u64), Failure> {
    let limit = catch_up();
    let deadline = Instant::now() + limit;
    let mut entries = Vec::new();
    let mut next = 0;
    loop {
        let (more, after) = read_to_end(source, partition, next, || 1000).await?;
        entries.extend(more);
        next = after;
        let read = payloads(&entries);
        let missing: Vec<&String> = expected.iter().filter(|p| !read.contains(p)).collect();
        if missing.is_empty() {
            return Ok((entries, next));
        }
        let Some(left) = deadline.checked_duration_since(Instant::now()) else {
            return Err(not_read(source, partition, &missing, next, limit).await);
        };
        if let Ok(result) = tokio::time::timeout(left, source.wait(partition, next)).await {
            result?;
        }
        // A spurious wake-up must not turn this into a busy loop.
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// The failure for committed entries still not read: a late arrival when a read from 0
/// returns one below `next`, else not readable within the catch-up time.
async fn not_read<S: Source + ?Sized>(
    source: &S,
    partition: u32,
    missing: &[&String],
    next: u64,
    limit: Duration,
) -> Failure {
    let late = match read_to_end(source, partition, 0, || 1000).await {
        Ok((all, _)) => all
            .into_iter()
            .filter(|entry| entry.position < next)
            .filter(|entry| {
                let payload = String::from_utf8_lossy(&entry.payload);
                missing.iter().any(|missing| **missing == payload)
            })
            .map(|entry| entry.position)
            .collect(),
        Err(_) => Vec::new(),
    };
    if late.is_empty() {
        Failure::new(format!(
            "partition {partition}: committed {missing:?}, still not readable after {limit:?} \
             of reading from next = {next} and waiting on the source \
             (CHECKPOINT_SOURCE_CATCH_UP_MS sets how long)"
        ))
    } else {
        Failure::new(format!(
            "partition {partition}: committed {missing:?} appeared at positions {late:?}, below \
             next = {next} a read had already returned (a late arrival)"
        ))
    }
}
