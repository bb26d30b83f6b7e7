//! The one timeout every backend puts around its requests (feature `tokio`).
//!
//! Each store bounds a call by its timeout ([`DEFAULT_TIMEOUT`](crate::DEFAULT_TIMEOUT) unless
//! its `with_timeout` says otherwise, none after `without_timeout`) and reports the bound as
//! [`Error::Timeout`] naming the backend and the operation. Written once here so that every
//! backend bounds and reports it the same way.

use std::future::Future;
use std::time::Duration;

use crate::error::{Error, Operation};

/// Runs `request` within `limit` (no bound when `None`); when the limit elapses first, the
/// request is dropped (abandoned where it stands) and the call fails with [`Error::Timeout`]
/// for `backend` and `operation`.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use std::time::Duration;
/// use checkpoint_core::{Error, Operation, timeout::within};
///
/// let slow = async {
///     tokio::time::sleep(Duration::from_secs(60)).await;
///     Ok::<_, Error>(())
/// };
/// let bounded = within("example", Operation::Save, Some(Duration::from_millis(10)), slow).await;
/// assert!(matches!(bounded, Err(Error::Timeout { operation: Operation::Save, .. })));
/// assert_eq!(within("example", Operation::Load, None, async { Ok(7) }).await.unwrap(), 7);
/// # });
/// ```
pub async fn within<T>(
    backend: &'static str,
    operation: Operation,
    limit: Option<Duration>,
    request: impl Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    let Some(after) = limit else {
        return request.await;
    };
    tokio::time::timeout(after, request)
        .await
        .unwrap_or(Err(Error::Timeout {
            backend,
            operation,
            after,
        }))
}
