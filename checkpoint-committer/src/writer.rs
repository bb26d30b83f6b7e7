//! The one writer's state: how many writes failed in a row, and when to try again.

use std::time::Duration;

use checkpoint_core::backoff::{Backoff, Jitter};
use tokio::time::Instant;

/// The state of the one writer: how many writes failed in a row, and when the periodic flush
/// may try again.
#[derive(Debug, Default)]
pub(crate) struct Writer {
    pub failures: u32,
    pub retry_at: Option<Instant>,
}

impl Writer {
    /// Whether the periodic flush must skip this tick: a failed write's backoff still runs.
    pub fn backing_off(&self) -> bool {
        self.retry_at.is_some_and(|at| Instant::now() < at)
    }

    /// A write succeeded: no backoff.
    pub fn succeeded(&mut self) {
        self.failures = 0;
        self.retry_at = None;
    }

    /// A write failed: the next periodic write waits [`backoff`] after this one. Returns the
    /// wait.
    pub fn failed(&mut self, interval: Duration, max: Duration) -> Duration {
        self.failures = self.failures.saturating_add(1);
        let wait = backoff(interval, max, self.failures);
        self.retry_at = Some(Instant::now() + wait);
        wait
    }
}

/// The wait after the `failures`-th failed write in a row: the workspace's one [`Backoff`]
/// from the interval, at most `max`, with equal jitter (uniformly in `[c / 2, c]` for the
/// ceiling `c = interval × 2^failures`, at most `max`), never below the interval.
///
/// Jitter, because a store outage fails every committer of a fleet on the same tick, and
/// without it they would all come back in step, each doubling its wait at the same moments;
/// equal jitter (not full) so that no wait is shorter than half its schedule. The write still
/// happens on a tick: the first at or after the wait.
fn backoff(interval: Duration, max: Duration, failures: u32) -> Duration {
    Backoff::new(interval, max)
        .with_jitter(Jitter::Equal)
        .delay(failures)
        .max(interval)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_maximum_with_equal_jitter() {
        let ms = Duration::from_millis;
        for _ in 0..200 {
            for (failures, ceiling) in [(1, 200), (2, 400), (3, 800), (4, 1_600), (5, 2_000)] {
                let wait = backoff(ms(100), ms(2_000), failures);
                assert!(
                    wait >= ms(ceiling / 2) && wait <= ms(ceiling),
                    "failure {failures}: {wait:?} outside [{}, {ceiling}] ms",
                    ceiling / 2
                );
            }
            let last = backoff(ms(100), ms(2_000), u32::MAX);
            assert!(last >= ms(1_000) && last <= ms(2_000), "{last:?}");
            // A maximum equal to the interval: never below the interval.
            assert_eq!(backoff(ms(100), ms(100), 3), ms(100));
        }
    }
}
