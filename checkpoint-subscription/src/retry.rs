//! How a failed handler is retried: exponential backoff with jitter, bounded (the workspace's
//! one [`Backoff`], counted in the handler's runs).

use std::time::Duration;

use checkpoint_core::backoff::{Backoff, Jitter};

/// How many times a handler runs on an entry, and how long it waits between runs.
///
/// After the `n`-th failure in a row the subscription waits a random time between half and
/// all of `min(first × 2ⁿ⁻¹, max)` ("equal jitter": handlers that failed together do not
/// retry together, and the wait never drops below half its step), then runs the handler again,
/// up to [`attempts`](Self::attempts) runs in all. After the last failure the entry is poison:
/// see [`OnPoison`](crate::OnPoison).
///
/// ```
/// use std::time::Duration;
/// use checkpoint_subscription::Retry;
///
/// let retry = Retry::exponential(Duration::from_millis(100), Duration::from_secs(5)).attempts(4);
/// assert_eq!(retry.max_attempts(), 4);
/// let pause = retry.pause(3); // after the third failure: between 200 and 400 ms
/// assert!(pause >= Duration::from_millis(200) && pause <= Duration::from_millis(400));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retry {
    /// The workspace's one backoff (equal jitter); its attempts are the handler's runs.
    backoff: Backoff,
}

impl Default for Retry {
    /// Five runs, pauses from 100 ms doubling up to 10 s.
    fn default() -> Self {
        Self::exponential(Duration::from_millis(100), Duration::from_secs(10))
    }
}

impl Retry {
    /// Exponential backoff from `first`, doubling after each failure, never above `max`, with
    /// the default five runs.
    pub fn exponential(first: Duration, max: Duration) -> Self {
        Self {
            backoff: Backoff::new(first, max)
                .with_jitter(Jitter::Equal)
                .with_attempts(5),
        }
    }

    /// One run and no retry: the first failure makes the entry poison.
    pub fn never() -> Self {
        Self::default().attempts(1)
    }

    /// Runs the handler at most `attempts` times on an entry (at least once).
    pub fn attempts(self, attempts: u32) -> Self {
        Self {
            backoff: self.backoff.with_attempts(attempts.max(1)),
        }
    }

    /// How many times the handler runs on an entry at most.
    pub fn max_attempts(&self) -> u32 {
        self.backoff.attempts()
    }

    /// The step after `failures` failures in a row (≥ 1): `min(first × 2ⁿ⁻¹, max)`.
    pub fn step(&self, failures: u32) -> Duration {
        // The backoff counts its doublings from 0: the first failure waits `first`.
        self.backoff.ceiling(failures.saturating_sub(1))
    }

    /// The pause after `failures` failures in a row: a random duration between half the
    /// [`step`](Self::step) and all of it.
    pub fn pause(&self, failures: u32) -> Duration {
        self.backoff.delay(failures.saturating_sub(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_double_up_to_the_maximum_and_pauses_stay_within_half_and_all() {
        let retry = Retry::exponential(Duration::from_millis(100), Duration::from_secs(1));
        let steps: Vec<u128> = (1..=6).map(|n| retry.step(n).as_millis()).collect();
        assert_eq!(steps, [100, 200, 400, 800, 1000, 1000]);
        for failures in 1..=6 {
            let step = retry.step(failures);
            for _ in 0..200 {
                let pause = retry.pause(failures);
                assert!(
                    pause >= step / 2 && pause <= step,
                    "{pause:?} for step {step:?}"
                );
            }
        }
        assert_eq!(retry.step(u32::MAX), Duration::from_secs(1));
    }

    #[test]
    fn jitter_spreads_the_pauses() {
        let retry = Retry::exponential(Duration::from_secs(1), Duration::from_secs(1));
        let distinct: std::collections::BTreeSet<Duration> =
            (0..50).map(|_| retry.pause(1)).collect();
        assert!(
            distinct.len() > 40,
            "{} distinct pauses of 50",
            distinct.len()
        );
    }

    #[test]
    fn at_least_one_attempt() {
        assert_eq!(Retry::default().attempts(0).max_attempts(), 1);
        assert_eq!(Retry::never().max_attempts(), 1);
    }
}
