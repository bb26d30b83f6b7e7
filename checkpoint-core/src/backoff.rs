//! The one retry pause of the workspace: exponential, bounded, with jitter.
//!
//! A [`Backoff`] says how long to wait after the n-th failed attempt in a row: a ceiling of
//! `base × 2ⁿ`, never above `max`, and a random pause under that ceiling ([`Jitter`]), so that
//! callers that failed together do not all come back at the same instant. It also bounds how many
//! attempts there are ([`Backoff::retry_after`]).
//!
//! It is pure timing: it neither sleeps nor decides *what* is retried. Which errors are worth
//! another attempt stays with each caller (see [`Error::is_retryable`](crate::Error::is_retryable)).
//!
//! ```
//! use std::time::Duration;
//! use checkpoint_core::backoff::{Backoff, Jitter};
//!
//! let ms = Duration::from_millis;
//! let backoff = Backoff::new(ms(100), ms(1_000)).with_attempts(4);
//! // The ceilings double from the base up to the maximum.
//! assert_eq!(backoff.ceiling(1), ms(200));
//! assert_eq!(backoff.ceiling(3), ms(800));
//! assert_eq!(backoff.ceiling(9), ms(1_000));
//! // Equal jitter (the default): between half the ceiling and the ceiling.
//! let pause = backoff.retry_after(1).unwrap();
//! assert!(ms(100) <= pause && pause <= ms(200));
//! // The fourth failed attempt is the last.
//! assert_eq!(backoff.retry_after(4), None);
//! // Full jitter: anywhere from nothing up to the ceiling.
//! let full = backoff.with_jitter(Jitter::Full);
//! assert!(full.delay(2) <= ms(400));
//! ```

use std::ops::RangeInclusive;
use std::time::Duration;

/// Where under the ceiling a pause falls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Jitter {
    /// Uniformly in `[ceiling / 2, ceiling]`: every pause stays close to the schedule (at least
    /// half of it), for a writer whose retries should not come early.
    Equal,
    /// Uniformly in `[0, ceiling]`: the widest spread, for contenders that refused each other
    /// and must not meet again.
    Full,
}

/// Exponential backoff with jitter, bounded in length (`base`, `max`) and in attempts.
///
/// Attempts are counted from 1: after the n-th failed attempt in a row the pause is at most
/// `base × 2ⁿ`, and never more than `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    base: Duration,
    max: Duration,
    attempts: u32,
    jitter: Jitter,
}

impl Backoff {
    /// A backoff from `base`, doubling, at most `max` (raised to `base` if below it), with
    /// [`Jitter::Equal`] and no bound on the attempts.
    pub fn new(base: Duration, max: Duration) -> Self {
        Self {
            base,
            max: max.max(base),
            attempts: u32::MAX,
            jitter: Jitter::Equal,
        }
    }

    /// The same backoff, giving up after `attempts` attempts in all (the first included).
    #[must_use]
    pub fn with_attempts(self, attempts: u32) -> Self {
        Self { attempts, ..self }
    }

    /// The same backoff with another [`Jitter`].
    #[must_use]
    pub fn with_jitter(self, jitter: Jitter) -> Self {
        Self { jitter, ..self }
    }

    /// The shortest ceiling, that of no failure yet.
    pub fn base(&self) -> Duration {
        self.base
    }

    /// The longest pause.
    pub fn max(&self) -> Duration {
        self.max
    }

    /// How many attempts there are in all.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The ceiling after the `attempt`-th failed attempt in a row: `base × 2^attempt`, at most
    /// `max`. Without randomness: the schedule the jitter spreads under.
    pub fn ceiling(&self, attempt: u32) -> Duration {
        // 2³¹ times any base of a nanosecond or more is past every useful maximum anyway.
        self.base
            .checked_mul(1 << attempt.min(31))
            .map_or(self.max, |ceiling| ceiling.min(self.max))
    }

    /// A random pause after the `attempt`-th failed attempt in a row, under
    /// [`ceiling`](Self::ceiling) as the [`Jitter`] says. Never above `max`.
    pub fn delay(&self, attempt: u32) -> Duration {
        Duration::from_nanos(fastrand::u64(self.nanos(attempt)))
    }

    /// The pause before trying again after the `attempt`-th failed attempt in a row
    /// ([`delay`](Self::delay)), or `None` when that attempt was the last.
    pub fn retry_after(&self, attempt: u32) -> Option<Duration> {
        (attempt < self.attempts).then(|| self.delay(attempt))
    }

