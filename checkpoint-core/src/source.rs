//! The source contract: reading a partition of a log from a checkpoint without ever skipping a
//! committed entry.
//!
//! A [`Source`] serves the entries of a partitioned log in position order. Its one safety
//! clause (CONTRACT.md, "Sources"): **once a read has told a reader that it may go on from
//! position `n` ([`Page::next`]), no entry below `n` that the reads did not return ever
//! appears later**, whatever the writers' commit order, rollbacks or long transactions. A long
//! transaction may delay reading; it must never cause a skip.
//!
//! Positions are `u64`, strictly increasing within a partition and sparse allowed. A reader
//! resumes at a stored checkpoint, which is the first position it has not completed, so reads
//! take `from` inclusive: a read from `from` returns entries at `from` or after.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! use checkpoint_core::source::{InMemorySource, Source};
//!
//! let source = InMemorySource::new(2);
//! source.append(0, b"first".to_vec())?;
//! source.append(0, b"second".to_vec())?;
//!
//! let page = source.read(0, 0, 10).await?;
//! assert_eq!(page.entries.len(), 2);
//! assert_eq!(page.entries[1].payload, b"second");
//! // Nothing below `next` can still appear: it is where the next read starts.
//! assert_eq!(page.next, page.entries[1].position + 1);
//! assert!(source.read(0, page.next, 10).await?.entries.is_empty());
//! # Ok::<(), checkpoint_core::source::SourceError>(())
//! # }).unwrap();
//! ```

mod error;
mod memory;

use std::time::SystemTime;

use async_trait::async_trait;

pub use error::SourceError;
pub use memory::InMemorySource;

/// One entry of a log partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its position in its partition: strictly increasing, not necessarily dense.
    pub position: u64,
    /// The key the writer gave it (a stream id, an aggregate id), when the source keeps one:
    /// entries of one key may be handled in order while other keys run concurrently.
    pub key: Option<String>,
    /// The entry itself, as the writer stored it.
    pub payload: Vec<u8>,
    /// When it was appended, by the log's clock, when the source keeps it (for lag in time).
    pub appended_at: Option<SystemTime>,
}

impl Entry {
    /// An entry with no key and no time.
    pub fn new(position: u64, payload: impl Into<Vec<u8>>) -> Self {
        Self {
            position,
            key: None,
            payload: payload.into(),
            appended_at: None,
        }
    }
}

/// What one [`Source::read`] returned: the entries, and where the next read starts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Page {
    /// The next entries at or after the read's `from`, in position order, at most `max`.
    pub entries: Vec<Entry>,
    /// Where the next read starts: after the last entry returned, or further when the source
    /// knows that nothing can still appear below it (a gap that is final). Never below `from`.
    /// No entry below `next` that this or an earlier read did not return ever appears later.
    pub next: u64,
}

/// A partitioned log that can be read from any position without skipping a committed entry.
///
/// The trait is object safe: `Arc<dyn Source>` works.
#[async_trait]
pub trait Source: Send + Sync {
    /// How many partitions the log has, as last known: partitions are `0..partitions()`. No
    /// I/O; it never decreases, and after [`discover_partitions`](Self::discover_partitions)
    /// returned `n` it is at least `n`.
    fn partitions(&self) -> u32;

    /// Looks the log's current partition count up and returns it; from then on
    /// [`partitions`](Self::partitions) is at least that.
    ///
    /// A log may take more partitions while it is read (a NATS stream given more subjects, an
    /// event table whose writers are allowed more partition numbers, a Kafka topic grown); it
    /// never takes fewer, and growing never changes what an existing partition holds: its
    /// entries stay where they are, at the same positions, so a checkpoint keeps its meaning.
    /// A new partition is read from its start like any partition without a checkpoint.
    /// Whatever would move entries between existing partitions (a lower count, a renumbering)
    /// is refused with [`SourceError::Setup`], and the count stays as it was.
    ///
    /// Named *discover* because it is a look-up: it asks the log (one request where the count
    /// is stored there) and may find more than was known; it never changes the log, which
    /// only a writer or an operator grows. The default suits a log whose count is fixed: it
    /// returns [`partitions`](Self::partitions) without I/O. A subscription calls it every
    /// discovery interval, so it should cost one small request at most.
    async fn discover_partitions(&self) -> Result<u32, SourceError> {
        Ok(self.partitions())
    }

    /// The next entries of `partition` at or after `from`, in position order, at most `max`
    /// (`max` ≥ 1), and where the next read starts ([`Page::next`]).
    ///
    /// Returns only entries that can no longer be preceded by another: an entry whose writer
    /// has not committed, or that a concurrent writer could still precede, waits for a later
    /// read. An empty page means nothing is readable yet at or after `from`.
    async fn read(&self, partition: u32, from: u64, max: usize) -> Result<Page, SourceError>;

    /// Resolves when a read of `partition` from `from` may return something new: at once if it
    /// already can, otherwise when a writer commits (by a notification where the log has one,
    /// by polling at the source's interval where it has not). It may resolve spuriously; it
    /// never busy-polls. Bound it with a timeout of your own.
    async fn wait(&self, partition: u32, from: u64) -> Result<(), SourceError>;

    /// The position of the last entry of `partition` that a read can return now, or `None`
    /// when it has none: with a checkpoint, the reader's lag.
    async fn head(&self, partition: u32) -> Result<Option<u64>, SourceError>;

    /// The [`head`](Self::head) of each of `partitions`, in the order asked (a partition asked
    /// twice is answered twice): what a fleet view or a lag report reads for every partition at
    /// once, every few seconds.
    ///
    /// A partition the source does not have (at or above [`partitions`](Self::partitions)) is
    /// answered `None` and not asked for: a caller may name partitions it knows from elsewhere
    /// (its checkpoints) without checking them first. Each answer is what `head` would return
    /// for that partition at some instant during the call: a read-only snapshot that changes
    /// nothing, **not** atomic across partitions unless the source says so (a head read early
    /// may be older than one read late). An error of any partition fails the whole call.
    ///
    /// The default asks `head` once per partition, one after the other: as many requests as
    /// partitions. A source over a log that can answer many partitions at once overrides it
    /// with as few requests as the log allows (one statement on an SQL table, one request per
    /// leader broker on Kafka) and says how many in its documentation; callers bound the whole
    /// call with one timeout either way.
    async fn heads(&self, partitions: &[u32]) -> Result<Vec<Option<u64>>, SourceError> {
        let count = self.partitions();
        let mut heads = Vec::with_capacity(partitions.len());
        for &partition in partitions {
            heads.push(if partition < count {
                self.head(partition).await?
            } else {
                None
            });
        }
        Ok(heads)
    }
}
