//! The settings of a subscription, and starting one.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use checkpoint_core::source::Source;
use checkpoint_worker::{Worker, WorkerBuilder, WorkerStore};

use crate::settings::Settings;
use crate::shared::{ReadBatches, Shared};
use crate::{Handler, OnPoison, Retry, Subscription, SubscriptionError};

/// Settings of a [`Subscription`], from [`Subscription::builder`].
pub struct SubscriptionBuilder {
    worker: WorkerBuilder,
    source: Arc<dyn Source>,
    group: String,
    subscription: String,
    handler: Option<Arc<dyn Handler>>,
    settings: Settings,
}

impl fmt::Debug for SubscriptionBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubscriptionBuilder")
            .field("group", &self.group)
            .field("subscription", &self.subscription)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl SubscriptionBuilder {
    pub(crate) fn new(
        store: impl WorkerStore + 'static,
        source: Arc<dyn Source>,
        group: String,
        subscription: String,
    ) -> Self {
        let worker = Worker::builder(
            store,
            group.clone(),
            subscription.clone(),
            source.partitions(),
        );
        Self {
            worker,
            source,
            group,
            subscription,
            handler: None,
            settings: Settings::default(),
        }
    }

    /// The handler every entry goes to: see [`Handler`]. Required.
    pub fn handler(mut self, handler: impl Handler) -> Self {
        self.handler = Some(Arc::new(handler));
        self
    }

    /// Per partition, at most this many entries handed to handlers and not finished (default
    /// [`DEFAULT_MAX_IN_FLIGHT`](crate::DEFAULT_MAX_IN_FLIGHT)). They finish in any order; the
    /// checkpoint moves to the first one not finished. Beyond it the reader waits: with the
    /// committer's own bound, memory never grows with a slow handler.
    pub fn max_in_flight(mut self, entries: usize) -> Self {
        self.settings.max_in_flight = entries;
        self
    }

    /// Entries per read of the source (default [`DEFAULT_PAGE_SIZE`](crate::DEFAULT_PAGE_SIZE)).
    /// The reader reads up to two pages ahead of the handlers.
    pub fn page_size(mut self, entries: usize) -> Self {
        self.settings.page_size = entries;
        self
    }

    /// How a failing handler is retried (default [`Retry::default`]: five runs, pauses from
    /// 100 ms doubling to 10 s, with jitter).
    pub fn retry(mut self, retry: Retry) -> Self {
        self.settings.retry = retry;
        self
    }

    /// What happens to an entry whose handler failed on its last retry (default
    /// [`OnPoison::Stop`]).
    pub fn on_poison(mut self, on_poison: OnPoison) -> Self {
        self.settings.on_poison = on_poison;
        self
    }

    /// Entries with the same [key](checkpoint_core::source::Entry::key) never run at the same
    /// time and run in log order; entries of other keys (and entries without one) run
    /// concurrently as before. Off by default.
    pub fn ordered_by_key(mut self, ordered: bool) -> Self {
        self.settings.ordered_by_key = ordered;
        self
    }

    /// How often a subscription that parks looks for retries an operator asked for (default
    /// [`DEFAULT_PARKED_POLL_INTERVAL`](crate::DEFAULT_PARKED_POLL_INTERVAL)): one
    /// `parked(group)` request per interval per process.
    pub fn parked_poll_interval(mut self, interval: Duration) -> Self {
        self.settings.parked_poll_interval = interval;
        self
    }

    /// How often the source's head of each partition read is read for lag (default
    /// [`DEFAULT_LAG_INTERVAL`](crate::DEFAULT_LAG_INTERVAL)): one `head` request per
    /// partition per interval. Reads keep the head current in between.
    pub fn lag_interval(mut self, interval: Duration) -> Self {
        self.settings.lag_interval = interval;
        self
    }

    /// How often the source is asked for its partition count (default
    /// [`DEFAULT_DISCOVERY_INTERVAL`](crate::DEFAULT_DISCOVERY_INTERVAL)), once at start and
    /// then every interval: when the log took more partitions, the worker leases and balances
    /// the new ones (nothing held moves) and their readers start at their start, or at the
    /// worker's [start position](WorkerBuilder::start_position) when one is set, as any
    /// partition without a checkpoint does. One
    /// [`discover_partitions`](checkpoint_core::source::Source::discover_partitions) call per
    /// interval per process; a source whose count is fixed answers it without I/O.
    pub fn discovery_interval(mut self, interval: Duration) -> Self {
        self.settings.discovery_interval = interval;
        self
    }

    /// The worker's settings (worker id, lease duration, renew interval, drain timeout,
    /// start position, committer): see [`WorkerBuilder`].
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use std::time::Duration;
    /// # use checkpoint_core::{InMemoryCheckpointStore, source::InMemorySource};
    /// # use checkpoint_subscription::Subscription;
    /// let builder = Subscription::builder(
    ///     Arc::new(InMemoryCheckpointStore::new()), Arc::new(InMemorySource::new(4)), "billing", "invoices",
    /// )
    /// .worker(|worker| worker.worker_id("worker-a").lease_duration(Duration::from_secs(10)));
    /// ```
    pub fn worker(mut self, configure: impl FnOnce(WorkerBuilder) -> WorkerBuilder) -> Self {
        self.worker = configure(self.worker);
        self
    }

    /// Starts the worker and the subscription's readers. Needs a tokio runtime.
    ///
    /// # Errors
    ///
    /// [`SubscriptionError::NoHandler`] without a handler,
    /// [`SubscriptionError::InvalidSetting`] for a zero in-flight limit, page size or interval,
    /// and the worker's own refusals ([`SubscriptionError::Worker`]).
    pub fn start(self) -> Result<Subscription, SubscriptionError> {
        self.start_with_batches(None)
    }

    pub(crate) fn start_with_batches(
        self,
        batches: Option<Arc<dyn ReadBatches>>,
    ) -> Result<Subscription, SubscriptionError> {
        let handler = self.handler.ok_or(SubscriptionError::NoHandler)?;
        check(&self.settings)?;
        let (worker, assignments) = self.worker.start()?;
        let shared = Shared::new(
            self.group,
            self.subscription,
            self.source,
            handler,
            batches,
            self.settings,
        );
        Ok(Subscription::run(worker, assignments, shared))
    }
}

fn check(settings: &Settings) -> Result<(), SubscriptionError> {
    let refuse = |setting, reason| Err(SubscriptionError::InvalidSetting { setting, reason });
    if settings.max_in_flight == 0 {
        return refuse("max_in_flight", "must be at least 1");
    }
    if settings.page_size == 0 {
        return refuse("page_size", "must be at least 1");
    }
    if settings.parked_poll_interval.is_zero() {
        return refuse("parked_poll_interval", "must be above zero");
    }
    if settings.lag_interval.is_zero() {
        return refuse("lag_interval", "must be above zero");
    }
    if settings.discovery_interval.is_zero() {
        return refuse("discovery_interval", "must be above zero");
    }
    Ok(())
}
