//! A simulated sequence log: positions taken from a shared counter at insert and made visible
//! at commit, as a PostgreSQL sequence behind an event table; and the watermark source that
//! reads it without a late arrival.
//!
//! The kit's own tests run the source cases over it, with the correct [`WatermarkSource`] and
//! with the naive readers that lose entries on real event tables (`position > checkpoint`,
//! `tx_id < xmin` ordered by position, a gap skipped after a timeout), which read the same
//! [`Snapshot`]s. It is in memory and deterministic enough to fail in every run.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use async_trait::async_trait;
use checkpoint_core::source::{Entry, Page, Source, SourceError};
use tokio::sync::watch;

use super::{LogTransaction, SourceLog};

/// An entry a transaction committed, with the transaction's id.
#[derive(Debug, Clone)]
pub struct Committed {
    /// The id of the transaction that wrote it (ids rise in the order transactions began).
    pub tx: u64,
    /// The entry.
    pub entry: Entry,
}

/// What a reader of one partition sees at one instant, as a query in one snapshot would.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The partition's committed entries, in position order.
    pub committed: Vec<Committed>,
    /// The lowest id of a running transaction, or the next id when none runs
    /// (`pg_snapshot_xmin`).
    pub xmin: u64,
    /// The lowest position a running transaction holds, or the next position when none
    /// holds one: no entry can still appear below it. The same for every partition, since
    /// the counter is shared.
    pub watermark: u64,
}

#[derive(Debug)]
struct State {
    next_position: u64,
    next_tx: u64,
    /// Running transactions: id and the first position each took, if any.
    running: Vec<(u64, Option<u64>)>,
    committed: Vec<Vec<Committed>>,
}

/// The log: a position counter shared by all partitions, transactions that take a position at
/// each append and make their entries visible at commit, so positions commit out of order.
#[derive(Debug)]
pub struct SequenceLog {
    state: Mutex<State>,
    changes: watch::Sender<u64>,
}

