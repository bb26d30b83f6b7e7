//! The settings every store shares, and the one rule for checking them.
//!
//! Every backend's `with_*` setting that can be wrong returns `Result<Self, Error>` and refuses
//! a bad value with [`Error::InvalidInput`] naming [`Argument::Setting`], before the store is
//! used: nothing is silently clamped or replaced.

use std::time::Duration;

use crate::error::{Argument, Error, InvalidInput, InvalidReason};

/// How long one operation of a store may take before it fails with [`Error::Timeout`], unless
/// the store's `with_timeout` says otherwise: the same for every backend. It bounds a call
/// against a server that stopped answering (a half-open connection, a frozen host, a lock held
/// by another process), and is far above any healthy call (milliseconds).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// Checks a store's operation timeout: it must be above zero.
pub fn validate_timeout(timeout: Duration) -> Result<Duration, Error> {
    if timeout.is_zero() {
        return Err(malformed("timeout", "a duration above zero").into());
    }
    Ok(timeout)
}

/// Checks a count setting (a chunk size, a concurrency): at least 1 and at most `max`.
pub fn validate_count(setting: &'static str, value: usize, max: usize) -> Result<usize, Error> {
    if value == 0 || value > max {
        return Err(malformed(setting, "a count from 1 to the documented maximum").into());
    }
    Ok(value)
}

/// A setting that does not have the form it must have.
pub fn malformed(setting: &'static str, expected: &'static str) -> InvalidInput {
    InvalidInput::new(
        Argument::Setting(setting),
        InvalidReason::Malformed { expected },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_is_refused_and_named() {
        let error = validate_timeout(Duration::ZERO).unwrap_err();
        assert_eq!(
            error.invalid_input().map(|i| i.argument),
            Some(Argument::Setting("timeout"))
        );
        assert_eq!(validate_timeout(DEFAULT_TIMEOUT).unwrap(), DEFAULT_TIMEOUT);
        assert!(validate_count("chunk", 0, 10).is_err());
        assert!(validate_count("chunk", 11, 10).is_err());
        assert_eq!(validate_count("chunk", 10, 10).unwrap(), 10);
    }
}
