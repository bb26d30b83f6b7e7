//! Readers of the simulated sequence log with one flaw each, the ones that lose entries of
//! real event tables, which the source kit must catch. Without a flaw the reader is the
//! watermark source, which passes every case.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use checkpoint_conformance::sources::kafka_log::{
    KafkaLog, KafkaSourceLog, ReadCommittedSource, TxState,
};
use checkpoint_conformance::sources::sequence::{
    Committed, SequenceLog, SequenceSourceLog, Snapshot, WatermarkSource,
};
use checkpoint_core::source::{Entry, Page, Source, SourceError};

/// What is wrong with a [`BrokenSource`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceFlaw {
    /// Nothing: the watermark source.
    None,
    /// `WHERE position >= checkpoint ORDER BY position` over everything committed: a
    /// transaction that took a position earlier and commits later lands behind the reader.
    AfterCheckpoint,
    /// Reads only entries of transactions below `xmin` (`pg_snapshot_xmin`), but ordered by
    /// position: a transaction that began later and took an earlier position commits below
    /// what was read.
    XminOrderedByPosition,
    /// Waits at the watermark, but when it has not moved for [`GAP_TIMEOUT`] takes the gap as
    /// final and reads past it (Marten's fallback).
    SkipsGapAfterTimeout,
    /// A page that reaches `max` loses its last entry, while `next` goes past it.
    DropsLastOfPage,
    /// `wait` listens on a notification connection that dropped, and has no polling
    /// fallback: it never wakes.
    LostWakeUp,
    /// `wait` returns at once, always: the reader busy-polls.
    BusyWait,
    /// `discover_partitions` asks a stale replica every other time, which answers the count
    /// the log was created with: after a growth the count drops back.
    CountDrops,
    /// `discover_partitions` finds the new count, but `partitions()` stays at the count the
    /// source was opened with (a cached count never raised): the new partitions are refused.
    StaleCount,
    /// Partition `p` is read from log partition `(p + added) mod count`, `added` the
    /// partitions grown since the source was opened: a numbering that a growth shifts, as a
    /// routing by `hash mod count` does, so old partitions show other partitions' entries.
    Renumbers,
    /// `heads` answers in partition order instead of the order asked (a batched query that
    /// sorts by partition, read back by position): a partition gets another one's head.
    HeadsInPartitionOrder,
}

/// How long [`SourceFlaw::SkipsGapAfterTimeout`] waits at a gap.
const GAP_TIMEOUT: Duration = Duration::from_millis(50);

/// A reader of a [`SequenceLog`] with one [`SourceFlaw`].
#[derive(Debug)]
pub struct BrokenSource {
    log: Arc<SequenceLog>,
    correct: WatermarkSource,
    flaw: SourceFlaw,
    /// The watermark seen last, and since when ([`SourceFlaw::SkipsGapAfterTimeout`]).
    stuck: Mutex<(u64, Instant)>,
    /// The partition count when the source was opened.
    opened_with: u32,
    /// What `partitions()` answers for [`SourceFlaw::CountDrops`]: the last count found.
    found: AtomicU32,
    /// Look-ups so far ([`SourceFlaw::CountDrops`]).
    looks: AtomicU32,
}

impl BrokenSource {
    /// A fresh log of three partitions read with `flaw`.
    pub fn log(flaw: SourceFlaw) -> SequenceSourceLog<BrokenSource> {
        let log = SequenceLog::new(3);
        let source = BrokenSource {
            log: Arc::clone(&log),
            correct: WatermarkSource::new(Arc::clone(&log)),
            flaw,
            stuck: Mutex::new((0, Instant::now())),
            opened_with: 3,
            found: AtomicU32::new(3),
            looks: AtomicU32::new(0),
        };
        SequenceSourceLog::new(log, source)
    }

    /// The watermark as this reader takes it: past every position once it has been stuck for
    /// the gap timeout.
    fn skipping_watermark(&self, snapshot: &Snapshot) -> u64 {
        let mut stuck = self.stuck.lock().unwrap_or_else(PoisonError::into_inner);
        if stuck.0 != snapshot.watermark {
            *stuck = (snapshot.watermark, Instant::now());
        }
        if stuck.1.elapsed() > GAP_TIMEOUT {
            u64::MAX
        } else {
            snapshot.watermark
        }
    }
}

impl BrokenSource {
    /// The log partition read for `partition`: itself, but for [`SourceFlaw::Renumbers`].
    fn log_partition(&self, partition: u32) -> u32 {
        let count = self.log.partitions();
        match self.flaw {
            SourceFlaw::Renumbers if partition < count => {
                (partition + (count - self.opened_with)) % count
            }
            _ => partition,
        }
    }
}

/// The first `max` of `entries` at or after `from`, with `next` after the last (or `from`).
fn naive_page<'a>(entries: impl Iterator<Item = &'a Committed>, from: u64, max: usize) -> Page {
    let entries: Vec<Entry> = entries
        .filter(|c| c.entry.position >= from)
        .take(max)
        .map(|c| c.entry.clone())
        .collect();
    let next = entries.last().map_or(from, |last| last.position + 1);
    Page { entries, next }
}

#[async_trait]
impl Source for BrokenSource {
    fn partitions(&self) -> u32 {
        match self.flaw {
            SourceFlaw::CountDrops => self.found.load(Ordering::SeqCst),
            SourceFlaw::StaleCount => self.opened_with,
            _ => self.log.partitions(),
        }
    }