impl SequenceLog {
    /// An empty log of `partitions` partitions; positions start at 1.
    pub fn new(partitions: u32) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State {
                next_position: 1,
                next_tx: 1,
                running: Vec::new(),
                committed: (0..partitions).map(|_| Vec::new()).collect(),
            }),
            changes: watch::channel(0).0,
        })
    }

    /// How many partitions the log has.
    pub fn partitions(&self) -> u32 {
        // `grow` takes a `u32` count, so the length always fits.
        u32::try_from(self.state().committed.len()).unwrap_or(u32::MAX)
    }

    /// Grows the log to `partitions` empty partitions after its last, if it has fewer
    /// (a count never decreases); existing partitions keep their entries.
    pub fn grow(&self, partitions: u32) {
        let mut state = self.state();
        if state.committed.len() < partitions as usize {
            state.committed.resize_with(partitions as usize, Vec::new);
        }
        drop(state);
        self.changes.send_modify(|changes| *changes += 1);
    }

    /// What a reader of `partition` sees now.
    pub fn snapshot(&self, partition: u32) -> Result<Snapshot, SourceError> {
        SourceError::check_partition(partition, self.partitions())?;
        let state = self.state();
        Ok(Snapshot {
            committed: state.committed[partition as usize].clone(),
            xmin: state
                .running
                .iter()
                .map(|(tx, _)| *tx)
                .min()
                .unwrap_or(state.next_tx),
            watermark: state
                .running
                .iter()
                .filter_map(|(_, first)| *first)
                .min()
                .unwrap_or(state.next_position),
        })
    }

    /// A receiver that changes at every commit and rollback (the log's notification channel).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Starts a transaction (its id is taken now).
    pub fn begin(self: &Arc<Self>) -> SequenceTransaction {
        let mut state = self.state();
        let tx = state.next_tx;
        state.next_tx += 1;
        state.running.push((tx, None));
        SequenceTransaction {
            log: Arc::clone(self),
            tx,
            pending: Vec::new(),
            open: true,
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Every change is made whole under the lock, so a poisoned lock holds a consistent log.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn finish(&self, tx: u64, entries: Vec<(u32, Entry)>) {
        let mut state = self.state();
        state.running.retain(|(running, _)| *running != tx);
        for (partition, entry) in entries {
            let log = &mut state.committed[partition as usize];
            let at = log.partition_point(|c| c.entry.position < entry.position);
            log.insert(at, Committed { tx, entry });
        }
        drop(state);
        self.changes.send_modify(|changes| *changes += 1);
    }
}

/// A running transaction of a [`SequenceLog`]; dropped without a commit, it rolls back.
#[derive(Debug)]
pub struct SequenceTransaction {
    log: Arc<SequenceLog>,
    tx: u64,
    pending: Vec<(u32, Entry)>,
    open: bool,
}

impl SequenceTransaction {
    /// Takes the next position of the shared counter for an entry of `partition`.
    pub fn append(
        &mut self,
        partition: u32,
        key: &str,
        payload: &[u8],
    ) -> Result<u64, SourceError> {
        SourceError::check_partition(partition, self.log.partitions())?;
        let mut state = self.log.state();
        let position = state.next_position;
        state.next_position += 1;
        let tx = self.tx;
        if let Some((_, first)) = state.running.iter_mut().find(|(id, _)| *id == tx) {
            first.get_or_insert(position);
        }
        drop(state);
        self.pending.push((
            partition,
            Entry {
                position,
                key: Some(key.to_owned()),
                payload: payload.to_vec(),
                appended_at: Some(SystemTime::now()),
            },
        ));
        Ok(position)
    }

    /// Makes every append visible at once.
    pub fn commit(mut self) {
        self.open = false;
        self.log.finish(self.tx, std::mem::take(&mut self.pending));
    }
}

impl Drop for SequenceTransaction {
    fn drop(&mut self) {
        if self.open {
            self.log.finish(self.tx, Vec::new());
        }
    }
}

#[async_trait]
impl LogTransaction for SequenceTransaction {
    async fn append(
        &mut self,
        partition: u32,
        key: &str,
        payload: &[u8],
    ) -> Result<(), SourceError> {
        SequenceTransaction::append(self, partition, key, payload).map(drop)
    }

    async fn commit(self: Box<Self>) -> Result<(), SourceError> {
        SequenceTransaction::commit(*self);
        Ok(())
    }

    async fn rollback(self: Box<Self>) -> Result<(), SourceError> {
        drop(self);
        Ok(())
    }
}

/// The correct source over a [`SequenceLog`]: it reads only below the watermark, the lowest
/// position a running transaction holds, so an entry that commits late is never passed over.
#[derive(Debug, Clone)]
pub struct WatermarkSource {
    log: Arc<SequenceLog>,
}

impl WatermarkSource {
    /// The source over `log`.
    pub fn new(log: Arc<SequenceLog>) -> Self {
        Self { log }
    }
}

#[async_trait]
impl Source for WatermarkSource {
    fn partitions(&self) -> u32 {
        self.log.partitions()
    }

    async fn read(&self, partition: u32, from: u64, max: usize) -> Result<Page, SourceError> {
        SourceError::check_read(partition, self.log.partitions(), from, max)?;
        let snapshot = self.log.snapshot(partition)?;
        let entries: Vec<Entry> = final_entries(&snapshot, from)
            .take(max)
            .map(|c| c.entry.clone())
            .collect();
        let next = match entries.last() {
            // A full page: there may be more below the watermark.
            Some(last) if entries.len() == max => last.position + 1,
            // Everything final at or after `from` was returned: nothing can appear below
            // the watermark any more.
            _ => from.max(snapshot.watermark),
        };
        Ok(Page { entries, next })
    }

    async fn wait(&self, partition: u32, from: u64) -> Result<(), SourceError> {
        SourceError::check_partition(partition, self.log.partitions())?;
        SourceError::check_from(from)?;
        // Subscribed before looking, so a commit between the look and the wait still wakes.
        let mut changes = self.log.subscribe();
        loop {
            let snapshot = self.log.snapshot(partition)?;
            if final_entries(&snapshot, from).next().is_some() {
                return Ok(());
            }
            if changes.changed().await.is_err() {
                return Ok(());
            }
        }
    }

    async fn head(&self, partition: u32) -> Result<Option<u64>, SourceError> {
        SourceError::check_partition(partition, self.log.partitions())?;
        let snapshot = self.log.snapshot(partition)?;
        Ok(final_entries(&snapshot, 0).last().map(|c| c.entry.position))
    }
}

/// The committed entries at or after `from` and below the watermark: the ones no running
/// transaction can still precede.
fn final_entries(snapshot: &Snapshot, from: u64) -> impl Iterator<Item = &Committed> {
    snapshot
        .committed
        .iter()
        .filter(move |c| c.entry.position >= from && c.entry.position < snapshot.watermark)
}

/// A [`SourceLog`] over a [`SequenceLog`], read by any source `S` over it: the correct
/// [`WatermarkSource`] or a reader under test.
#[derive(Debug)]
pub struct SequenceSourceLog<S> {
    log: Arc<SequenceLog>,
    source: S,
}

impl<S> SequenceSourceLog<S> {
    /// `log`, read through `source`.
    pub fn new(log: Arc<SequenceLog>, source: S) -> Self {
        Self { log, source }
    }
}

impl SequenceSourceLog<WatermarkSource> {
    /// A fresh log of `partitions` partitions read by the [`WatermarkSource`].
    pub fn watermark(partitions: u32) -> Self {
        let log = SequenceLog::new(partitions);
        Self::new(Arc::clone(&log), WatermarkSource::new(log))
    }
}

#[async_trait]
impl<S: Source> SourceLog for SequenceSourceLog<S> {
    type Source = S;

    fn source(&self) -> &S {
        &self.source
    }

    fn grows(&self) -> bool {
        true
    }

    async fn grow(&self, partitions: u32) -> Result<(), SourceError> {
        self.log.grow(partitions);
        Ok(())
    }

    async fn begin(&self) -> Result<Box<dyn LogTransaction + '_>, SourceError> {
        Ok(Box::new(self.log.begin()))
    }
}
