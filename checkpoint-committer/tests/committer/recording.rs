//! A store wrapper that fails writes on a schedule, delays them, and checks every write against
//! the test's own model of what is done.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use checkpoint_core::door::BoxFuture;
use checkpoint_core::layer::{Around, Call, Layered};
use checkpoint_core::{Checkpoint, Error, InMemoryCheckpointStore, Operation};

/// What the recorder does with one `save_all` call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Write it.
    None,
    /// Fail before writing anything.
    Before {
        /// Whether the error says a retry may help.
        retryable: bool,
    },
    /// Write it, then fail (the caller cannot know it was written).
    After,
}

/// The highest position every entry below which is completed, per (subscription, partition):
/// the test's model, which the recorder reads at every write.
pub type Truth = Arc<Mutex<HashMap<(String, u32), u64>>>;

/// The in-memory store behind a [`Recording`] layer.
pub type RecordingStore = Layered<InMemoryCheckpointStore, Recording>;

/// The in-memory store, every `save_all` checked and recorded, failed on the schedule of
/// `faults` and delayed by `delays` in turn.
pub fn recording_store(truth: Truth, faults: Vec<Fault>, delays: Vec<Duration>) -> RecordingStore {
    let recording = Recording {
        truth,
        faults: Mutex::new(faults.into()),
        delays,
        state: Mutex::new(Record::default()),
    };
    Layered::new(InMemoryCheckpointStore::new(), recording)
}

/// Checks every `save_all` against the model as it starts, and records it.
pub struct Recording {
    truth: Truth,
    faults: Mutex<VecDeque<Fault>>,
    delays: Vec<Duration>,
    state: Mutex<Record>,
}

#[derive(Debug, Default)]
struct Record {
    calls: usize,
    written: HashMap<(String, u32), u64>,
    /// The positions the committer knows are stored: resumed at, or written by a call that
    /// returned `Ok`. A write of one of them again writes nothing new.
    acknowledged: HashMap<(String, u32), u64>,
    violations: Vec<String>,
}

impl Recording {
    /// `save_all` calls so far, failed ones included.
    pub fn calls(&self) -> usize {
        self.state.lock().unwrap().calls
    }

    /// Tells the recorder that the committer knows `position` is stored (it resumed there).
    pub fn acknowledge(&self, subscription: &str, partition: u32, position: u64) {
        let mut state = self.state.lock().unwrap();
        let known = state
            .acknowledged
            .entry((subscription.to_owned(), partition))
            .or_insert(0);
        *known = (*known).max(position);
    }

    /// What the checks found wrong, in order.
    pub fn violations(&self) -> Vec<String> {
        self.state.lock().unwrap().violations.clone()
    }
}

impl Recording {
    /// Checks and records `batch`, waits its delay, then fails or writes it as scheduled.
    async fn save_all<T>(
        &self,
        batch: &[Checkpoint],
        request: BoxFuture<'_, T>,
    ) -> Result<T, Error> {
        let (call, fault) = {
            let mut state = self.state.lock().unwrap();
            state.calls += 1;
            let fault = self
                .faults
                .lock()
                .unwrap()
                .pop_front()
                .unwrap_or(Fault::None);
            let truth = self.truth.lock().unwrap();
            let call = state.calls;
            if batch.is_empty() {
                state
                    .violations
                    .push(format!("write {call}: an empty batch"));
            }
            for checkpoint in batch {
                let key = (checkpoint.subscription.clone(), checkpoint.partition);
                let true_position = truth.get(&key).copied();
                if true_position.is_none_or(|t| checkpoint.position > t) {
                    state.violations.push(format!(
                        "write {call}: {key:?} at {}, but the true gap-free position is {true_position:?}",
                        checkpoint.position
                    ));
                }
                let known = state.acknowledged.get(&key).copied();
                if known.is_some_and(|known| checkpoint.position <= known) {
                    state.violations.push(format!(
                        "write {call}: {key:?} at {}, which the committer knows is stored ({known:?}): nothing moved",
                        checkpoint.position
                    ));
                }
                if !matches!(fault, Fault::Before { .. }) {
                    let last = state.written.get(&key).copied().unwrap_or(0);
                    if checkpoint.position < last {
                        state.violations.push(format!(
                            "write {call}: {key:?} went back from {last} to {}",
                            checkpoint.position
                        ));
                    }
                    state.written.insert(key, last.max(checkpoint.position));
                }
            }
            (call, fault)
        };
        if !self.delays.is_empty() {
            tokio::time::sleep(self.delays[call % self.delays.len()]).await;
        }
        let refused = |retryable| {
            Error::backend(
                "recording",
                Operation::SaveAll,
                retryable,
                std::io::Error::other(format!("scheduled failure of write {call}")),
            )
        };
        match fault {
            Fault::Before { retryable } => Err(refused(retryable)),
            Fault::After => {
                request.await?;
                Err(refused(true))
            }
            Fault::None => {
                let written = request.await?;
                for checkpoint in batch {
                    self.acknowledge(
                        &checkpoint.subscription,
                        checkpoint.partition,
                        checkpoint.position,
                    );
                }
                Ok(written)
            }
        }
    }
}

impl Around for Recording {
    fn around<'a, T: Send + 'static>(
        &'a self,
        call: Call<'a>,
        request: BoxFuture<'a, T>,
    ) -> BoxFuture<'a, T> {
        match call {
            Call::SaveAll { checkpoints, .. } => Box::pin(self.save_all(checkpoints, request)),
            _ => request,
        }
    }
}
