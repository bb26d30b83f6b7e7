//! The in-memory reference store.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use crate::door::{BoxFuture, Checked, CheckpointDoor, Door, ExclusiveDoor};
use crate::error::Operation;
use crate::{Checkpoint, Error, Fingerprint};

/// What the in-memory store keeps for one (subscription, partition).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    pub(crate) position: u64,
    /// Set by an exclusive claim; `None` for a checkpoint only ever saved monotonically.
    pub(crate) fingerprint: Option<Fingerprint>,
}

pub(crate) type Group = HashMap<(String, u32), Entry>;

/// Everything the store keeps, behind its one lock.
#[derive(Debug, Default)]
pub(crate) struct State {
    /// The checkpoints of each group.
    pub(crate) groups: HashMap<String, Group>,
    /// The retired subscriptions of each group: their tombstones.
    pub(crate) retired: BTreeMap<String, BTreeSet<String>>,
    /// The leases and heartbeats of each (group, subscription).
    pub(crate) leases: HashMap<(String, String), crate::memory_lease::SubscriptionLeases>,
    /// The parked entries of each group, by (subscription, partition, position).
    pub(crate) parked: HashMap<String, BTreeMap<(String, u32, u64), crate::parked::ParkedEntry>>,
}

impl State {
    /// Whether `subscription` of `group` is retired.
    pub(crate) fn is_retired(&self, group: &str, subscription: &str) -> bool {
        self.retired
            .get(group)
            .is_some_and(|retired| retired.contains(subscription))
    }

    /// Saves as the contract says, unless the subscription is retired.
    fn save(&mut self, group: &str, subscription: &str, partition: u32, position: u64) {
        if self.is_retired(group, subscription) {
            return;
        }
        save_into(
            self.groups.entry(group.to_owned()).or_default(),
            subscription,
            partition,
            position,
        );
    }
}

/// The reference implementation of the contract, in process memory.
///
/// Every operation takes one lock over the whole store and never holds it across an `.await`,
/// so each is one atomic step, exactly as the contract asks of a server. Nothing survives the
/// process: use it in tests, and as the model the other backends are checked against.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use checkpoint_core::{CheckpointStore, InMemoryCheckpointStore};
///
/// let store = InMemoryCheckpointStore::new();
/// store.save("billing", "invoices", 0, 42).await?;
/// store.save("billing", "invoices", 0, 17).await?; // a zombie's late save: ignored
/// assert_eq!(store.load("billing", "invoices", 0).await?, Some(42));
/// # Ok::<(), checkpoint_core::Error>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct InMemoryCheckpointStore {
    state: Mutex<State>,
    /// The one clock that expires leases: the store's, as a server's would be.
    clock: fn() -> Instant,
}

impl Default for InMemoryCheckpointStore {
    fn default() -> Self {
        Self {
            state: Mutex::default(),
            clock: Instant::now,
        }
    }
}

impl InMemoryCheckpointStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The same store with `clock` as the one clock that expires leases, instead of
    /// `std::time::Instant::now`: for example `|| tokio::time::Instant::now().into_std()`, so
    /// that a test on tokio's paused clock moves lease expiry with it.
    pub fn with_clock(mut self, clock: fn() -> Instant) -> Self {
        self.clock = clock;
        self
    }

    /// The store's clock now.
    pub(crate) fn now(&self) -> Instant {
        (self.clock)()
    }

    /// The lock over everything. A panic while it was held cannot leave an entry half
    /// written (every update is a single assignment), so a poisoned lock is still consistent.
    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn save_into(group: &mut Group, subscription: &str, partition: u32, position: u64) {
    match group.get_mut(&(subscription.to_owned(), partition)) {
        Some(entry) => entry.position = entry.position.max(position),
        None => {
            group.insert(
                (subscription.to_owned(), partition),
                Entry {
                    position,
                    fingerprint: None,
                },
            );
        }
    }
}

crate::through_door!(InMemoryCheckpointStore: checkpoints, exclusive, admin, leases, parked);

/// The memory store has nothing to bound: each request is a step under its lock.
impl Door for InMemoryCheckpointStore {
    const BACKEND: &'static str = "memory";

    fn place(&self) -> Option<&dyn std::fmt::Display> {
        None
    }

    fn bound<'a, T: Send + 'a>(
        &'a self,
        _operation: Operation,
        request: BoxFuture<'a, T>,
    ) -> BoxFuture<'a, T> {
        request
    }
}

impl CheckpointDoor for InMemoryCheckpointStore {
    async fn send_list(&self, _checked: Checked, group: &str) -> Result<Vec<Checkpoint>, Error> {
        let state = self.state();
        Ok(state
            .groups
            .get(group)
            .map(|entries| {
                entries
                    .iter()
                    .map(|((subscription, partition), entry)| {
                        Checkpoint::new(subscription.clone(), *partition, entry.position)
                    })
                    .collect()
            })
            .unwrap_or_default())
    }

    async fn send_load(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> Result<Option<u64>, Error> {
        let state = self.state();
        Ok(state
            .groups
            .get(group)
            .and_then(|entries| entries.get(&(subscription.to_owned(), partition)))
            .map(|entry| entry.position))
    }

    async fn send_save(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<(), Error> {
        self.state().save(group, subscription, partition, position);
        Ok(())
    }

    async fn send_save_all(
        &self,
        _checked: Checked,
        group: &str,
        checkpoints: &[Checkpoint],
    ) -> Result<(), Error> {
        let mut state = self.state();
        for checkpoint in checkpoints {
            state.save(
                group,
                &checkpoint.subscription,
                checkpoint.partition,
                checkpoint.position,
            );
        }
        Ok(())
    }
}

impl ExclusiveDoor for InMemoryCheckpointStore {
    async fn send_claim(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
        fingerprint: Fingerprint,
        initial_position: u64,
    ) -> Result<u64, Error> {
        let mut state = self.state();
        if state.is_retired(group, subscription) {
            return Err(Error::retired(group, subscription));
        }
        let entry = state
            .groups
            .entry(group.to_owned())
            .or_default()
            .entry((subscription.to_owned(), partition))
            .or_insert(Entry {
                position: initial_position,
                fingerprint: Some(fingerprint),
            });
        match entry.fingerprint {
            Some(stored) if stored != fingerprint => Err(Error::QueryChanged {
                stored,
                requested: fingerprint,
            }),
            Some(_) => Ok(entry.position),
            None => {
                entry.fingerprint = Some(fingerprint);
                Ok(entry.position)
            }
        }
    }

    async fn send_advance(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
    ) -> Result<(), Error> {
        let mut state = self.state();
        let entry = state
            .groups
            .get_mut(group)
            .and_then(|entries| entries.get_mut(&(subscription.to_owned(), partition)));
        match entry {
            Some(entry) if entry.position == from => {
                entry.position = to;
                Ok(())
            }
            other => Err(Error::Moved {
                expected: from,
                current: other.map(|entry| entry.position),
            }),
        }
    }
}
