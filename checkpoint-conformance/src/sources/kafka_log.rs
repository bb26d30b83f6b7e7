//! A simulated Kafka partition log: offsets taken densely at append time by every producer of
//! a partition, transactions whose records become visible at their commit marker; and the
//! read-committed source that reads it without a late arrival.
//!
//! Kafka writes a transactional producer's records into the partition as they are sent, at
//! the next offsets, between other producers' records; the transaction ends with a control
//! record (a commit or an abort marker) that takes an offset too. A consumer with
//! `isolation.level=read_committed` reads only below the partition's **last stable offset**
//! (LSO: the first offset of its oldest open transaction, else the high watermark), drops the
//! records of aborted transactions and skips the markers: [`ReadCommittedSource`] does that,
//! and carries `next` over the markers and aborted offsets. A reader bounded by the high
//! watermark instead passes over an open transaction's records, which then commit below its
//! `next` (a skip), and a read-uncommitted one returns records of open and aborted
//! transactions: the kit's own tests show both on this log.
//!
//! Offsets are each partition's own, from 0; the high watermark is the log end (every record
//! counts as replicated). A kit transaction is a Kafka transaction: appends, then a commit or
//! an abort; [`KafkaLog::produce`] writes a record without one, committed at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use async_trait::async_trait;
use checkpoint_core::source::{Entry, Page, Source, SourceError};
use tokio::sync::watch;

use super::{LogTransaction, SourceLog};

/// Where a record's transaction stood when a snapshot was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxState {
    /// Neither committed nor aborted yet: its records may still commit.
    Open,
    /// Committed (a record written without a transaction is committed when appended).
    Committed,
    /// Aborted: its records are never visible to a read-committed consumer.
    Aborted,
}

/// One record of a partition, at its offset.
#[derive(Debug, Clone)]
pub enum Record {
    /// A record a producer wrote; its entry's position is its offset.
    Data {
        /// The transaction that wrote it, `None` for a producer without transactions.
        tx: Option<u64>,
        /// Where that transaction stood ([`TxState::Committed`] without one).
        state: TxState,
        /// The record.
        entry: Entry,
    },
    /// A control record: the end of transaction `tx` in this partition.
    Marker {
        /// Its offset.
        offset: u64,
        /// The transaction it ends.
        tx: u64,
        /// A commit marker, else an abort marker.
        committed: bool,
    },
}

impl Record {
    /// The record's offset.
    pub fn offset(&self) -> u64 {
        match self {
            Record::Data { entry, .. } => entry.position,
            Record::Marker { offset, .. } => *offset,
        }
    }
}

/// What a fetch of one partition sees at one instant.
#[derive(Debug, Clone)]
pub struct PartitionSnapshot {
    /// Every record below the high watermark, markers included, in offset order (offset `i`
    /// at index `i`).
    pub records: Vec<Record>,
    /// The offset the next record will take (the log end: every record is replicated).
    pub high_watermark: u64,
    /// The first offset of the oldest transaction still open in this partition, else the high
    /// watermark: no record below it can still change.
    pub last_stable_offset: u64,
}

impl PartitionSnapshot {
    /// The data records at or after `from` and below `end`, with where their transactions
    /// stand, markers left out.
    pub fn data(&self, from: u64, end: u64) -> impl Iterator<Item = (&Entry, TxState)> {
        self.records.iter().filter_map(move |record| match record {
            Record::Data { state, entry, .. } if entry.position >= from && entry.position < end => {
                Some((entry, *state))
            }
            _ => None,
        })
    }

    /// What a read-committed consumer may return from `from`: the committed records below the
    /// last stable offset (below it no transaction is open, so nothing there can still change).
    pub fn stable(&self, from: u64) -> impl Iterator<Item = &Entry> {
        self.data(from, self.last_stable_offset)
            .filter(|(_, state)| *state == TxState::Committed)
            .map(|(entry, _)| entry)
    }
}

/// A record as stored: its offset is its index in the partition.
#[derive(Debug)]
enum Slot {
    Data { tx: Option<u64>, entry: Entry },
    Marker { tx: u64, committed: bool },
}

#[derive(Debug, Default)]
struct PartitionState {
    records: Vec<Slot>,
    /// Transactions open in this partition, with the first offset each took in it.
    open: Vec<(u64, u64)>,
}

#[derive(Debug)]
struct State {
    partitions: Vec<PartitionState>,
    /// Every transaction begun, by id.
    txs: HashMap<u64, TxState>,
    next_tx: u64,
}

/// The log: partitions whose offsets every producer takes in append order, transactions that
/// end with a marker in each partition they wrote to.
#[derive(Debug)]
pub struct KafkaLog {
    partitions: u32,
    state: Mutex<State>,
    changes: watch::Sender<u64>,
}

