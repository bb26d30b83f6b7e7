//! The settings of a committer, and starting one.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use checkpoint_core::{CheckpointStore, Error, settings, validation};
use tokio::sync::Semaphore;

use crate::{Committer, CommitterError};

/// The interval between two writes unless [`CommitterBuilder::interval`] says otherwise.
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(200);

/// How many entries a committer holds unless [`CommitterBuilder::max_in_flight`] says
/// otherwise: 100,000 (about 2.1 MB when all are held, measured; see the crate doc).
pub const DEFAULT_MAX_IN_FLIGHT: usize = 100_000;

/// The longest wait between two attempts after failed writes unless
/// [`CommitterBuilder::max_backoff`] says otherwise (or the interval is longer: then the
/// interval).
pub const DEFAULT_MAX_BACKOFF: Duration = Duration::from_secs(10);

/// A callback told of every failed write.
pub(crate) type ErrorCallback = Arc<dyn Fn(&Error) + Send + Sync>;

/// The settings a started committer runs with.
#[derive(Clone)]
pub(crate) struct Settings {
    pub interval: Duration,
    pub max_in_flight: usize,
    pub max_backoff: Duration,
    pub on_error: Option<ErrorCallback>,
}

/// Settings of a [`Committer`], from [`Committer::builder`].
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), checkpoint_committer::CommitterError> {
/// use std::time::Duration;
/// use checkpoint_committer::Committer;
/// use checkpoint_core::InMemoryCheckpointStore;
///
/// let committer = Committer::builder(InMemoryCheckpointStore::new(), "billing")
///     .interval(Duration::from_millis(100))
///     .max_in_flight(10_000)
///     .on_error(|error| eprintln!("checkpoint write failed, will retry: {error}"))
///     .start()?;
/// # committer.shutdown().await
/// # }
/// ```
pub struct CommitterBuilder {
    store: Arc<dyn CheckpointStore>,
    group: String,
    settings: Settings,
    /// Whether `max_backoff` was set: if not, it follows a long interval.
    max_backoff_set: bool,
}

impl fmt::Debug for CommitterBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CommitterBuilder")
            .field("group", &self.group)
            .field("interval", &self.settings.interval)
            .field("max_in_flight", &self.settings.max_in_flight)
            .field("max_backoff", &self.settings.max_backoff)
            .field("on_error", &self.settings.on_error.is_some())
            .finish_non_exhaustive()
    }
}

impl CommitterBuilder {
    pub(crate) fn new(store: Arc<dyn CheckpointStore>, group: String) -> Self {
        Self {
            store,
            group,
            settings: Settings {
                interval: DEFAULT_INTERVAL,
                max_in_flight: DEFAULT_MAX_IN_FLIGHT,
                max_backoff: DEFAULT_MAX_BACKOFF,
                on_error: None,
            },
            max_backoff_set: false,
        }
    }

    /// How often the committer writes the checkpoints that moved (one `save_all` per
    /// interval; none when nothing moved). Default [`DEFAULT_INTERVAL`]; must not be zero.
    pub fn interval(mut self, interval: Duration) -> Self {
        self.settings.interval = interval;
        self
    }

    /// How many entries the committer holds over all its partitions: entries dispatched and
    /// not yet passed by their partition's gap-free position. When that many are held,
    /// [`Partition::dispatched`](crate::Partition::dispatched) waits until a completion frees
    /// one. Default [`DEFAULT_MAX_IN_FLIGHT`]; must not be zero.
    pub fn max_in_flight(mut self, entries: usize) -> Self {
        self.settings.max_in_flight = entries;
        self
    }

    /// The longest wait between attempts after failed writes. After the n-th failure in a row
    /// the committer waits between half of `interval × 2ⁿ` (capped at this) and all of it,
    /// drawn at random so that committers failed by one outage do not retry in step, and never
    /// less than the interval, before it writes again (ticks in between do nothing). Default [`DEFAULT_MAX_BACKOFF`], or the interval when that is
    /// longer; must be at least the interval.
    pub fn max_backoff(mut self, max_backoff: Duration) -> Self {
        self.settings.max_backoff = max_backoff;
        self.max_backoff_set = true;
        self
    }

    /// Calls `callback` with the error of every failed write (periodic, release or shutdown),
    /// besides logging it with `tracing` at WARN. The positions are kept and written later.
    ///
    /// The callback runs on the write's task while the write is still held: keep it short,
    /// and do not await the committer's `flush`, `release` or `shutdown` from it (they wait
    /// for that write). Reading [`stats`](Committer::stats) is fine.
    pub fn on_error(mut self, callback: impl Fn(&Error) + Send + Sync + 'static) -> Self {
        self.settings.on_error = Some(Arc::new(callback));
        self
    }

    /// Checks the settings and starts the committer's periodic flush on the current tokio
    /// runtime.
    ///
    /// # Errors
    ///
    /// [`CommitterError::Invalid`] for a group the store would refuse, a zero interval or
    /// `max_in_flight`, or a `max_backoff` below the interval; [`CommitterError::NoRuntime`]
    /// outside a tokio runtime.
    pub fn start(mut self) -> Result<Committer, CommitterError> {
        validation::validate_group(&self.group).map_err(CommitterError::Invalid)?;
        let malformed = |setting, expected| {
            CommitterError::Invalid(Error::from(settings::malformed(setting, expected)))
        };
        if self.settings.interval.is_zero() {
            return Err(malformed("interval", "a duration above zero"));
        }
        if self.settings.max_in_flight == 0 || self.settings.max_in_flight > Semaphore::MAX_PERMITS
        {
            return Err(malformed(
                "max_in_flight",
                "at least 1 and at most usize::MAX >> 3",
            ));
        }
        if !self.max_backoff_set {
            self.settings.max_backoff = self.settings.max_backoff.max(self.settings.interval);
        }
        if self.settings.max_backoff < self.settings.interval {
            return Err(malformed("max_backoff", "at least the interval"));
        }
        let runtime =
            tokio::runtime::Handle::try_current().map_err(|_| CommitterError::NoRuntime)?;
        Ok(Committer::start(
            &runtime,
            self.store,
            self.group,
            self.settings,
        ))
    }
}
