//! Writing the gap-free positions that moved: one `save_all` per tick, backoff after a failure.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime};

use checkpoint_core::Checkpoint;
use tokio::sync::Notify;
use tokio::time::{Instant, MissedTickBehavior};

use crate::CommitterError;
use crate::shared::Shared;
use crate::state::PartitionState;
use crate::writer::Writer;

/// Which partitions a write covers.
pub(crate) enum Target<'a> {
    /// Every partition the committer holds.
    All,
    /// One partition, being released.
    One(&'a PartitionState),
    /// Partitions already taken out of the registry (at shutdown).
    Released(&'a [Arc<PartitionState>]),
}

/// The periodic flush: a write every `interval` until `stop` is notified or the committer is
/// gone. A tick that comes while a write is still running waits for it, and the next tick is
/// an interval after that (never a burst), so there are never more writes than ticks.
pub(crate) async fn run_periodically(shared: Weak<Shared>, interval: Duration, stop: Arc<Notify>) {
    let mut ticker = tokio::time::interval_at(Instant::now() + interval, interval);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            biased;
            () = stop.notified() => return,
            _ = ticker.tick() => {}
        }
        let Some(shared) = shared.upgrade() else {
            return;
        };
        if shared.is_shut_down() {
            return;
        }
        shared.ticks.fetch_add(1, Ordering::Relaxed);
        let mut writer = shared.writer.lock().await;
        if !writer.backing_off() {
            // A failure is reported (tracing, callback, stats) inside; the positions stay held
            // for the next tick.
            let _ = write_locked(&shared, &mut writer, Target::All).await;
        }
        drop(writer);
        #[cfg(feature = "metrics")]
        crate::metrics::publish(&shared);
    }
}

/// Writes the gap-free positions of `target` that moved, in one `save_all`, after any write
/// already running.
pub(crate) async fn write(shared: &Shared, target: Target<'_>) -> Result<(), CommitterError> {
    let mut writer = shared.writer.lock().await;
    write_locked(shared, &mut writer, target).await
}

async fn write_locked(
    shared: &Shared,
    writer: &mut Writer,
    target: Target<'_>,
) -> Result<(), CommitterError> {
    let all;
    let states: Vec<&PartitionState> = match target {
        Target::All => {
            all = shared.held_partitions();
            all.iter().map(|state| &**state).collect()
        }
        Target::One(state) => vec![state],
        Target::Released(states) => states.iter().map(|state| &**state).collect(),
    };
    let (moved, batch) = moved_positions(states);
    if batch.is_empty() {
        return Ok(());
    }
    match shared.store.save_all(&shared.group, &batch).await {
        Ok(()) => {
            written(shared, writer, &moved, &batch);
            Ok(())
        }
        Err(error) => {
            let error = Arc::new(error);
            not_written(shared, writer, &moved, batch.len(), &error);
            Err(CommitterError::Flush {
                source: error,
                unwritten: batch,
            })
        }
    }
}

/// The partitions of `states` whose gap-free position is ahead of what the store holds, and
/// that position of each, as the batch to write.
fn moved_positions(states: Vec<&PartitionState>) -> (Vec<&PartitionState>, Vec<Checkpoint>) {
    let mut moved = Vec::new();
    let mut batch = Vec::new();
    for state in states {
        let cell = state.lock();
        let gap_free = cell.tracker.gap_free();
        if gap_free > cell.committed {
            moved.push(state);
            batch.push(Checkpoint::new(
                state.subscription.clone(),
                state.partition,
                gap_free,
            ));
        }
    }
    (moved, batch)
}

/// Records a write of `batch` (one checkpoint per partition of `moved`) that succeeded.
fn written(shared: &Shared, writer: &mut Writer, moved: &[&PartitionState], batch: &[Checkpoint]) {
    let now = SystemTime::now();
    for (state, checkpoint) in moved.iter().zip(batch) {
        let mut cell = state.lock();
        cell.committed = cell.committed.max(checkpoint.position);
        cell.last_write = Some(now);
        cell.last_error = None;
    }
    writer.succeeded();
    shared.writes.fetch_add(1, Ordering::Relaxed);
    tracing::debug!(
        group = %shared.group,
        checkpoints = batch.len(),
        "checkpoint_committer.write"
    );
}

/// Records a write of `checkpoints` positions of `moved` that failed with `error`: the
/// positions stay held, the next periodic write backs off, and the error is reported (the
/// partitions' stats, tracing, the callback).
fn not_written(
    shared: &Shared,
    writer: &mut Writer,
    moved: &[&PartitionState],
    checkpoints: usize,
    error: &Arc<checkpoint_core::Error>,
) {
    for state in moved {
        state.lock().last_error = Some(Arc::clone(error));
    }
    let wait = writer.failed(shared.settings.interval, shared.settings.max_backoff);
    shared.failed_writes.fetch_add(1, Ordering::Relaxed);
    tracing::warn!(
        group = %shared.group,
        checkpoints,
        failures_in_a_row = writer.failures,
        retry_in = ?wait,
        error = &**error as &dyn std::error::Error,
        "checkpoint_committer.write failed; the positions are kept and written later"
    );
    if let Some(on_error) = &shared.settings.on_error {
        on_error(error);
    }
}