    /// The nanoseconds a pause after `attempt` is drawn from.
    fn nanos(&self, attempt: u32) -> RangeInclusive<u64> {
        // Beyond u64 nanoseconds (584 years) the pause is drawn under that: still under `max`.
        let ceiling = u64::try_from(self.ceiling(attempt).as_nanos()).unwrap_or(u64::MAX);
        let floor = match self.jitter {
            Jitter::Equal => ceiling / 2,
            Jitter::Full => 0,
        };
        floor..=ceiling
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn ms(millis: u64) -> Duration {
        Duration::from_millis(millis)
    }

    /// Every pause of `backoff` after `attempt`, drawn `draws` times from a fixed seed.
    fn draws(backoff: &Backoff, attempt: u32, draws: usize) -> Vec<Duration> {
        let mut rng = fastrand::Rng::with_seed(u64::from(attempt) + 7);
        (0..draws)
            .map(|_| Duration::from_nanos(rng.u64(backoff.nanos(attempt))))
            .collect()
    }

    #[test]
    fn the_ceiling_doubles_from_the_base_up_to_the_maximum() {
        let backoff = Backoff::new(ms(100), ms(2_000));
        let ceilings: Vec<_> = (0..=6).map(|n| backoff.ceiling(n)).collect();
        assert_eq!(
            ceilings,
            [
                ms(100),
                ms(200),
                ms(400),
                ms(800),
                ms(1_600),
                ms(2_000),
                ms(2_000)
            ]
        );
        assert_eq!(backoff.ceiling(u32::MAX), ms(2_000));
        let huge = Backoff::new(Duration::MAX / 2, Duration::MAX);
        assert_eq!(
            huge.ceiling(40),
            Duration::MAX,
            "an overflow is the maximum"
        );
    }

    #[test]
    fn a_maximum_below_the_base_is_the_base() {
        let backoff = Backoff::new(ms(500), ms(100));
        assert_eq!(backoff.max(), ms(500));
        assert_eq!(backoff.ceiling(3), ms(500));
    }

    #[test]
    fn equal_jitter_stays_between_half_the_ceiling_and_the_ceiling() {
        let backoff = Backoff::new(ms(100), ms(2_000));
        for attempt in 0..=8 {
            let ceiling = backoff.ceiling(attempt);
            for pause in draws(&backoff, attempt, 1_000) {
                assert!(pause <= ceiling && pause <= backoff.max(), "{pause:?}");
                assert!(pause >= ceiling / 2, "{pause:?} under {ceiling:?}");
                assert!(pause >= backoff.base() / 2, "{pause:?}");
            }
        }
    }

    #[test]
    fn full_jitter_stays_under_the_ceiling() {
        let backoff = Backoff::new(ms(100), ms(2_000)).with_jitter(Jitter::Full);
        for attempt in 0..=8 {
            let pauses = draws(&backoff, attempt, 1_000);
            assert!(
                pauses
                    .iter()
                    .all(|&pause| pause <= backoff.ceiling(attempt))
            );
            // The spread reaches below half the ceiling, which equal jitter never does.
            assert!(
                pauses
                    .iter()
                    .any(|&pause| pause < backoff.ceiling(attempt) / 2)
            );
        }
    }

    #[test]
    fn the_pauses_grow_with_the_attempts() {
        let backoff = Backoff::new(ms(10), ms(10_000));
        for attempt in 1..8 {
            let now = draws(&backoff, attempt, 500);
            let next = draws(&backoff, attempt + 1, 500);
            // Equal jitter: the next attempt's shortest pause is this one's ceiling or more.
            let longest_now = now.iter().max().copied().unwrap_or_default();
            let shortest_next = next.iter().min().copied().unwrap_or_default();
            assert!(
                shortest_next >= longest_now,
                "{shortest_next:?} < {longest_now:?}"
            );
        }
        let full = backoff.with_jitter(Jitter::Full);
        let mean = |attempt| draws(&full, attempt, 2_000).iter().sum::<Duration>() / 2_000;
        assert!(mean(2) > mean(1) && mean(5) > mean(2));
    }

    #[test]
    fn the_jitter_spreads_the_pauses() {
        let backoff = Backoff::new(ms(100), ms(2_000));
        let mut pauses = draws(&backoff, 3, 200);
        pauses.sort();
        pauses.dedup();
        assert!(pauses.len() > 150, "{} distinct pauses", pauses.len());
        // Unseeded draws differ too.
        let unseeded: std::collections::BTreeSet<_> = (0..50).map(|_| backoff.delay(3)).collect();
        assert!(unseeded.len() > 40, "{} distinct pauses", unseeded.len());
    }

    #[test]
    fn the_attempts_are_bounded() {
        let backoff = Backoff::new(ms(1), ms(8)).with_attempts(3);
        assert_eq!(backoff.attempts(), 3);
        assert!(backoff.retry_after(1).is_some_and(|pause| pause <= ms(2)));
        assert!(backoff.retry_after(2).is_some_and(|pause| pause <= ms(4)));
        assert_eq!(backoff.retry_after(3), None);
        assert_eq!(backoff.retry_after(u32::MAX), None);
        let unbounded = Backoff::new(ms(1), ms(8));
        assert!(unbounded.retry_after(1_000_000).is_some());
    }
}
