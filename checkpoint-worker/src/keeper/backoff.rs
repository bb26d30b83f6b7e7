//! How soon the next round comes while something is moving, and how it backs off when the
//! keeper's lease requests fail or run slow.

use std::time::Duration;

use super::Keeper;

/// The most a failing keeper doubles its pause by (2⁶ × the settle time, capped at the renew
/// interval anyway).
const MAX_DOUBLINGS: u32 = 6;

impl Keeper {
    /// The wait before the next round while something is moving (a claim refused or granted, a
    /// handover asked for): a tenth of the renew interval, at most 50 ms, spread by the
    /// worker's rotation. It doubles with every keeper request that failed in a row, and is
    /// never shorter than the last round took, both capped at the renew interval: a store that
    /// is loaded or failing gets fewer claims, asks and table reads, not more, and a fleet
    /// that lost its leases to a slow store comes back without a storm of them.
    pub(super) fn pause_while_moving(&self) -> Duration {
        let interval = self.shared.settings.renew_interval;
        let base = (interval / 10).min(Duration::from_millis(50));
        let spread = base * u32::try_from(self.rotation % 5).unwrap_or(0) / 10;
        let doubled = (base + spread) * 2u32.pow(self.failures.min(MAX_DOUBLINGS));
        doubled.max(self.last_round).min(interval)
    }
}
