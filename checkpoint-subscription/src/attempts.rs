//! Running the handler on one entry until it succeeds or the retries run out.

use std::any::Any;
use std::error::Error;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use checkpoint_core::source::Entry;
use futures_util::FutureExt;

use crate::shared::Shared;

/// The handler's last failure on an entry whose retries ran out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Poison {
    pub(crate) error: String,
    pub(crate) attempts: u32,
}

/// Runs the handler on `entry` until it succeeds (returns the runs it took) or has failed
/// as many times as the retry policy allows. A panicking handler counts as a failure.
pub(crate) async fn run_with_retries(
    shared: &Shared,
    partition: u32,
    entry: &Arc<Entry>,
) -> Result<u32, Poison> {
    let retry = shared.settings.retry;
    let mut failures = 0;
    loop {
        let run = AssertUnwindSafe(shared.handler.handle(Arc::clone(entry)));
        let error = match run.catch_unwind().await {
            Ok(Ok(())) => return Ok(failures + 1),
            Ok(Err(error)) => error_text(&*error),
            Err(panic) => format!("the handler panicked: {}", panic_text(&*panic)),
        };
        failures += 1;
        if failures >= retry.max_attempts() {
            return Err(Poison {
                error,
                attempts: failures,
            });
        }
        let pause = retry.pause(failures);
        tracing::warn!(
            group = %shared.group,
            subscription = %shared.subscription,
            partition,
            position = entry.position,
            attempt = failures,
            retry_in = ?pause,
            %error,
            "handler failed; retrying"
        );
        shared.counters.retries.fetch_add(1, Ordering::Relaxed);
        tokio::time::sleep(pause).await;
    }
}

/// An error and its sources, `: `-separated.
pub(crate) fn error_text(error: &(dyn Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

pub(crate) fn panic_text(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)")
}