    async fn discover_partitions(&self) -> Result<u32, SourceError> {
        let looks = self.looks.fetch_add(1, Ordering::SeqCst) + 1;
        let found = match self.flaw {
            SourceFlaw::CountDrops if looks.is_multiple_of(2) => self.opened_with,
            _ => self.log.partitions(),
        };
        self.found.store(found, Ordering::SeqCst);
        Ok(found)
    }

    async fn read(&self, partition: u32, from: u64, max: usize) -> Result<Page, SourceError> {
        SourceError::check_read(partition, self.partitions(), from, max)?;
        let partition = self.log_partition(partition);
        let snapshot = self.log.snapshot(partition)?;
        Ok(match self.flaw {
            SourceFlaw::AfterCheckpoint => naive_page(snapshot.committed.iter(), from, max),
            SourceFlaw::XminOrderedByPosition => naive_page(
                snapshot.committed.iter().filter(|c| c.tx < snapshot.xmin),
                from,
                max,
            ),
            SourceFlaw::SkipsGapAfterTimeout => {
                let watermark = self.skipping_watermark(&snapshot);
                naive_page(
                    snapshot
                        .committed
                        .iter()
                        .filter(|c| c.entry.position < watermark),
                    from,
                    max,
                )
            }
            SourceFlaw::DropsLastOfPage => {
                let mut page = self.correct.read(partition, from, max).await?;
                if page.entries.len() == max && max > 1 {
                    page.entries.pop();
                }
                page
            }
            SourceFlaw::None
            | SourceFlaw::LostWakeUp
            | SourceFlaw::BusyWait
            | SourceFlaw::CountDrops
            | SourceFlaw::StaleCount
            | SourceFlaw::Renumbers
            | SourceFlaw::HeadsInPartitionOrder => self.correct.read(partition, from, max).await?,
        })
    }

    async fn wait(&self, partition: u32, from: u64) -> Result<(), SourceError> {
        match self.flaw {
            SourceFlaw::BusyWait => {
                SourceError::check_partition(partition, self.log.partitions())?;
                SourceError::check_from(from)
            }
            SourceFlaw::LostWakeUp => {
                SourceError::check_partition(partition, self.log.partitions())?;
                SourceError::check_from(from)?;
                if !self
                    .correct
                    .read(partition, from, 1)
                    .await?
                    .entries
                    .is_empty()
                {
                    return Ok(());
                }
                // The notification that would have woken it was sent on a dropped connection.
                std::future::pending().await
            }
            _ => self.correct.wait(self.log_partition(partition), from).await,
        }
    }

    async fn head(&self, partition: u32) -> Result<Option<u64>, SourceError> {
        self.correct.head(self.log_partition(partition)).await
    }

    async fn heads(&self, partitions: &[u32]) -> Result<Vec<Option<u64>>, SourceError> {
        let mut asked = partitions.to_vec();
        if self.flaw == SourceFlaw::HeadsInPartitionOrder {
            asked.sort_unstable();
        }
        let mut heads = Vec::with_capacity(asked.len());
        for partition in asked {
            heads.push(if partition < self.partitions() {
                self.head(partition).await?
            } else {
                None
            });
        }
        Ok(heads)
    }
}

/// How a [`KafkaReader`] mistakes a Kafka log's isolation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IsolationFlaw {
    /// `isolation.level=read_uncommitted`: reads up to the high watermark and returns every
    /// data record, those of open and aborted transactions too.
    ReadUncommitted,
    /// Drops the records it cannot see as committed yet (of open or aborted transactions), but
    /// reads up to the high watermark instead of the last stable offset: its `next` passes an
    /// open transaction's records, which commit later below it (the skip).
    HighWatermark,
}

/// A reader of a simulated Kafka log with one [`IsolationFlaw`] in `read`; its `wait` and
/// `head` are the read-committed source's.
#[derive(Debug)]
pub struct KafkaReader {
    log: Arc<KafkaLog>,
    correct: ReadCommittedSource,
    flaw: IsolationFlaw,
}

impl KafkaReader {
    /// A reader of `log` with `flaw`.
    pub fn new(log: Arc<KafkaLog>, flaw: IsolationFlaw) -> Self {
        Self {
            correct: ReadCommittedSource::new(Arc::clone(&log)),
            log,
            flaw,
        }
    }

    /// A fresh Kafka log of three partitions read with `flaw`.
    pub fn log(flaw: IsolationFlaw) -> KafkaSourceLog<KafkaReader> {
        let log = KafkaLog::new(3);
        KafkaSourceLog::new(Arc::clone(&log), KafkaReader::new(log, flaw))
    }
}

#[async_trait]
impl Source for KafkaReader {
    fn partitions(&self) -> u32 {
        self.log.partitions()
    }

    async fn read(&self, partition: u32, from: u64, max: usize) -> Result<Page, SourceError> {
        SourceError::check_read(partition, self.log.partitions(), from, max)?;
        let snapshot = self.log.snapshot(partition)?;
        let end = snapshot.high_watermark;
        let entries: Vec<Entry> = snapshot
            .data(from, end)
            .filter(|(_, state)| match self.flaw {
                IsolationFlaw::ReadUncommitted => true,
                IsolationFlaw::HighWatermark => *state == TxState::Committed,
            })
            .map(|(entry, _)| entry.clone())
            .take(max)
            .collect();
        let next = match entries.last() {
            Some(last) if entries.len() == max => last.position + 1,
            // The flaw: everything below the high watermark taken as final.
            _ => from.max(end),
        };
        Ok(Page { entries, next })
    }

    async fn wait(&self, partition: u32, from: u64) -> Result<(), SourceError> {
        self.correct.wait(partition, from).await
    }

    async fn head(&self, partition: u32) -> Result<Option<u64>, SourceError> {
        self.correct.head(partition).await
    }
}
