//! The local deadline of a worker's leases, shared between the lease keeper (which moves it
//! at every renew) and the assignments (which check it before they act).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

/// The instant until which the worker may treat its leases as held, on tokio's monotonic clock
/// (so tokio's paused clock drives it in tests). Stored as nanoseconds after a base instant;
/// 0 means no lease is held.
#[derive(Debug)]
pub(crate) struct Deadline {
    base: Instant,
    nanos: AtomicU64,
    /// When the answer of the latest acquire of the keeper's own (a claim) arrived. Under a
    /// lock so that recording a grant and judging a `NotHeld` by it ([`expire`](Self::expire))
    /// cannot interleave: the renewer and the keeper run in tasks of their own.
    granted: Mutex<Option<Instant>>,
}

impl Deadline {
    pub(crate) fn new() -> Self {
        Self {
            base: Instant::now(),
            nanos: AtomicU64::new(0),
            granted: Mutex::new(None),
        }
    }

    /// The deadline, if one is set.
    pub(crate) fn get(&self) -> Option<Instant> {
        match self.nanos.load(Ordering::Acquire) {
            0 => None,
            nanos => Some(self.base + Duration::from_nanos(nanos)),
        }
    }

    /// Moves the deadline to `deadline` unless it is later already (an acquire or renew
    /// succeeded). Never back: renews may be in flight together, and one that answers late
    /// must not undo a later one's extension.
    pub(crate) fn extend(&self, deadline: Instant) {
        let nanos = deadline.saturating_duration_since(self.base).as_nanos();
        let nanos = u64::try_from(nanos).unwrap_or(u64::MAX).max(1);
        self.nanos.fetch_max(nanos, Ordering::AcqRel);
    }

    /// Moves the deadline to `deadline` after an acquire of the keeper's own succeeded, and
    /// notes that its answer arrived at `answered_at` (when its grants count as granted).
    pub(crate) fn grant(&self, deadline: Instant, answered_at: Instant) {
        let mut granted = self.granted.lock().unwrap_or_else(PoisonError::into_inner);
        *granted = Some(granted.map_or(answered_at, |at| at.max(answered_at)));
        self.extend(deadline);
    }

    /// A renew sent at `sent_at` was answered `NotHeld`: clears the deadline unless an acquire
    /// whose answer arrived at or after `sent_at` moved it. Returns whether it cleared it.
    ///
    /// Why that acquire's deadline stands: the `NotHeld` says the heartbeat was gone when the
    /// store executed the renew, which may have been before it executed the acquire (sent
    /// later, or answered later: the renew says nothing of it). That acquire started a
    /// heartbeat or found one live, and its deadline (counted from its own send, by
    /// `holder_deadline`) ends before the store can grant its leases to anyone else, whatever
    /// the renew said. Every extension the `NotHeld` voids (a request the store executed under
    /// the heartbeat that ended) ends, by the same rule, before that heartbeat did, so before
    /// this answer arrived: what is left ahead was set under a heartbeat started since.
    pub(crate) fn expire(&self, sent_at: Instant) -> bool {
        let granted = self.granted.lock().unwrap_or_else(PoisonError::into_inner);
        if granted.is_some_and(|at| at >= sent_at) {
            return false;
        }
        self.clear();
        true
    }

    /// Clears the deadline (nothing is held any more).
    pub(crate) fn clear(&self) {
        self.nanos.store(0, Ordering::Release);
    }

    /// Whether `now` is before the deadline.
    pub(crate) fn holds_at(&self, now: Instant) -> bool {
        self.get().is_some_and(|deadline| now < deadline)
    }
}
