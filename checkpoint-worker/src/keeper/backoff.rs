//! How soon the next round comes while something is moving, and how it backs off when the
//! keeper's lease requests fail or run slow.

use std::time::Duration;

use super::{ColdStart, Keeper};

/// The longest settle of a cold start that found no other live worker, before its second
/// look (see `round.rs`, `cold_start`): workers started together in one process join within
/// a few milliseconds of each other, and a worker alone handles its first entry well within
/// 100 ms of its start.
pub(super) const COLD_START_SETTLE: Duration = Duration::from_millis(25);

/// The most a failing keeper doubles its pause by (2⁶ × the settle time, capped at the renew
/// interval anyway).
const MAX_DOUBLINGS: u32 = 6;

/// The longest time between two rounds at rest, in renew intervals: however slow the rounds,
/// a worker still looks at the table (for a crashed owner's partitions, a joiner) this often.
const MAX_REST_INTERVALS: u32 = 4;

impl Keeper {
    /// The wait before the next round while something is moving (a claim refused or granted, a
    /// handover asked for): a tenth of the renew interval, at most 50 ms, spread by the
    /// worker's rotation. It doubles with every keeper request that failed in a row, and is
    /// never shorter than the last round took, both capped at the renew interval: a store that
    /// is loaded or failing gets fewer claims, asks and table reads, not more, and a fleet
    /// that lost its leases to a slow store comes back without a storm of them.
    ///
    /// A lone worker's cold start settles instead, unspread: a tenth of the renew interval, at
    /// most [`COLD_START_SETTLE`], never shorter than its first look took (a slow store's
    /// joins land slowly too), doubled and capped the same way.
    pub(super) fn pause_while_moving(&self) -> Duration {
        let interval = self.shared.settings.renew_interval;
        if self.cold == ColdStart::Settling {
            let settle = (interval / 10).min(COLD_START_SETTLE);
            let doubled = settle * 2u32.pow(self.failures.min(MAX_DOUBLINGS));
            return doubled.max(self.last_round).min(interval);
        }
        let base = (interval / 10).min(Duration::from_millis(50));
        let spread = base * u32::try_from(self.rotation % 5).unwrap_or(0) / 10;
        let doubled = (base + spread) * 2u32.pow(self.failures.min(MAX_DOUBLINGS));
        doubled.max(self.last_round).min(interval)
    }

    /// The time from the start of a round at rest (nothing moving) to the start of the next:
    /// the renew interval, or twice the last round when that took longer than half of it, at
    /// most [`MAX_REST_INTERVALS`] intervals. A round is a table read and a balance: when the
    /// store or the host is loaded, every worker reading and balancing the whole table at the
    /// renew cadence is what keeps it loaded (in one process of 100 workers over 10,000
    /// partitions, rounds back to back filled the pool and starved the renews), so a worker
    /// whose rounds run slow spends at most half its time in them. A quiet store's rounds,
    /// much shorter than an interval, keep the renew cadence.
    pub(super) fn rest_pause(&self) -> Duration {
        let interval = self.shared.settings.renew_interval;
        (2 * self.last_round).clamp(interval, MAX_REST_INTERVALS * interval)
    }
}
