//! The errors of starting and stopping a subscription.

use checkpoint_worker::WorkerError;

/// Why a subscription could not start, or did not stop cleanly.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SubscriptionError {
    /// The builder was not given a handler.
    #[error("the subscription has no handler: call `handler(...)` on the builder")]
    NoHandler,
    /// A setting out of its range (named), before anything started.
    #[error("invalid subscription setting `{setting}`: {reason}")]
    InvalidSetting {
        /// The builder method.
        setting: &'static str,
        /// Why the value was refused.
        reason: &'static str,
    },
    /// The worker underneath refused its settings, or failed to stop cleanly.
    #[error(transparent)]
    Worker(#[from] WorkerError),
}
