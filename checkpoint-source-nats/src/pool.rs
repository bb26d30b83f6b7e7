//! The cursors a source keeps between reads, a few per partition.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use async_nats::jetstream::stream::Stream;
use checkpoint_core::source::SourceError;

use crate::cursor::Cursor;

/// How many idle cursors a partition keeps: enough for a few readers at different positions
/// (a reader and a lagging one, the kit's parallel readers) without piling up consumers.
const PER_PARTITION: usize = 4;

/// Idle cursors by partition: a map, since the partitions may grow while the source runs.
/// One lock for all of them, held only to take a cursor out or put one back.
#[derive(Default)]
pub(crate) struct Pool {
    idle: Mutex<BTreeMap<u32, Vec<Cursor>>>,
}

impl Pool {
    fn idle(&self) -> MutexGuard<'_, BTreeMap<u32, Vec<Cursor>>> {
        // Every change is one push or removal: a poisoned lock holds a consistent map.
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
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
        if !fresh {
            let reused = self.idle().get_mut(&partition).and_then(|idle| {
                let at = idle.iter().position(|cursor| cursor.next == from)?;
                Some(idle.swap_remove(at))
            });
            if let Some(cursor) = reused {
                return Ok((Lease::new(self, partition, cursor), true));
            }
        }
        let cursor = Cursor::open(stream, subject, from).await?;
        Ok((Lease::new(self, partition, cursor), false))
    }

    /// Deletes every idle consumer (in the background).
    pub(crate) fn discard_all(&self) {
        let idle = std::mem::take(&mut *self.idle());
        idle.into_values().flatten().for_each(Cursor::discard);
    }
}

/// A cursor taken out of the pool. [`Lease::keep`] puts it back; dropped otherwise (an
/// error, a cancelled read or wait), its consumer is deleted, since a pull it may have left
/// on the server could deliver messages nobody receives.
pub(crate) struct Lease<'a> {
    pool: &'a Pool,
    partition: u32,
    cursor: Option<Cursor>,
}

impl<'a> Lease<'a> {
    fn new(pool: &'a Pool, partition: u32, cursor: Cursor) -> Self {
        Self {
            pool,
            partition,
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
                let mut pool = self.pool.idle();
                let idle = pool.entry(self.partition).or_default();
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