impl KafkaLog {
    /// An empty log of `partitions` partitions; each partition's offsets start at 0.
    pub fn new(partitions: u32) -> Arc<Self> {
        Arc::new(Self {
            partitions,
            state: Mutex::new(State {
                partitions: (0..partitions).map(|_| PartitionState::default()).collect(),
                txs: HashMap::new(),
                next_tx: 1,
            }),
            changes: watch::channel(0).0,
        })
    }

    /// How many partitions the log has.
    pub fn partitions(&self) -> u32 {
        self.partitions
    }

    /// What a fetch of `partition` sees now.
    pub fn snapshot(&self, partition: u32) -> Result<PartitionSnapshot, SourceError> {
        SourceError::check_partition(partition, self.partitions)?;
        let state = self.state();
        let log = &state.partitions[partition as usize];
        let state_of = |tx: &Option<u64>| match tx {
            None => TxState::Committed,
            Some(tx) => state.txs.get(tx).copied().unwrap_or(TxState::Open),
        };
        let records = log
            .records
            .iter()
            .zip(0u64..)
            .map(|(slot, offset)| match slot {
                Slot::Data { tx, entry } => Record::Data {
                    tx: *tx,
                    state: state_of(tx),
                    entry: entry.clone(),
                },
                Slot::Marker { tx, committed } => Record::Marker {
                    offset,
                    tx: *tx,
                    committed: *committed,
                },
            })
            .collect();
        let high_watermark = log.records.len() as u64;
        Ok(PartitionSnapshot {
            records,
            high_watermark,
            last_stable_offset: log
                .open
                .iter()
                .map(|(_, first)| *first)
                .min()
                .unwrap_or(high_watermark),
        })
    }

    /// A receiver that changes at every append, commit and abort.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Appends a record without a transaction (a plain producer): committed at once, yet read
    /// committed only once every transaction open below it has ended. Returns its offset.
    pub fn produce(&self, partition: u32, key: &str, payload: &[u8]) -> Result<u64, SourceError> {
        self.append(None, partition, key, payload)
    }

