//! What a subscription knows about one partition it reads: for its stats and its readers.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use checkpoint_committer::Partition;
use tokio::sync::Notify;

/// One held partition, shared by its reader, its handlers and `stats()`.
#[derive(Debug)]
pub(crate) struct PartitionState {
    pub(crate) partition: u32,
    pub(crate) epoch: u64,
    pub(crate) committer: Partition,
    /// Entries handed to a handler and not finished.
    pub(crate) in_flight: AtomicUsize,
    /// Woken when a handler stops the partition on a poison entry.
    pub(crate) poisoned: Notify,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// The last position a read can return, as last seen.
    head: Option<u64>,
    /// Read and not yet behind the checkpoint: (position, appended at), in position order, for
    /// the lag in time.
    unfinished: VecDeque<(u64, Option<SystemTime>)>,
    /// The poison entry the partition stopped on, and its last error.
    stopped_at: Option<(u64, String)>,
    /// The checkpoint as last committed, for a reader that advances it itself (a transactional
    /// handler) instead of through the committer.
    committed: Option<u64>,
}

impl Inner {
    /// Entries behind the checkpoint are finished: they no longer count for lag.
    fn forget_below(&mut self, checkpoint: u64) {
        while self
            .unfinished
            .front()
            .is_some_and(|(position, _)| *position < checkpoint)
        {
            self.unfinished.pop_front();
        }
    }
}

impl PartitionState {
    pub(crate) fn new(partition: u32, epoch: u64, committer: Partition) -> Self {
        Self {
            partition,
            epoch,
            committer,
            in_flight: AtomicUsize::new(0),
            poisoned: Notify::new(),
            inner: Mutex::new(Inner::default()),
        }
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Notes entries read from the source.
    pub(crate) fn read(&self, entries: impl Iterator<Item = (u64, Option<SystemTime>)>) {
        let mut inner = self.inner();
        let checkpoint = inner.committed.unwrap_or_else(|| self.committer.gap_free());
        inner.forget_below(checkpoint);
        for (position, appended_at) in entries {
            inner.head = Some(inner.head.map_or(position, |head| head.max(position)));
            inner.unfinished.push_back((position, appended_at));
        }
    }

    /// Notes the source's head as read by `head()`.
    pub(crate) fn set_head(&self, head: Option<u64>) {
        let mut inner = self.inner();
        inner.head = match (inner.head, head) {
            (Some(seen), Some(now)) => Some(seen.max(now)),
            (seen, now) => seen.or(now),
        };
    }

    /// Notes the checkpoint a transactional reader committed.
    pub(crate) fn set_committed(&self, position: u64) {
        self.inner().committed = Some(position);
    }

    /// Stops the partition on a poison entry (the first one wins).
    pub(crate) fn stop_at(&self, position: u64, error: String) {
        let mut inner = self.inner();
        if inner.stopped_at.is_none() {
            inner.stopped_at = Some((position, error));
        }
        drop(inner);
        self.poisoned.notify_one();
    }

    pub(crate) fn stopped_at(&self) -> Option<u64> {
        self.inner()
            .stopped_at
            .as_ref()
            .map(|(position, _)| *position)
    }

    /// The lag as of now: (checkpoint, head, positions behind, the oldest unfinished entry's
    /// append time).
    pub(crate) fn lag(&self) -> (u64, Option<u64>, u64, Option<SystemTime>) {
        let mut inner = self.inner();
        let checkpoint = inner.committed.unwrap_or_else(|| self.committer.gap_free());
        inner.forget_below(checkpoint);
        let behind = inner
            .head
            .map_or(0, |head| (head + 1).saturating_sub(checkpoint));
        let oldest = inner.unfinished.front().and_then(|(_, at)| *at);
        (checkpoint, inner.head, behind, oldest)
    }

    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }
}
