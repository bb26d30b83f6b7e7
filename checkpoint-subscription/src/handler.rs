//! What a user writes: the handler of one entry.

use std::future::Future;
use std::sync::Arc;

use checkpoint_core::BoxError;
use checkpoint_core::source::Entry;
use futures_util::future::BoxFuture;

/// A handler's error: any error, boxed. `?` converts most errors into it.
pub type HandlerError = BoxError;

/// What a handler returns for one entry.
pub type HandlerResult = Result<(), HandlerError>;

/// Handles one entry of the log. Called concurrently for different entries (up to
/// [`max_in_flight`](crate::SubscriptionBuilder::max_in_flight) per partition), and again for
/// the same entry when it failed and is retried, so it must be safe to run twice on one entry
/// (at-least-once: the completed-but-unwritten entries of a crashed worker, or of one that lost
/// its leases, are redone too).
///
/// Any `Fn(Arc<Entry>) -> impl Future<Output = HandlerResult>` that is `Send + Sync +
/// 'static` is a handler:
///
/// ```
/// use std::sync::Arc;
/// use checkpoint_core::source::Entry;
/// use checkpoint_subscription::{Handler, HandlerResult};
///
/// fn assert_handler(_: impl Handler) {}
/// assert_handler(|entry: Arc<Entry>| async move {
///     let text = std::str::from_utf8(&entry.payload)?; // any error converts
///     println!("{} at {}", text, entry.position);
///     HandlerResult::Ok(())
/// });
/// ```
pub trait Handler: Send + Sync + 'static {
    /// Handles `entry`; an error makes the subscription retry it (see
    /// [`Retry`](crate::Retry)), then park it or stop the partition
    /// (see [`OnPoison`](crate::OnPoison)).
    fn handle(&self, entry: Arc<Entry>) -> BoxFuture<'static, HandlerResult>;
}

impl<F, Fut> Handler for F
where
    F: Fn(Arc<Entry>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = HandlerResult> + Send + 'static,
{
    fn handle(&self, entry: Arc<Entry>) -> BoxFuture<'static, HandlerResult> {
        Box::pin(self(entry))
    }
}
