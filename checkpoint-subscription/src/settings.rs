//! The settings every reader of a subscription runs by.

use std::time::Duration;

use crate::{OnPoison, Retry};

/// Per partition, entries handed to handlers and not finished, unless
/// [`max_in_flight`](crate::SubscriptionBuilder::max_in_flight) says otherwise.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 64;

/// Entries per read of the source, unless [`page_size`](crate::SubscriptionBuilder::page_size)
/// says otherwise.
pub const DEFAULT_PAGE_SIZE: usize = 256;

/// How often a subscription that parks looks for retries an operator asked for, unless
/// [`parked_poll_interval`](crate::SubscriptionBuilder::parked_poll_interval) says otherwise.
pub const DEFAULT_PARKED_POLL_INTERVAL: Duration = Duration::from_secs(10);

/// How often the source's head of each held partition is read for lag while the reader is
/// behind, unless [`lag_interval`](crate::SubscriptionBuilder::lag_interval) says otherwise.
pub const DEFAULT_LAG_INTERVAL: Duration = Duration::from_secs(5);

/// How often the source is asked whether its log took more partitions
/// ([`Source::discover_partitions`](checkpoint_core::source::Source::discover_partitions)),
/// unless [`discovery_interval`](crate::SubscriptionBuilder::discovery_interval) says
/// otherwise: one small request per interval per process on a source that can grow (a fixed
/// one answers without I/O), and a new partition's first entries wait at most this long
/// before the worker leases it.
pub const DEFAULT_DISCOVERY_INTERVAL: Duration = Duration::from_secs(5);

/// Pages read ahead of the handlers, per partition: the prefetch buffer holds at most this
/// many pages beside the one being dispatched.
pub(crate) const PAGES_AHEAD: usize = 2;

/// The longest a reader waits on the source before reading again anyway (a notification
/// lost by the log's server costs at most this).
pub(crate) const LONGEST_WAIT: Duration = Duration::from_secs(5);

/// The pause after a failed read grows from this, doubling, up to [`LONGEST_WAIT`].
pub(crate) const FIRST_READ_PAUSE: Duration = Duration::from_millis(50);

#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) max_in_flight: usize,
    pub(crate) page_size: usize,
    pub(crate) retry: Retry,
    pub(crate) on_poison: OnPoison,
    pub(crate) ordered_by_key: bool,
    pub(crate) parked_poll_interval: Duration,
    pub(crate) lag_interval: Duration,
    pub(crate) discovery_interval: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            page_size: DEFAULT_PAGE_SIZE,
            retry: Retry::default(),
            on_poison: OnPoison::Stop,
            ordered_by_key: false,
            parked_poll_interval: DEFAULT_PARKED_POLL_INTERVAL,
            lag_interval: DEFAULT_LAG_INTERVAL,
            discovery_interval: DEFAULT_DISCOVERY_INTERVAL,
        }
    }
}
