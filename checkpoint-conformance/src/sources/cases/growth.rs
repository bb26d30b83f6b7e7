//! Partitions that grow: the count only goes up, existing partitions keep their entries, a
//! new partition is read from its start.

use std::time::Instant;

use checkpoint_core::source::{Entry, Source};

use super::commit_one;
use crate::sources::SourceLog;
use crate::sources::catch_up::{catch_up, read_committed};
use crate::sources::paging::read_to_end;
use crate::{CaseResult, Failure, ensure, ensure_eq};

/// Partitions written before the growth (at most).
const OLD: u32 = 3;
/// Partitions the log grows by.
const ADDED: u32 = 2;

/// On a log that [grows](SourceLog::grows): entries committed to the old partitions and read;
/// the log grown by two partitions behind the source's back; `discover_partitions` finds them
/// (waiting up to the catch-up time for a source whose count propagates), `partitions()`
/// follows, and no look-up ever answers less than one before; a read from the start of each
/// old partition returns what it returned before the growth, then what came after; each new
/// partition is empty, then returns what is committed to it, read from its start.
///
/// On a log that cannot grow: the count found is the count known, and it stays so.
pub async fn partitions_grow_and_keep_their_entries<L: SourceLog>(log: &L) -> CaseResult {
    let source = log.source();
    let mut count = Count::new(source);
    let known = count.look(source).await?;
    let old = known.min(OLD);
    let mut before = Vec::new();
    for partition in 0..old {
        let expected = commit_all(log, partition, "old", 3).await?;
        before.push(read_committed(source, partition, &expected).await?.0);
    }
    if !log.grows() {
        for _ in 0..3 {
            let found = count.look(source).await?;
            ensure_eq!(
                found,
                known,
                "the partition count of a log that cannot grow"
            );
        }
        return Ok(());
    }
    let target = known + ADDED;
    log.grow(target).await?;
    let grown = count.until_at_least(source, target).await?;
    for partition in known..target {
        check_new_partition(log, partition).await?;
    }
    for (partition, before) in (0..old).zip(&before) {
        let (again, _) = read_to_end(source, partition, 0, || 1000).await?;
        ensure!(
            again.len() >= before.len() && again[..before.len()] == before[..],
            "partition {partition}: a read from its start after the log grew to {grown} \
             partitions returned {:?}, before the growth {:?}: growth may never move or change \
             the entries of an existing partition (a renumbering does)",
            summary(&again),
            summary(before)
        );
        let mut expected = payloads(before);
        expected.extend(commit_all(log, partition, "after", 2).await?);
        read_committed(source, partition, &expected).await?;
    }
    for _ in 0..5 {
        count.look(source).await?;
    }
    Ok(())
}

/// A new partition: empty, then its committed entries read from its start.
async fn check_new_partition<L: SourceLog>(log: &L, partition: u32) -> CaseResult {
    let source = log.source();
    let page = source.read(partition, 0, 10).await?;
    ensure!(
        page.entries.is_empty(),
        "new partition {partition} held {:?} before anything was committed to it: growth \
         moved entries into it",
        summary(&page.entries)
    );
    ensure_eq!(
        source.head(partition).await?,
        None,
        "head of new partition {partition}"
    );
    let expected = commit_all(log, partition, "new", 3).await?;
    let (read, _) = read_committed(source, partition, &expected).await?;
    ensure_eq!(
        payloads(&read),
        expected,
        "new partition {partition} read from its start"
    );
    Ok(())
}

/// The highest count seen so far, checked at every look-up.
struct Count {
    highest: u32,
}

impl Count {
    fn new<S: Source>(source: &S) -> Self {
        Self {
            highest: source.partitions(),
        }
    }

    /// One `discover_partitions`: never below a count seen before, and `partitions()` at
    /// least what it found.
    async fn look<S: Source>(&mut self, source: &S) -> Result<u32, Failure> {
        let found = source.discover_partitions().await?;
        let highest = self.highest;
        ensure!(
            found >= highest,
            "discover_partitions found {found} partitions after {highest} were known: the \
             count never decreases"
        );
        let now = source.partitions();
        ensure!(
            now >= found,
            "partitions() is {now} after discover_partitions found {found}: it must be at least \
             what was found, so that the new partitions can be read"
        );
        self.highest = found;
        Ok(found)
    }

    /// Looks until the count is at least `target`, for at most the catch-up time (a log whose
    /// count reaches its readers late, like a topic's metadata).
    async fn until_at_least<S: Source>(&mut self, source: &S, target: u32) -> Result<u32, Failure> {
        let limit = catch_up();
        let deadline = Instant::now() + limit;
        loop {
            let found = self.look(source).await?;
            if found >= target {
                return Ok(found);
            }
            ensure!(
                Instant::now() < deadline,
                "the log grew to {target} partitions; discover_partitions still found {found} \
                 after {limit:?} (CHECKPOINT_SOURCE_CATCH_UP_MS sets how long)"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }
}

/// Commits `count` payloads `<tag>-<partition>-<n>` to `partition`, one transaction each.
async fn commit_all<L: SourceLog>(
    log: &L,
    partition: u32,
    tag: &str,
    count: u32,
) -> Result<Vec<String>, Failure> {
    let mut committed = Vec::new();
    for n in 0..count {
        let payload = format!("{tag}-{partition}-{n}");
        commit_one(log, partition, &payload).await?;
        committed.push(payload);
    }
    Ok(committed)
}

fn payloads(entries: &[Entry]) -> Vec<String> {
    entries.iter().map(|e| super::text(&e.payload)).collect()
}

/// Entries as (position, payload), for a message.
fn summary(entries: &[Entry]) -> Vec<(u64, String)> {
    entries
        .iter()
        .map(|e| (e.position, super::text(&e.payload)))
        .collect()
}
