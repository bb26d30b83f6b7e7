//! The in-memory source: the reference implementation, for tests and examples.

use std::future::poll_fn;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::task::{Poll, Waker};
use std::time::SystemTime;

use async_trait::async_trait;

use super::{Entry, Page, Source, SourceError};

/// A log kept in memory. An append is visible to readers at once and in position order, so
/// the no-late-arrival clause holds trivially; it is the model the source kit checks other
/// sources against. It can grow ([`add_partitions`](Self::add_partitions)): its count is
/// always current, so the default [`Source::discover_partitions`] returns it.
#[derive(Debug)]
pub struct InMemorySource {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    logs: Vec<Vec<Entry>>,
    waiting: Vec<Waker>,
}

impl InMemorySource {
    /// An empty log of `partitions` partitions.
    pub fn new(partitions: u32) -> Self {
        Self {
            state: Mutex::new(State {
                logs: (0..partitions).map(|_| Vec::new()).collect(),
                waiting: Vec::new(),
            }),
        }
    }

    /// Appends `payload` to `partition` at the position after its last (the first is 1), and
    /// returns that position.
    pub fn append(&self, partition: u32, payload: impl Into<Vec<u8>>) -> Result<u64, SourceError> {
        let mut state = self.state();
        SourceError::check_partition(partition, state.count())?;
        let position = last_position(&state.logs[partition as usize]).map_or(1, |last| last + 1);
        push(&mut state, partition, Entry::new(position, payload));
        Ok(position)
    }

    /// Appends `entry` to `partition` at its own position, which must be above the partition's
    /// last (sparse positions are allowed).
    pub fn append_entry(&self, partition: u32, mut entry: Entry) -> Result<(), SourceError> {
        SourceError::check_position(entry.position)?;
        let mut state = self.state();
        SourceError::check_partition(partition, state.count())?;
        if let Some(last) = last_position(&state.logs[partition as usize])
            && entry.position <= last
        {
            return Err(SourceError::InvalidInput {
                argument: "position",
                reason: format!(
                    "{} is not above the partition's last position {last}",
                    entry.position
                ),
            });
        }
        entry.appended_at.get_or_insert_with(SystemTime::now);
        push(&mut state, partition, entry);
        Ok(())
    }

    /// Adds `more` empty partitions after the last (a Kafka topic's `CreatePartitions`) and
    /// returns the new count. Existing partitions keep their entries; the new ones are read
    /// from their start. The count never decreases, so there is no way to remove one.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// use checkpoint_core::source::{InMemorySource, Source};
    ///
    /// let source = InMemorySource::new(2);
    /// source.append(1, b"old".to_vec())?;
    /// assert_eq!(source.add_partitions(1)?, 3);
    /// assert_eq!(source.discover_partitions().await?, 3);
    /// source.append(2, b"new".to_vec())?;
    /// assert_eq!(source.read(2, 0, 10).await?.entries[0].payload, b"new");
    /// assert_eq!(source.read(1, 0, 10).await?.entries[0].payload, b"old");
    /// # Ok::<(), checkpoint_core::source::SourceError>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    ///
    /// [`SourceError::InvalidInput`] when the count would pass `u32::MAX`; nothing is added.
    pub fn add_partitions(&self, more: u32) -> Result<u32, SourceError> {
        let mut state = self.state();
        let count = state
            .count()
            .checked_add(more)
            .ok_or_else(|| SourceError::InvalidInput {
                argument: "partitions",
                reason: format!("{} more than {} passes u32::MAX", more, state.count()),
            })?;
        state.logs.resize_with(count as usize, Vec::new);
        Ok(count)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave a log half-written: every change is one
        // push.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl State {
    /// The partition count: one log per partition, only ever added to.
    fn count(&self) -> u32 {
        // `add_partitions` never lets it pass `u32::MAX`.
        u32::try_from(self.logs.len()).unwrap_or(u32::MAX)
    }
}

fn last_position(log: &[Entry]) -> Option<u64> {
    log.last().map(|entry| entry.position)
}

fn push(state: &mut State, partition: u32, entry: Entry) {
    state.logs[partition as usize].push(entry);
    for waker in state.waiting.drain(..) {
        waker.wake();
    }
}

/// The index of the first entry at or after `from`.
fn first_at(log: &[Entry], from: u64) -> usize {
    log.partition_point(|entry| entry.position < from)
}

#[async_trait]
impl Source for InMemorySource {
    fn partitions(&self) -> u32 {
        self.state().count()
    }

    async fn read(&self, partition: u32, from: u64, max: usize) -> Result<Page, SourceError> {
        let state = self.state();
        SourceError::check_read(partition, state.count(), from, max)?;
        let log = &state.logs[partition as usize];
        let start = first_at(log, from);
        let entries: Vec<Entry> = log[start..].iter().take(max).cloned().collect();
        // Appends are visible at once and in order: nothing can still appear below the
        // position after the last one.
        let next = match entries.last() {
            Some(last) => last.position + 1,
            None => last_position(log).map_or(from, |last| from.max(last + 1)),
        };
        Ok(Page { entries, next })
    }

    async fn wait(&self, partition: u32, from: u64) -> Result<(), SourceError> {
        SourceError::check_partition(partition, self.partitions())?;
        SourceError::check_from(from)?;
        poll_fn(|context| {
            let mut state = self.state();
            let log = &state.logs[partition as usize];
            if first_at(log, from) < log.len() {
                return Poll::Ready(Ok(()));
            }
            // A future polled again before any append must not pile up copies of its waker.
            if !state.waiting.iter().any(|w| w.will_wake(context.waker())) {
                state.waiting.push(context.waker().clone());
            }
            Poll::Pending
        })
        .await
    }

    async fn head(&self, partition: u32) -> Result<Option<u64>, SourceError> {
        let state = self.state();
        SourceError::check_partition(partition, state.count())?;
        Ok(last_position(&state.logs[partition as usize]))
    }
}
