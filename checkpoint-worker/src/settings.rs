//! The settings a started worker runs with.

use std::time::Duration;

/// The settings a started worker runs with.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub lease_duration: Duration,
    pub renew_interval: Duration,
    pub drain_timeout: Duration,
    pub start_position: u64,
}
