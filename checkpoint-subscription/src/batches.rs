//! The reader of one assignment for a transactional handler: batches from the claimed
//! checkpoint, each handled and advanced in one transaction, one after the other.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use checkpoint_core::source::{Entry, Page};
use checkpoint_core::transactional::TransactionalStore;
use checkpoint_core::{Error, Fingerprint};
use checkpoint_worker::{Assignment, Stop};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;

use crate::OnPoison;
use crate::attempts::{Poison, error_text, panic_text};
use crate::handle::{park, stop_on};
use crate::partition::PartitionState;
use crate::retry::Retry;
use crate::settings::{FIRST_READ_PAUSE, LONGEST_WAIT};
use crate::shared::{ReadBatches, Shared};
use crate::transactional_handler::TransactionalHandler;

/// The store, the user's handler and the projection's fingerprint.
pub(crate) struct Batches<S: TransactionalStore> {
    pub(crate) store: Arc<S>,
    pub(crate) handler: Arc<dyn TransactionalHandler<S::Transaction>>,
    pub(crate) fingerprint: Fingerprint,
}

/// How one try of a batch ended.
enum Try {
    Committed,
    /// The checkpoint is no longer where this reader left it: another owner advanced it.
    Moved(Option<u64>),
    Handler(String),
    Store(Error),
}

/// How a batch (with its retries) ended.
enum Outcome {
    /// Committed: the checkpoint is at the batch's end.
    Done,
    /// Another owner has the partition: stop reading it.
    Moved,
    /// Stopped on a poison entry ([`OnPoison::Stop`]).
    Poisoned,
}

/// Resolves when the worker says the lease is lost, never on a handover: then the batch in
/// progress finishes (that is the drain) and the reader stops before the next.
async fn lost(assignment: &Assignment) {
    if matches!(assignment.stopped().await, Stop::Lost) {
        return;
    }
    std::future::pending::<()>().await;
}

impl<S: TransactionalStore + 'static> ReadBatches for Batches<S> {
    fn read(
        self: Arc<Self>,
        shared: Arc<Shared>,
        assignment: Assignment,
    ) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let state = Arc::new(PartitionState::new(
                assignment.partition(),
                assignment.epoch(),
                assignment.committer().clone(),
            ));
            shared.register(Arc::clone(&state));
            tokio::select! {
                biased;
                () = lost(&assignment) => {}
                () = self.project(&shared, &state, &assignment) => {}
            }
            // Stopped on a poison entry or a moved checkpoint: keep the lease until told.
            let _ = assignment.stopped().await;
            shared.unregister(state.partition, state.epoch);
            drop(assignment);
        })
    }
}

