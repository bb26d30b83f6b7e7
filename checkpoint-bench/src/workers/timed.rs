//! A store that times every request the workers make of it, by operation: what the scale row
//! reports beside its convergence, so that a fleet that does not converge says which requests
//! were slow or failed (a renew, a read of the whole lease table, a claim).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use checkpoint_core::door::BoxFuture;
use checkpoint_core::layer::{Around, Call, Layered};

use crate::measure::Samples;
use crate::subject::BenchStore;

/// One operation's requests: how long each took, how many failed, and how many the caller
/// gave up on before their answer (a worker bounds each request by its local deadline).
#[derive(Debug, Default, Clone)]
pub(super) struct Requests {
    pub took: Vec<Duration>,
    pub failed: u64,
    pub abandoned: u64,
}

/// How a request ended.
#[derive(Debug, Clone, Copy)]
enum Outcome {
    Answered,
    Failed,
    Abandoned,
}

/// Records one request when dropped: answered, failed, or abandoned (dropped unanswered).
struct Record<'a> {
    timing: &'a Timing,
    operation: &'static str,
    started: Instant,
    outcome: Outcome,
}

impl Drop for Record<'_> {
    fn drop(&mut self) {
        let took = self.started.elapsed();
        let mut requests = self
            .timing
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let entry = requests.entry(self.operation).or_default();
        entry.took.push(took);
        match self.outcome {
            Outcome::Answered => {}
            Outcome::Failed => entry.failed += 1,
            Outcome::Abandoned => entry.abandoned += 1,
        }
    }
}

/// Every call passed to the store unchanged, the workers' calls (checkpoints and leases)
/// timed from the call to its answer (a wait for a pooled connection included: the worker
/// waits for it too).
pub(super) type Timed = Layered<Arc<dyn BenchStore>, Timing>;

/// `store`, timed.
pub(super) fn timed(store: Arc<dyn BenchStore>) -> Timed {
    Layered::new(store, Timing::default())
}

/// The layer of a [`Timed`] store: the requests so far, by operation.
#[derive(Default)]
pub(super) struct Timing {
    requests: Mutex<BTreeMap<&'static str, Requests>>,
}

impl Timing {
    /// The requests so far, by operation; the record starts again empty.
    pub(super) fn take(&self) -> BTreeMap<&'static str, Requests> {
        std::mem::take(&mut *self.requests.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl Around for Timing {
    fn around<'a, T: Send + 'static>(
        &'a self,
        call: Call<'a>,
        request: BoxFuture<'a, T>,
    ) -> BoxFuture<'a, T> {
        let Some(operation) = timed_as(&call) else {
            return request;
        };
        Box::pin(async move {
            let mut record = Record {
                timing: self,
                operation,
                started: Instant::now(),
                outcome: Outcome::Abandoned,
            };
            let result = request.await;
            record.outcome = if result.is_ok() {
                Outcome::Answered
            } else {
                Outcome::Failed
            };
            result
        })
    }
}

/// The name a worker's call is timed under (a join, an acquire of no partition, apart from a
/// claim); `None` for the calls not timed (the operations API).
fn timed_as(call: &Call<'_>) -> Option<&'static str> {
    Some(match call {
        Call::List { .. } => "list",
        Call::Load { .. } => "load",
        Call::Save { .. } => "save",
        Call::SaveAll { .. } => "save_all",
        Call::Acquire { partitions: [], .. } => "join",
        Call::Acquire { .. } => "acquire",
        Call::Renew { .. } => "renew",
        Call::Release { .. } => "release",
        Call::Leave { .. } => "leave",
        Call::Leases { .. } => "leases",
        Call::RequestHandover { .. } => "request_handover",
        _ => return None,
    })
}

/// The requests of each operation: count, failures, abandoned, p50, p99, max.
pub(super) fn describe(requests: &BTreeMap<&'static str, Requests>) -> String {
    requests
        .iter()
        .map(|(operation, requests)| {
            let max = requests.took.iter().max().copied().unwrap_or_default();
            let samples = Samples::from(requests.took.clone());
            format!(
                "{operation} {} ({} failed, {} abandoned) p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
                samples.len(),
                requests.failed,
                requests.abandoned,
                samples.p50().as_secs_f64() * 1e3,
                samples.p99().as_secs_f64() * 1e3,
                max.as_secs_f64() * 1e3
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}
