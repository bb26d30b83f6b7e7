//! The one writer's state: how many writes failed in a row, and when to try again.

use std::time::Duration;

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

/// The wait after the `failures`-th failed write in a row: `interval × 2^failures`, at most
/// `max`.
fn backoff(interval: Duration, max: Duration, failures: u32) -> Duration {
    interval
        .checked_mul(1 << failures.min(20))
        .map_or(max, |wait| wait.min(max))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_maximum() {
        let ms = Duration::from_millis;
        let waits: Vec<_> = (1..=6).map(|n| backoff(ms(100), ms(2_000), n)).collect();
        assert_eq!(
            waits,
            [ms(200), ms(400), ms(800), ms(1_600), ms(2_000), ms(2_000)]
        );
        assert_eq!(backoff(ms(100), ms(2_000), u32::MAX), ms(2_000));
    }
}
