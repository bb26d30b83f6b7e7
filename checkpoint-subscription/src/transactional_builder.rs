//! The settings of a subscription with a transactional handler, and starting one.

use std::sync::Arc;
use std::time::Duration;

use checkpoint_core::Fingerprint;
use checkpoint_core::source::Source;
use checkpoint_core::transactional::TransactionalStore;
use checkpoint_worker::{WorkerBuilder, WorkerStore};

use crate::batches::Batches;
use crate::transactional_handler::{OneEntryAlone, TransactionalHandler};
use crate::{OnPoison, Retry, Subscription, SubscriptionBuilder, SubscriptionError};

/// Settings of a subscription whose handler writes in the checkpoint's transaction, from
/// [`Subscription::transactional`].
pub struct TransactionalBuilder<S: TransactionalStore> {
    inner: SubscriptionBuilder,
    store: Arc<S>,
    fingerprint: Fingerprint,
    handler: Option<Arc<dyn TransactionalHandler<S::Transaction>>>,
}

impl<S: TransactionalStore> std::fmt::Debug for TransactionalBuilder<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransactionalBuilder")
            .field("inner", &self.inner)
            .field("fingerprint", &self.fingerprint)
            .finish_non_exhaustive()
    }
}

impl<S> TransactionalBuilder<S>
where
    S: TransactionalStore + WorkerStore + 'static,
{
    pub(crate) fn new(
        store: Arc<S>,
        source: Arc<dyn Source>,
        group: String,
        subscription: String,
        fingerprint: Fingerprint,
    ) -> Self {
        let inner = SubscriptionBuilder::new(Arc::clone(&store), source, group, subscription);
        Self {
            inner,
            store,
            fingerprint,
            handler: None,
        }
    }

    /// The handler every batch goes to: see [`TransactionalHandler`]. Required.
    pub fn handler(mut self, handler: impl TransactionalHandler<S::Transaction>) -> Self {
        self.handler = Some(Arc::new(handler));
        self
    }

    /// Entries per batch, hence per transaction, at most (default
    /// [`DEFAULT_PAGE_SIZE`](crate::DEFAULT_PAGE_SIZE)): a batch is one read of the source.
    pub fn batch_size(mut self, entries: usize) -> Self {
        self.inner = self.inner.page_size(entries);
        self
    }

    /// How a failing batch is retried: see [`SubscriptionBuilder::retry`].
    pub fn retry(mut self, retry: Retry) -> Self {
        self.inner = self.inner.retry(retry);
        self
    }

    /// What happens to a poison entry: see [`SubscriptionBuilder::on_poison`].
    pub fn on_poison(mut self, on_poison: OnPoison) -> Self {
        self.inner = self.inner.on_poison(on_poison);
        self
    }

    /// See [`SubscriptionBuilder::parked_poll_interval`].
    pub fn parked_poll_interval(mut self, interval: Duration) -> Self {
        self.inner = self.inner.parked_poll_interval(interval);
        self
    }

    /// See [`SubscriptionBuilder::lag_interval`].
    pub fn lag_interval(mut self, interval: Duration) -> Self {
        self.inner = self.inner.lag_interval(interval);
        self
    }

    /// The worker's settings: see [`SubscriptionBuilder::worker`].
    pub fn worker(mut self, configure: impl FnOnce(WorkerBuilder) -> WorkerBuilder) -> Self {
        self.inner = self.inner.worker(configure);
        self
    }

    /// Starts the worker and the subscription's readers. Needs a tokio runtime.
    ///
    /// # Errors
    ///
    /// As [`SubscriptionBuilder::start`].
    pub fn start(self) -> Result<Subscription, SubscriptionError> {
        let handler = self.handler.ok_or(SubscriptionError::NoHandler)?;
        let one_entry = OneEntryAlone {
            store: Arc::clone(&self.store),
            handler: Arc::clone(&handler),
        };
        let batches = Batches {
            store: self.store,
            handler,
            fingerprint: self.fingerprint,
        };
        self.inner
            .handler(one_entry)
            .start_with_batches(Some(Arc::new(batches)))
    }
}
