//! What `status --watch`, `check` and `serve` share: the sampling settings, checked.

use std::time::Duration;

use checkpoint_core::validation::validate_key;

use super::failed;
use crate::error::CliError;
use crate::monitor::Settings;

/// The monitor's settings for `group` (only `subscription`, when given), checked before any
/// request: the names, then [`settings`].
///
/// # Errors
///
/// A usage error for an invalid name or setting.
pub fn checked(
    group: &str,
    subscription: Option<&str>,
    interval: f64,
    window: usize,
) -> Result<Settings, CliError> {
    if let Some(subscription) = subscription {
        validate_key(group, subscription).map_err(|e| failed(&e))?;
    }
    settings(interval, window)
}

/// The monitor's settings from `--interval` (seconds) and `--window` (samples).
///
/// # Errors
///
/// A usage error for an interval not above 0 or above an hour, or a window of 0 or above
/// 10,000 samples.
pub fn settings(interval: f64, window: usize) -> Result<Settings, CliError> {
    if !(interval.is_finite() && interval > 0.0 && interval <= 3600.0) {
        return Err(CliError::usage(
            "--interval takes a number of seconds above 0, at most 3600",
        ));
    }
    if !(1..=10_000).contains(&window) {
        return Err(CliError::usage(
            "--window and --samples take a number of samples from 1 to 10000",
        ));
    }
    Ok(Settings {
        interval: Duration::from_secs_f64(interval),
        window,
        ..Settings::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_and_windows_out_of_range_are_usage_errors() {
        assert!(settings(2.0, 10).is_ok());
        for (interval, window) in [
            (0.0, 10),
            (-1.0, 10),
            (f64::NAN, 10),
            (3601.0, 10),
            (2.0, 0),
        ] {
            let error = settings(interval, window).unwrap_err();
            assert_eq!(
                error.exit(),
                crate::error::Exit::Usage,
                "{interval} {window}"
            );
        }
    }
}