impl<S: TransactionalStore + 'static> Batches<S> {
    /// Claims the checkpoint, then reads and commits batches until the worker says stop.
    async fn project(&self, shared: &Shared, state: &PartitionState, assignment: &Assignment) {
        let Some(mut stored) = self.claim(shared, state, assignment).await else {
            return;
        };
        state.set_committed(stored);
        let mut from = stored;
        while assignment.stop().is_none() {
            let Some(page) = next_page(shared, state, assignment, from).await else {
                return;
            };
            from = page.next.max(from);
            if page.entries.is_empty() {
                continue;
            }
            state.read(page.entries.iter().map(|e| (e.position, e.appended_at)));
            if !assignment.is_held() {
                return;
            }
            let to = from.max(page.entries.last().map_or(from, |last| last.position + 1));
            match self.batch(shared, state, stored, to, &page.entries).await {
                Outcome::Done => stored = to,
                Outcome::Moved | Outcome::Poisoned => return,
            }
            state.set_committed(stored);
        }
    }

    /// The stored position under this projection's fingerprint (created at `resume_at` on
    /// first use); `None` when refused (a changed query: the partition stops) or stopped.
    async fn claim(
        &self,
        shared: &Shared,
        state: &PartitionState,
        assignment: &Assignment,
    ) -> Option<u64> {
        let pauses = Retry::exponential(FIRST_READ_PAUSE, LONGEST_WAIT);
        let mut failures = 0;
        loop {
            let claim = self.store.claim(
                &shared.group,
                &shared.subscription,
                state.partition,
                self.fingerprint,
                assignment.resume_at(),
            );
            match claim.await {
                Ok(position) => return Some(position),
                Err(error @ Error::QueryChanged { .. }) => {
                    tracing::error!(partition = state.partition, %error, "the projection's query changed: the partition stops");
                    state.stop_at(assignment.resume_at(), error.to_string());
                    return None;
                }
                Err(error) => {
                    failures += 1;
                    tracing::warn!(partition = state.partition, %error, "claiming the checkpoint failed; retrying");
                    tokio::time::sleep(pauses.pause(failures)).await;
                }
            }
            if assignment.stop().is_some() {
                return None;
            }
        }
    }

    /// Commits `entries` as one batch from `stored` to `to`, retrying the handler as the retry
    /// policy says and the store for as long as it fails; a batch that fails every retry is
    /// run one entry at a time.
    async fn batch(
        &self,
        shared: &Shared,
        state: &PartitionState,
        stored: u64,
        to: u64,
        entries: &[Entry],
    ) -> Outcome {
        match self
            .with_retries(shared, state.partition, stored, to, entries)
            .await
        {
            Ok(outcome) => outcome,
            Err(_) if entries.len() > 1 => {
                self.one_by_one(shared, state, stored, to, entries).await
            }
            Err(poison) => {
                self.poison(shared, state, stored, to, &entries[0], poison)
                    .await
            }
        }
    }

    /// The batch's entries, each in a batch of its own, to find the poison one; the last one
    /// advances to the batch's end (past a final gap).
    async fn one_by_one(
        &self,
        shared: &Shared,
        state: &PartitionState,
        mut stored: u64,
        to: u64,
        entries: &[Entry],
    ) -> Outcome {
        for (index, entry) in entries.iter().enumerate() {
            let end = if index + 1 == entries.len() {
                to
            } else {
                entry.position + 1
            };
            let single = std::slice::from_ref(entry);
            let outcome = match self
                .with_retries(shared, state.partition, stored, end, single)
                .await
            {
                Ok(outcome) => outcome,
                Err(poison) => self.poison(shared, state, stored, end, entry, poison).await,
            };
            match outcome {
                Outcome::Done => {
                    stored = end;
                    state.set_committed(stored);
                }
                other => return other,
            }
        }
        Outcome::Done
    }

    /// Tries the batch until it commits, another owner moved the checkpoint, or the handler
    /// has failed as often as the retry policy allows (then `Err` with its last error and the
    /// runs). Store failures are retried without limit: they say nothing about the entries.
    async fn with_retries(
        &self,
        shared: &Shared,
        partition: u32,
        stored: u64,
        to: u64,
        entries: &[Entry],
    ) -> Result<Outcome, Poison> {
        let retry = shared.settings.retry;
        let store_pauses = Retry::exponential(FIRST_READ_PAUSE, LONGEST_WAIT);
        let (mut failures, mut store_failures) = (0, 0);
        loop {
            match self.try_once(shared, partition, stored, to, entries).await {
                Try::Committed => {
                    let handled = u64::try_from(entries.len()).unwrap_or(u64::MAX);
                    shared
                        .counters
                        .handled
                        .fetch_add(handled, Ordering::Relaxed);
                    return Ok(Outcome::Done);
                }
                // Our own commit whose answer was lost lands us exactly at `to`.
                Try::Moved(Some(current)) if current == to => return Ok(Outcome::Done),
                Try::Moved(current) => {
                    tracing::warn!(
                        partition,
                        stored,
                        ?current,
                        "the checkpoint moved: another owner has the partition"
                    );
                    return Ok(Outcome::Moved);
                }
                Try::Store(error) => {
                    store_failures += 1;
                    tracing::warn!(partition, %error, "the batch's transaction failed; retrying");
                    tokio::time::sleep(store_pauses.pause(store_failures)).await;
                }
                Try::Handler(error) => {
                    failures += 1;
                    if failures >= retry.max_attempts() {
                        return Err(Poison {
                            error,
                            attempts: failures,
                        });
                    }
                    tracing::warn!(partition, first = entries[0].position, attempt = failures, %error, "handler failed; the batch is rolled back and retried");
                    shared.counters.retries.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(retry.pause(failures)).await;
                }
            }
        }
    }

    /// One transaction: the handler, the advance from `stored` to `to`, the commit. Dropping
    /// the transaction on any failure rolls it back.
    async fn try_once(
        &self,
        shared: &Shared,
        partition: u32,
        stored: u64,
        to: u64,
        entries: &[Entry],
    ) -> Try {
        let mut transaction = match self.store.begin_transaction().await {
            Ok(transaction) => transaction,
            Err(error) => return Try::Store(error),
        };
        // No entries: an advance alone, past a parked entry.
        if !entries.is_empty() {
            let run = AssertUnwindSafe(self.handler.handle(&mut transaction, entries));
            match run.catch_unwind().await {
                Ok(Ok(())) => {}
                Ok(Err(error)) => return Try::Handler(error_text(&*error)),
                Err(panic) => {
                    return Try::Handler(format!("the handler panicked: {}", panic_text(&*panic)));
                }
            }
        }
        let advance = self.store.advance_in_transaction(
            &mut transaction,
            &shared.group,
            &shared.subscription,
            partition,
            stored,
            to,
        );
        match advance.await {
            Ok(()) => {}
            Err(Error::Moved { current, .. }) => return Try::Moved(current),
            Err(error) => return Try::Store(error),
        }
        match self.store.commit_transaction(transaction).await {
            Ok(()) => Try::Committed,
            Err(error) => Try::Store(error),
        }
    }

    /// A poison entry: parked, then the checkpoint advanced past it alone; or the partition
    /// stopped below it.
    async fn poison(
        &self,
        shared: &Shared,
        state: &PartitionState,
        stored: u64,
        to: u64,
        entry: &Entry,
        poison: Poison,
    ) -> Outcome {
        let OnPoison::Park(parked) = &shared.settings.on_poison else {
            stop_on(shared, state, entry.position, poison);
            return Outcome::Poisoned;
        };
        park(shared, &**parked, state.partition, entry.position, poison).await;
        // Past the parked entry: an advance alone (the handler is not called without entries,
        // so only the store can fail it, and store failures are retried without limit).
        self.with_retries(shared, state.partition, stored, to, &[])
            .await
            .unwrap_or(Outcome::Moved)
    }
}

