//! A worker's view of the shared in-memory store, with the faults a history injects: requests
//! that hang until woken (a paused worker, a zombie), that fail for a while (`Backend` or
//! `Timeout` errors), that are slow (virtual latency each way, so that a reply can arrive
//! well after the store executed the request), that lag for a while (more latency, beyond the
//! renew interval), and checkpoint writes that are slow or hang (beyond the drain timeout).

use std::any::Any;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use checkpoint_core::door::BoxFuture;
use checkpoint_core::layer::{Around, Call, Layered};
use checkpoint_core::{Error, InMemoryCheckpointStore, Operation, Released};
use tokio::sync::watch;
use tokio::time::Instant;

use super::record::{Record, Release, Save};

/// The faults of one worker's store, switched by the history.
#[derive(Debug)]
pub struct Faults {
    /// Virtual latency of a request, and again of its reply.
    latency_ms: AtomicU64,
    /// More latency each way, while the worker's store lags.
    lag_ms: AtomicU64,
    /// Virtual time a checkpoint write (`save`, `save_all`) takes on top.
    write_latency_ms: AtomicU64,
    /// Until when requests fail, and whether as `Timeout` (else `Backend`).
    failing: Mutex<Option<(Instant, bool)>>,
    /// How many errors were injected so far.
    injected: AtomicU64,
    /// Requests wait while this is true.
    paused: watch::Sender<bool>,
}

impl Default for Faults {
    fn default() -> Self {
        Self {
            latency_ms: AtomicU64::new(0),
            lag_ms: AtomicU64::new(0),
            write_latency_ms: AtomicU64::new(0),
            failing: Mutex::new(None),
            injected: AtomicU64::new(0),
            paused: watch::Sender::new(false),
        }
    }
}

impl Faults {
    pub fn set_latency(&self, latency: Duration) {
        let ms = u64::try_from(latency.as_millis()).unwrap_or(u64::MAX);
        self.latency_ms.store(ms, Ordering::Relaxed);
    }

    /// Every request (and its reply) takes `lag` more, until set back to zero.
    pub fn set_lag(&self, lag: Duration) {
        let ms = u64::try_from(lag.as_millis()).unwrap_or(u64::MAX);
        self.lag_ms.store(ms, Ordering::Relaxed);
    }

    /// Every checkpoint write takes `latency` more.
    pub fn set_write_latency(&self, latency: Duration) {
        let ms = u64::try_from(latency.as_millis()).unwrap_or(u64::MAX);
        self.write_latency_ms.store(ms, Ordering::Relaxed);
    }

    /// How long a checkpoint write takes now, there and back.
    pub fn write_ms(&self) -> u64 {
        let each_way =
            self.latency_ms.load(Ordering::Relaxed) + self.lag_ms.load(Ordering::Relaxed);
        2 * each_way + self.write_latency_ms.load(Ordering::Relaxed)
    }

    /// Every request fails until `until`.
    pub fn fail_until(&self, until: Instant, timeout: bool) {
        *self.failing.lock().unwrap_or_else(PoisonError::into_inner) = Some((until, timeout));
    }

    /// Requests hang (`true`) or go through again (`false`).
    pub fn pause(&self, paused: bool) {
        self.paused.send_replace(paused);
    }

    pub fn injected(&self) -> u64 {
        self.injected.load(Ordering::Relaxed)
    }

    async fn latency(&self) {
        let ms = self.latency_ms.load(Ordering::Relaxed) + self.lag_ms.load(Ordering::Relaxed);
        if ms > 0 {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
    }

    /// The injected error for `operation` now, if the store is failing.
    fn error(&self, operation: Operation) -> Option<Error> {
        let failing = *self.failing.lock().unwrap_or_else(PoisonError::into_inner);
        let (_, timeout) = failing.filter(|(until, _)| Instant::now() < *until)?;
        self.injected.fetch_add(1, Ordering::Relaxed);
        Some(if timeout {
            Error::Timeout {
                backend: "model",
                operation,
                after: Duration::from_millis(1),
            }
        } else {
            Error::backend("model", operation, true, "injected by the model")
        })
    }
}

/// The store one worker (and its committer) talks to: the shared store behind the worker's
/// [`Faulty`] layer.
pub type FaultyStore = Layered<Arc<InMemoryCheckpointStore>, Faulty>;

/// `inner` as worker `worker` sees it, with `faults`, its saves and releases in `record`.
pub fn faulty(
    inner: Arc<InMemoryCheckpointStore>,
    faults: Arc<Faults>,
    worker: usize,
    record: Arc<Record>,
) -> FaultyStore {
    let faulty = Faulty {
        faults,
        worker,
        record,
    };
    Layered::new(inner, faulty)
}

/// The faults of one worker's store around each request, and the record of what it saved
/// and released.
pub struct Faulty {
    faults: Arc<Faults>,
    worker: usize,
    record: Arc<Record>,
}

impl Around for Faulty {
    fn around<'a, T: Send + 'static>(
        &'a self,
        call: Call<'a>,
        request: BoxFuture<'a, T>,
    ) -> BoxFuture<'a, T> {
        Box::pin(async move {
            self.send(call.operation()).await?;
            if matches!(call, Call::Save { .. } | Call::SaveAll { .. }) {
                self.write().await;
            }
            let result = request.await;
            if let Ok(answer) = &result {
                self.record(call, answer);
            }
            self.reply(result).await
        })
    }
}

impl Faulty {
    /// Before the store executes a request: wait while paused, the request's latency, then
    /// the injected error if failing.
    async fn send(&self, operation: Operation) -> Result<(), Error> {
        let mut paused = self.faults.paused.subscribe();
        let _ = paused.wait_for(|paused| !paused).await;
        self.faults.latency().await;
        match self.faults.error(operation) {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    /// A checkpoint write's own latency, before the store executes it.
    async fn write(&self) {
        let ms = self.faults.write_latency_ms.load(Ordering::Relaxed);
        if ms > 0 {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
    }

    /// After the store executed it: the reply's latency.
    async fn reply<T>(&self, result: T) -> T {
        self.faults.latency().await;
        result
    }

    /// What a request that succeeded saved or released, into the record.
    fn record<T: 'static>(&self, call: Call<'_>, answer: &T) {
        match call {
            Call::Save {
                partition,
                position,
                ..
            } => self.record_saves(&[(partition, position)]),
            Call::SaveAll { checkpoints, .. } => {
                let saved: Vec<(u32, u64)> = checkpoints
                    .iter()
                    .map(|checkpoint| (checkpoint.partition, checkpoint.position))
                    .collect();
                self.record_saves(&saved);
            }
            Call::Release { .. } => {
                let answer: &dyn Any = answer;
                if let Some(released) = answer.downcast_ref::<Released>() {
                    self.record_releases(released);
                }
            }
            _ => {}
        }
    }

    fn record_saves(&self, saved: &[(u32, u64)]) {
        let at = Instant::now();
        let mut events = self.record.lock();
        for &(partition, position) in saved {
            events.saves.push(Save {
                partition,
                position,
                at,
            });
        }
    }

    fn record_releases(&self, released: &Released) {
        let (at, injected) = (Instant::now(), self.faults.injected());
        let mut events = self.record.lock();
        for &partition in &released.released {
            events.releases.push(Release {
                worker: self.worker,
                partition,
                at,
                injected,
                write_ms: self.faults.write_ms(),
            });
        }
    }
}
