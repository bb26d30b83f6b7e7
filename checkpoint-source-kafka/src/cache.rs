//! The last fetch of each partition, kept for the reads that go on inside it.
//!
//! A fetch brings up to [`max_bytes`](crate::KafkaSourceConfig::with_max_bytes) of batches
//! (thousands of small records); a read returns at most `max` of them. Without this, the next
//! read would fetch the rest again from the broker, so a reader in pages of 100 would move each
//! record over the network tens of times. What is kept is immutable: batches below the last
//! stable offset never change (records removed by retention meanwhile may still be served from
//! here, once, as if read a moment earlier).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use crate::batches::{self, Fetched};

/// A partition's last fetch: fetched from `from`, its whole batches ending before `end`.
#[derive(Debug)]
struct Kept {
    from: u64,
    end: u64,
    fetched: Fetched,
}

/// The kept fetches, by partition.
#[derive(Debug, Default)]
pub(crate) struct Cache {
    partitions: Mutex<HashMap<u32, Kept>>,
}

impl Cache {
    /// The kept fetch of `partition` when it covers `from`: a read from `from` over it returns
    /// what a new fetch would (the aborted transactions the broker listed cover it too).
    pub(crate) fn covering(&self, partition: u32, from: u64) -> Option<Fetched> {
        let partitions = self
            .partitions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let kept = partitions.get(&partition)?;
        (kept.from <= from && from < kept.end).then(|| kept.fetched.clone())
    }

    /// Keeps `fetched` (fetched from `from`) when a read up to `next` left some of it unread;
    /// forgets the partition's fetch otherwise.
    pub(crate) fn keep(&self, partition: u32, from: u64, fetched: Fetched, next: u64) {
        match batches::whole_end(&fetched) {
            Some(end) if next < end => {
                self.partitions
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(partition, Kept { from, end, fetched });
            }
            _ => self.forget(partition),
        }
    }

    /// Forgets the partition's fetch: a read took the rest of it.
    pub(crate) fn forget(&self, partition: u32) {
        self.partitions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&partition);
    }
}