/// The next page from `from`, waiting on the source while it has nothing; `None` once the
/// worker says stop. Failed reads are retried after growing pauses.
async fn next_page(
    shared: &Shared,
    state: &PartitionState,
    assignment: &Assignment,
    from: u64,
) -> Option<Page> {
    let pauses = Retry::exponential(FIRST_READ_PAUSE, LONGEST_WAIT);
    let mut failures = 0;
    loop {
        let read = shared
            .source
            .read(state.partition, from, shared.settings.page_size);
        let page = tokio::select! {
            biased;
            _ = assignment.stopped() => return None,
            page = read => page,
        };
        match page {
            Ok(page) if !page.entries.is_empty() || page.next > from => return Some(page),
            Ok(_) => {
                let wait =
                    tokio::time::timeout(LONGEST_WAIT, shared.source.wait(state.partition, from));
                tokio::select! {
                    biased;
                    _ = assignment.stopped() => return None,
                    _ = wait => {}
                }
            }
            Err(error) => {
                failures += 1;
                shared
                    .counters
                    .source_errors
                    .fetch_add(1, Ordering::Relaxed);
                tracing::warn!(partition = state.partition, from, %error, "reading the source failed; retrying");
                tokio::time::sleep(pauses.pause(failures)).await;
            }
        }
    }
}
