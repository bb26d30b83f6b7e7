//! The local deadline of a worker's leases, shared between the lease keeper (which moves it
//! at every renew) and the assignments (which check it before they act).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

/// The instant until which the worker may treat its leases as held, on tokio's monotonic clock
/// (so tokio's paused clock drives it in tests). Stored as nanoseconds after a base instant;
/// 0 means no lease is held.
#[derive(Debug)]
pub(crate) struct Deadline {
    base: Instant,
    nanos: AtomicU64,
}

impl Deadline {
    pub(crate) fn new() -> Self {
        Self {
            base: Instant::now(),
            nanos: AtomicU64::new(0),
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

    /// Clears the deadline (nothing is held any more).
    pub(crate) fn clear(&self) {
        self.nanos.store(0, Ordering::Release);
    }

    /// Whether `now` is before the deadline.
    pub(crate) fn holds_at(&self, now: Instant) -> bool {
        self.get().is_some_and(|deadline| now < deadline)
    }
}
