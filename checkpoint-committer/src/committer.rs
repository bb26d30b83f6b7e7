//! The committer: the partitions it holds, and the calls that take, release and stop them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use checkpoint_core::{CheckpointStore, validation};
use tokio::sync::{Notify, Semaphore};

use crate::CommitterError;
use crate::builder::{CommitterBuilder, Settings};
use crate::flush::{self, Target};
use crate::partition::Partition;
use crate::shared::Shared;
use crate::state::PartitionState;
use crate::stats::{CommitterStats, PartitionStats};
use crate::writer::Writer;

/// Turns out-of-order completions into gap-free checkpoints, written once per interval.
///
/// See [the crate doc](crate) for what position it writes and why. Cheap to clone; every clone
/// is the same committer. Call [`shutdown`](Self::shutdown) before the program ends: dropping
/// the last handle stops the periodic flush without a final write.
#[derive(Debug, Clone)]
pub struct Committer {
    shared: Arc<Shared>,
}

impl Committer {
    /// Settings for a committer of `group` over `store`: any [`CheckpointStore`], the
    /// workspace's or your own (an `Arc` of a store is a store too).
    pub fn builder(
        store: impl CheckpointStore + 'static,
        group: impl Into<String>,
    ) -> CommitterBuilder {
        CommitterBuilder::new(Arc::new(store), group.into())
    }

    pub(crate) fn start(
        runtime: &tokio::runtime::Handle,
        store: Arc<dyn CheckpointStore>,
        group: String,
        settings: Settings,
    ) -> Self {
        let shared = Arc::new(Shared {
            store,
            group,
            permits: Semaphore::new(settings.max_in_flight),
            settings,
            epoch: Instant::now(),
            partitions: Mutex::new(HashMap::new()),
            writer: tokio::sync::Mutex::new(Writer::default()),
            shut_down: AtomicBool::new(false),
            stop: Arc::new(Notify::new()),
            flusher: Mutex::new(None),
            ticks: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            failed_writes: AtomicU64::new(0),
        });
        let task = runtime.spawn(flush::run_periodically(
            Arc::downgrade(&shared),
            shared.settings.interval,
            Arc::clone(&shared.stop),
        ));
        *shared
            .flusher
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(task);
        Self { shared }
    }

    /// The group the committer writes.
    pub fn group(&self) -> &str {
        &self.shared.group
    }

    /// Takes `partition` of `subscription`, which resumes at `resume_at`: the first position
    /// it may dispatch, and the position the store is known to hold (usually what
    /// [`CheckpointStore::load`] returned, or where a new subscription starts).
    ///
    /// # Errors
    ///
    /// [`CommitterError::Invalid`] for a subscription or position the store would refuse,
    /// [`CommitterError::AlreadyHeld`] when this committer holds it already,
    /// [`CommitterError::ShutDown`] after [`shutdown`](Self::shutdown).
    pub fn partition(
        &self,
        subscription: &str,
        partition: u32,
        resume_at: u64,
    ) -> Result<Partition, CommitterError> {
        validation::validate_save(&self.shared.group, subscription, resume_at)
            .map_err(CommitterError::Invalid)?;
        let mut registry = self.shared.registry();
        if self.shared.is_shut_down() {
            return Err(CommitterError::ShutDown);
        }
        let key = (subscription.to_owned(), partition);
        if registry.contains_key(&key) {
            return Err(CommitterError::AlreadyHeld {
                subscription: key.0,
                partition,
            });
        }
        let state = Arc::new(PartitionState::new(key.0.clone(), partition, resume_at));
        registry.insert(key, Arc::clone(&state));
        Ok(Partition::new(Arc::clone(&self.shared), state))
    }

    /// Loads the stored checkpoint of `partition` and takes it from there (from 0 when none is
    /// stored). [`Partition::gap_free`] on the result says where to start reading.
    ///
    /// # Errors
    ///
    /// The store's error from the load, and those of [`partition`](Self::partition).
    pub async fn resume(
        &self,
        subscription: &str,
        partition: u32,
    ) -> Result<Partition, CommitterError> {
        let stored = self
            .shared
            .store
            .load(&self.shared.group, subscription, partition)
            .await
            .map_err(|error| match error {
                invalid @ checkpoint_core::Error::InvalidInput(_) => {
                    CommitterError::Invalid(invalid)
                }
                other => CommitterError::Load(other),
            })?;
        self.partition(subscription, partition, stored.unwrap_or(0))
    }

