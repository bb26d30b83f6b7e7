//! The reader of one assignment: from `resume_at()`, entries to handlers, up to the
//! partition's in-flight limit, until the worker says stop; then a drain or an abort.
//!
//! The handlers of a partition run concurrently on the reader's own task (a set of futures it
//! polls beside its reads), not as a task each: no spawn per entry, and abandoning them on a
//! loss is dropping the set. Partitions run in parallel, each on its reader's task.

use std::pin::pin;
use std::sync::Arc;

use checkpoint_core::source::Entry;
use checkpoint_worker::{Assignment, Stop};
use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use futures_util::stream::FuturesUnordered;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::fetch::{read_ahead, watch_head};
use crate::handle::{Dispatched, handle};
use crate::order::KeyOrder;
use crate::partition::PartitionState;
use crate::settings::PAGES_AHEAD;
use crate::shared::Shared;

/// The handlers in flight of one partition.
type Running = FuturesUnordered<BoxFuture<'static, ()>>;

/// Why dispatching ended.
enum Ended {
    /// The worker said stop.
    Stop(Stop),
    /// A handler stopped the partition on a poison entry.
    Poisoned,
}

/// Aborts a task when dropped: the read-ahead and the head watch live as long as the reader.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Reads one assignment until the worker says stop, then drains (a handover) or abandons (a
/// loss) its handlers and drops the assignment: the worker's signal that it is drained.
pub(crate) async fn read_assignment(shared: Arc<Shared>, assignment: Assignment) {
    let state = Arc::new(PartitionState::new(
        assignment.partition(),
        assignment.epoch(),
        assignment.committer().clone(),
    ));
    shared.register(Arc::clone(&state));
    let (sender, pages) = mpsc::channel(PAGES_AHEAD);
    let resume_at = assignment.resume_at();
    let read = tokio::spawn(read_ahead(
        Arc::clone(&shared),
        Arc::clone(&state),
        resume_at,
        sender,
    ));
    let head = tokio::spawn(watch_head(Arc::clone(&shared), Arc::clone(&state)));
    let (read, head) = (AbortOnDrop(read), AbortOnDrop(head));
    let mut running = Running::new();
    let ended = dispatch(&shared, &state, &assignment, pages, &mut running).await;
    drop(read);
    let stop = match ended {
        Ended::Stop(stop) => stop,
        // Stopped on a poison entry: keep the lease (no other worker runs into the same
        // entry), dispatch nothing, let the handlers in flight finish, until the worker says
        // stop. The head is still read meanwhile, so that the lag shows the log growing
        // behind the stopped partition.
        Ended::Poisoned => until_stopped(&assignment, &mut running).await,
    };
    drop(head);
    finish(stop, running).await;
    shared.unregister(state.partition, state.epoch);
    drop(assignment);
}

/// Hands entries to handlers in log order until the worker says stop or a handler stops the
/// partition, driving the handlers in flight all along.
async fn dispatch(
    shared: &Arc<Shared>,
    state: &Arc<PartitionState>,
    assignment: &Assignment,
    mut pages: mpsc::Receiver<Vec<Entry>>,
    running: &mut Running,
) -> Ended {
    let mut stopped = pin!(assignment.stopped());
    let mut poisoned = pin!(state.poisoned.notified());
    let mut order = KeyOrder::default();
    loop {
        let entries = tokio::select! {
            biased;
            stop = &mut stopped => return Ended::Stop(stop),
            () = &mut poisoned => return Ended::Poisoned,
            Some(()) = running.next(), if !running.is_empty() => continue,
            entries = pages.recv() => match entries {
                Some(entries) => entries,
                None => return Ended::Stop(stopped.await),
            },
        };
        for entry in entries {
            // Room among the partition's handlers: drive them until one finishes.
            while running.len() >= shared.settings.max_in_flight {
                tokio::select! {
                    biased;
                    stop = &mut stopped => return Ended::Stop(stop),
                    () = &mut poisoned => return Ended::Poisoned,
                    _ = running.next() => {}
                }
            }
            if state.stopped_at().is_some() {
                return Ended::Poisoned;
            }
            // Checked right before each dispatch: a worker frozen past its local deadline
            // finds out here, before its lease keeper has run again.
            if !assignment.is_held() {
                return Ended::Stop(assignment.stop().unwrap_or(Stop::Lost));
            }
            // The committer's room is shared by every partition: while it is full, keep
            // driving this partition's handlers, whose completions may be what frees it.
            let dispatched = loop {
                tokio::select! {
                    biased;
                    stop = &mut stopped => return Ended::Stop(stop),
                    dispatched = state.committer.dispatched(entry.position) => break dispatched,
                    Some(()) = running.next(), if !running.is_empty() => {}
                }
            };
            if let Err(error) = dispatched {
                tracing::warn!(partition = state.partition, %error, "the committer refused a dispatch");
                return Ended::Stop(assignment.stop().unwrap_or(Stop::Lost));
            }
            let (after, finished) = match (&entry.key, shared.settings.ordered_by_key) {
                (Some(key), true) => {
                    let (after, finished) = order.chain(key);
                    (after, Some(finished))
                }
                _ => (None, None),
            };
            let job = Dispatched {
                entry: Arc::new(entry),
                after,
                finished,
            };
            running.push(Box::pin(handle(Arc::clone(shared), Arc::clone(state), job)));
        }
    }
}

/// Drives the handlers in flight until the worker says stop.
async fn until_stopped(assignment: &Assignment, running: &mut Running) -> Stop {
    let mut stopped = pin!(assignment.stopped());
    loop {
        tokio::select! {
            biased;
            stop = &mut stopped => return stop,
            Some(()) = running.next(), if !running.is_empty() => {}
        }
    }
}

/// After the stop: a handover drives the handlers in flight until its drain deadline; a loss
/// abandons them at once (another worker may own the partition already).
async fn finish(stop: Stop, mut running: Running) {
    if let Stop::Handover { drain_deadline } = stop {
        let drain = async { while running.next().await.is_some() {} };
        let _ = tokio::time::timeout_at(drain_deadline, drain).await;
    }
    drop(running);
}
