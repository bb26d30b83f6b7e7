//! The cursors a source keeps between reads, a few per partition.

use std::sync::{Mutex, PoisonError};

use async_nats::jetstream::stream::Stream;
use checkpoint_core::source::SourceError;

use crate::cursor::Cursor;

/// How many idle cursors a partition keeps: enough for a few readers at different positions
/// (a reader and a lagging one, the kit's parallel readers) without piling up consumers.
const PER_PARTITION: usize = 4;

/// Idle cursors by partition.
pub(crate) struct Pool {
    idle: Vec<Mutex<Vec<Cursor>>>,
}

impl Pool {
    pub(crate) fn new(partitions: u32) -> Self {
        Self {
            idle: (0..partitions).map(|_| Mutex::new(Vec::new())).collect(),
        }
    }

    /// A cursor of `partition` standing at `from`: an idle one if there is one, else a new
    /// consumer. `fresh` skips the idle ones (after one failed).
    pub(crate) async fn checkout(
        &self,
        stream: &Stream,
        partition: u32,
        subject: String,
        from: u64,
        fresh: bool,
    ) -> Result<(Lease<'_>, bool), SourceError> {
        let slot = self.slot(partition);
        if !fresh {
            let mut idle = slot.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(at) = idle.iter().position(|cursor| cursor.next == from) {
                let cursor = idle.swap_remove(at);
                return Ok((Lease::new(slot, cursor), true));
            }
        }
        let cursor = Cursor::open(stream, subject, from).await?;
        Ok((Lease::new(slot, cursor), false))
    }

    fn slot(&self, partition: u32) -> &Mutex<Vec<Cursor>> {
        // The source checked the partition before; the modulo only keeps this total.
        &self.idle[partition as usize % self.idle.len()]
    }

    /// Deletes every idle consumer (in the background).
    pub(crate) fn discard_all(&self) {
        for slot in &self.idle {
            let cursors = std::mem::take(&mut *slot.lock().unwrap_or_else(PoisonError::into_inner));
            cursors.into_iter().for_each(Cursor::discard);
        }
    }
}

/// A cursor taken out of the pool. [`Lease::keep`] puts it back; dropped otherwise (an
/// error, a cancelled read or wait), its consumer is deleted, since a pull it may have left
/// on the server could deliver messages nobody receives.
pub(crate) struct Lease<'a> {
    slot: &'a Mutex<Vec<Cursor>>,
    cursor: Option<Cursor>,
}

impl<'a> Lease<'a> {
    fn new(slot: &'a Mutex<Vec<Cursor>>, cursor: Cursor) -> Self {
        Self {
            slot,
            cursor: Some(cursor),
        }
    }

    /// The cursor.
    pub(crate) fn cursor(&mut self) -> Option<&mut Cursor> {
        self.cursor.as_mut()
    }

    /// Puts the cursor back for the next read; the oldest idle one goes when the partition
    /// keeps enough.
    pub(crate) fn keep(mut self) {
        if let Some(cursor) = self.cursor.take() {
            let evicted = {
                let mut idle = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
                idle.push(cursor);
                (idle.len() > PER_PARTITION).then(|| idle.remove(0))
            };
            if let Some(evicted) = evicted {
                evicted.discard();
            }
        }
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if let Some(cursor) = self.cursor.take() {
            cursor.discard();
        }
    }
}
