//! One dispatched entry, from its handler's first run to its completion, parking or poison
//! stop.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use checkpoint_core::parked::{ParkedEntry, ParkedStore};
use checkpoint_core::source::Entry;
use tokio::sync::oneshot;

use crate::OnPoison;
use crate::attempts::{Poison, run_with_retries};
use crate::order::Previous;
use crate::partition::PartitionState;
use crate::retry::Retry;
use crate::shared::Shared;

/// An entry handed to a handler.
pub(crate) struct Dispatched {
    pub(crate) entry: Arc<Entry>,
    /// The previous entry of its key, when ordering by key.
    pub(crate) after: Option<Previous>,
    /// Sent when it is finished, when ordering by key.
    pub(crate) finished: Option<oneshot::Sender<()>>,
}

/// Counts an entry in flight for as long as its handling lives (abandoned included).
struct InFlight(Arc<PartitionState>);

impl InFlight {
    fn enter(state: &Arc<PartitionState>) -> Self {
        state.in_flight.fetch_add(1, Ordering::Relaxed);
        Self(Arc::clone(state))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Runs the handler on a dispatched entry; completes it in the committer when it was handled
/// or parked; stops the partition on it when it is poison and the subscription stops.
pub(crate) async fn handle(shared: Arc<Shared>, state: Arc<PartitionState>, job: Dispatched) {
    let _in_flight = InFlight::enter(&state);
    if let Some(previous) = job.after
        && previous.await.is_err()
    {
        // The previous entry of this key will never finish: running this one would break
        // the key's order. It stays unfinished, below where the partition stopped.
        return;
    }
    if state.stopped_at().is_some() {
        return;
    }
    let position = job.entry.position;
    match run_with_retries(&shared, state.partition, &job.entry).await {
        Ok(_) => {
            shared.counters.handled.fetch_add(1, Ordering::Relaxed);
        }
        Err(poison) => match &shared.settings.on_poison {
            OnPoison::Park(store) => {
                park(&shared, &**store, state.partition, position, poison).await
            }
            OnPoison::Stop => {
                stop_on(&shared, &state, position, poison);
                return;
            }
        },
    }
    if let Err(error) = state.committer.completed(position) {
        // The partition was released (lost or handed over past its drain): nothing to write.
        tracing::debug!(partition = state.partition, position, %error, "completion not recorded");
    }
    if let Some(finished) = job.finished {
        let _ = finished.send(());
    }
}

/// Stops the partition on a poison entry: nothing after it is dispatched, its checkpoint
/// stays below it.
pub(crate) fn stop_on(shared: &Shared, state: &PartitionState, position: u64, poison: Poison) {
    tracing::error!(
        group = %shared.group,
        subscription = %shared.subscription,
        partition = state.partition,
        position,
        attempts = poison.attempts,
        error = %poison.error,
        "poison entry: the partition stops here (its checkpoint stays below the entry)"
    );
    if state.stopped_at().is_none() {
        shared
            .counters
            .stopped_on_poison
            .fetch_add(1, Ordering::Relaxed);
    }
    state.stop_at(position, poison.error);
}

/// Parks a poison entry, retrying until the store takes it: the checkpoint must not pass an
/// entry that is neither handled nor parked.
pub(crate) async fn park(
    shared: &Shared,
    store: &dyn ParkedStore,
    partition: u32,
    position: u64,
    poison: Poison,
) {
    let record = ParkedEntry::new(
        shared.subscription.clone(),
        partition,
        position,
        poison.error,
        poison.attempts,
    );
    let pauses = Retry::exponential(
        crate::settings::FIRST_READ_PAUSE,
        crate::settings::LONGEST_WAIT,
    );
    let mut failures = 0;
    while let Err(error) = store.park(&shared.group, &record).await {
        failures += 1;
        shared
            .counters
            .park_failures
            .fetch_add(1, Ordering::Relaxed);
        tracing::warn!(partition, position, %error, "parking a poison entry failed; retrying");
        tokio::time::sleep(pauses.pause(failures)).await;
    }
    tracing::warn!(
        group = %shared.group,
        subscription = %shared.subscription,
        partition,
        position,
        attempts = record.attempts,
        error = %record.error,
        "poison entry parked; going on with the next"
    );
    shared.counters.parked.fetch_add(1, Ordering::Relaxed);
}