    /// Lets go of a partition (its lease was lost or handed over): writes its gap-free
    /// position now if it moved, forgets it, and frees the room its entries held. Its handles
    /// refuse every call from then on, so a handler that completes late changes nothing here;
    /// the next owner redoes that entry. A write of this committer that lands after the next
    /// owner's is harmless: the store keeps the highest position.
    ///
    /// # Errors
    ///
    /// [`CommitterError::NotHeld`] for a partition this committer does not hold;
    /// [`CommitterError::Flush`] when the write failed (the partition is released all the
    /// same; the error holds the checkpoint that was not written).
    pub async fn release(&self, subscription: &str, partition: u32) -> Result<(), CommitterError> {
        let state = self
            .shared
            .registry()
            .remove(&(subscription.to_owned(), partition))
            .ok_or_else(|| CommitterError::NotHeld {
                subscription: subscription.to_owned(),
                partition,
            })?;
        self.shared.permits.add_permits(let_go(&state));
        flush::write(&self.shared, Target::One(&state)).await
    }

    /// Lets go of several partitions of `subscription` at once, each as
    /// [`release`](Self::release) would, with **one** write for all of them: a worker handing
    /// over or losing many partitions writes once, not once per partition (writes are taken
    /// in turn, so one per partition would queue behind each other). Partitions this
    /// committer does not hold are skipped. It lets go of every partition before its first
    /// await, so a dropped call loses only the write.
    ///
    /// # Errors
    ///
    /// [`CommitterError::Flush`] when the write failed (the partitions are released all the
    /// same; the error holds the checkpoints that were not written).
    pub async fn release_many(
        &self,
        subscription: &str,
        partitions: &[u32],
    ) -> Result<(), CommitterError> {
        let states: Vec<Arc<PartitionState>> = {
            let mut registry = self.shared.registry();
            partitions
                .iter()
                .filter_map(|&partition| registry.remove(&(subscription.to_owned(), partition)))
                .collect()
        };
        for state in &states {
            self.shared.permits.add_permits(let_go(state));
        }
        flush::write(&self.shared, Target::Released(&states)).await
    }

    /// Writes every gap-free position that moved now, without waiting for the next tick (and
    /// without the backoff of failed writes).
    ///
    /// # Errors
    ///
    /// [`CommitterError::Flush`] when the write failed; the positions stay held and the next
    /// tick writes them.
    pub async fn flush(&self) -> Result<(), CommitterError> {
        flush::write(&self.shared, Target::All).await
    }

    /// Stops the committer: stops the periodic flush, refuses every later call, writes every
    /// gap-free position that moved, and returns. Entries still in flight are not waited for:
    /// finish (or stop) the handlers first, and what they did not complete is redone after a
    /// restart.
    ///
    /// # Errors
    ///
    /// [`CommitterError::Flush`] when the final write failed, with every checkpoint it could
    /// not write. A second call does nothing and returns `Ok`.
    pub async fn shutdown(&self) -> Result<(), CommitterError> {
        if self.shared.shut_down.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.shared.permits.close();
        self.shared.stop.notify_one();
        let task = self
            .shared
            .flusher
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(task) = task {
            // The flush task never panics; if the runtime cancelled it, there is nothing to
            // wait for either way.
            let _ = task.await;
        }
        let held: Vec<_> = self
            .shared
            .registry()
            .drain()
            .map(|(_, state)| state)
            .collect();
        for state in &held {
            let_go(state);
        }
        flush::write(&self.shared, Target::Released(&held)).await
    }

    /// Where every held partition stands, and the committer's write counts. Cheap: one short
    /// lock per partition, no I/O.
    pub fn stats(&self) -> CommitterStats {
        CommitterStats {
            partitions: self.partition_stats(),
            ticks: self.shared.ticks.load(Ordering::Relaxed),
            writes: self.shared.writes.load(Ordering::Relaxed),
            failed_writes: self.shared.failed_writes.load(Ordering::Relaxed),
        }
    }

    fn partition_stats(&self) -> Vec<PartitionStats> {
        self.shared
            .held_partitions()
            .iter()
            .map(|state| state.stats(self.shared.since_epoch()))
            .collect()
    }
}

/// Marks a partition released and empties it, keeping its gap-free position. Returns how many
/// entries it held (the room to give back).
fn let_go(state: &PartitionState) -> usize {
    let mut cell = state.lock();
    cell.released = true;
    cell.tracker.clear()
}