    /// Begins a transaction (its id is taken now; it takes offsets only when it appends).
    pub fn begin(self: &Arc<Self>) -> KafkaTransaction {
        let mut state = self.state();
        let tx = state.next_tx;
        state.next_tx += 1;
        state.txs.insert(tx, TxState::Open);
        KafkaTransaction {
            log: Arc::clone(self),
            tx,
            open: true,
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Every change is made whole under the lock, so a poisoned lock holds a consistent log.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn notify(&self) {
        self.changes.send_modify(|changes| *changes += 1);
    }

    /// Writes a data record of `tx` (or of no transaction) at the partition's next offset.
    fn append(
        &self,
        tx: Option<u64>,
        partition: u32,
        key: &str,
        payload: &[u8],
    ) -> Result<u64, SourceError> {
        SourceError::check_partition(partition, self.partitions)?;
        let mut state = self.state();
        let log = &mut state.partitions[partition as usize];
        let offset = log.records.len() as u64;
        SourceError::check_position(offset)?;
        if let Some(tx) = tx
            && !log.open.iter().any(|(open, _)| *open == tx)
        {
            log.open.push((tx, offset));
        }
        log.records.push(Slot::Data {
            tx,
            entry: Entry {
                position: offset,
                key: Some(key.to_owned()),
                payload: payload.to_vec(),
                appended_at: Some(SystemTime::now()),
            },
        });
        drop(state);
        self.notify();
        Ok(offset)
    }

    /// Ends `tx`: a marker in every partition it wrote to, at that partition's next offset.
    fn end(&self, tx: u64, committed: bool) {
        let mut state = self.state();
        for log in &mut state.partitions {
            if log.open.iter().any(|(open, _)| *open == tx) {
                log.open.retain(|(open, _)| *open != tx);
                log.records.push(Slot::Marker { tx, committed });
            }
        }
        let outcome = if committed {
            TxState::Committed
        } else {
            TxState::Aborted
        };
        state.txs.insert(tx, outcome);
        drop(state);
        self.notify();
    }
}

/// An open transaction of a [`KafkaLog`]; dropped without a commit, it aborts (as the
/// coordinator aborts the transaction of a producer that went away).
#[derive(Debug)]
pub struct KafkaTransaction {
    log: Arc<KafkaLog>,
    tx: u64,
    open: bool,
}

impl KafkaTransaction {
    /// The transaction's id.
    pub fn id(&self) -> u64 {
        self.tx
    }

    /// Writes a record of this transaction at the partition's next offset, at once (visible
    /// to a read-uncommitted reader now, to a read-committed one after the commit marker).
    pub fn append(
        &mut self,
        partition: u32,
        key: &str,
        payload: &[u8],
    ) -> Result<u64, SourceError> {
        self.log.append(Some(self.tx), partition, key, payload)
    }

    /// Commits: a commit marker in every partition the transaction wrote to.
    pub fn commit(mut self) {
        self.open = false;
        self.log.end(self.tx, true);
    }

    /// Aborts: an abort marker in every partition the transaction wrote to; its records stay
    /// in the log, never visible to a read-committed reader.
    pub fn abort(mut self) {
        self.open = false;
        self.log.end(self.tx, false);
    }
}

impl Drop for KafkaTransaction {
    fn drop(&mut self) {
        if self.open {
            self.log.end(self.tx, false);
        }
    }
}

#[async_trait]
impl LogTransaction for KafkaTransaction {
    async fn append(
        &mut self,
        partition: u32,
        key: &str,
        payload: &[u8],
    ) -> Result<(), SourceError> {
        KafkaTransaction::append(self, partition, key, payload).map(drop)
    }

    async fn commit(self: Box<Self>) -> Result<(), SourceError> {
        KafkaTransaction::commit(*self);
        Ok(())
    }

    async fn rollback(self: Box<Self>) -> Result<(), SourceError> {
        KafkaTransaction::abort(*self);
        Ok(())
    }
}

/// The correct source over a [`KafkaLog`], as a read-committed consumer: it reads only below
/// the last stable offset, drops aborted records, skips markers, and carries `next` over them.
#[derive(Debug, Clone)]
pub struct ReadCommittedSource {
    log: Arc<KafkaLog>,
}

impl ReadCommittedSource {
    /// The source over `log`.
    pub fn new(log: Arc<KafkaLog>) -> Self {
        Self { log }
    }
}

#[async_trait]
impl Source for ReadCommittedSource {
    fn partitions(&self) -> u32 {
        self.log.partitions
    }

    async fn read(&self, partition: u32, from: u64, max: usize) -> Result<Page, SourceError> {
        SourceError::check_read(partition, self.log.partitions, from, max)?;
        let snapshot = self.log.snapshot(partition)?;
        let entries: Vec<Entry> = snapshot.stable(from).take(max).cloned().collect();
        let next = match entries.last() {
            // A full page: there may be more below the LSO.
            Some(last) if entries.len() == max => last.position + 1,
            // Everything committed from `from` up to the LSO was returned: the rest below it
            // is markers and aborted records, which never become visible.
            _ => from.max(snapshot.last_stable_offset),
        };
        Ok(Page { entries, next })
    }

    async fn wait(&self, partition: u32, from: u64) -> Result<(), SourceError> {
        SourceError::check_partition(partition, self.log.partitions)?;
        SourceError::check_from(from)?;
        // Subscribed before looking, so a commit between the look and the wait still wakes.
        let mut changes = self.log.subscribe();
        loop {
            if self.log.snapshot(partition)?.stable(from).next().is_some() {
                return Ok(());
            }
            if changes.changed().await.is_err() {
                return Ok(());
            }
        }
    }

    async fn head(&self, partition: u32) -> Result<Option<u64>, SourceError> {
        SourceError::check_partition(partition, self.log.partitions)?;
        let snapshot = self.log.snapshot(partition)?;
        Ok(snapshot.stable(0).last().map(|entry| entry.position))
    }
}

/// A [`SourceLog`] over a [`KafkaLog`], read by any source `S` over it: the correct
/// [`ReadCommittedSource`] or a reader under test. Its transactions are Kafka transactions
/// (a rollback is an abort).
#[derive(Debug)]
pub struct KafkaSourceLog<S> {
    log: Arc<KafkaLog>,
    source: S,
}

impl<S> KafkaSourceLog<S> {
    /// `log`, read through `source`.
    pub fn new(log: Arc<KafkaLog>, source: S) -> Self {
        Self { log, source }
    }

    /// The log, to write to it directly (plain records, transactions held open).
    pub fn log(&self) -> &Arc<KafkaLog> {
        &self.log
    }
}

impl KafkaSourceLog<ReadCommittedSource> {
    /// A fresh log of `partitions` partitions read by the [`ReadCommittedSource`].
    pub fn read_committed(partitions: u32) -> Self {
        let log = KafkaLog::new(partitions);
        Self::new(Arc::clone(&log), ReadCommittedSource::new(log))
    }
}

#[async_trait]
impl<S: Source> SourceLog for KafkaSourceLog<S> {
    type Source = S;

    fn source(&self) -> &S {
        &self.source
    }

    async fn begin(&self) -> Result<Box<dyn LogTransaction + '_>, SourceError> {
        Ok(Box::new(self.log.begin()))
    }
}
