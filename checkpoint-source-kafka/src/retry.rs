//! A call to the cluster within the source's timeout: a broker that restarted, a leader that
//! moved or a connection that broke is tried again (after asking the cluster where the
//! partition is now) until the call succeeds, fails for good, or runs out of time.

use std::future::Future;
use std::time::Duration;

use checkpoint_core::source::SourceError;
use tokio::time::Instant;

use crate::cluster::Cluster;
use crate::error::{WireError, timeout};

/// The first pause between attempts; it doubles up to [`LONGEST_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(10);
const LONGEST_PAUSE: Duration = Duration::from_millis(250);

/// Runs `attempt` until it succeeds or fails with an error a new attempt cannot help, within
/// `limit` in all (an attempt that hangs, a broker stopped mid-answer, is cut off at the limit).
pub(crate) async fn within<T, F, Fut>(
    cluster: &Cluster,
    operation: &'static str,
    limit: Duration,
    mut attempt: F,
) -> Result<T, SourceError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, WireError>>,
{
    let deadline = Instant::now() + limit;
    let mut pause = FIRST_PAUSE;
    let mut last_error: Option<WireError> = None;
    loop {
        match tokio::time::timeout_at(deadline, attempt()).await {
            Err(_) => return Err(give_up(operation, limit, last_error)),
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(error)) if !error.is_transient() => return Err(error.into_source(operation)),
            Ok(Err(error)) => {
                if error.moves_leader() {
                    // Connections to a restarted broker are all dead; a leader that moved is
                    // found by asking again. Either may fail now: the next attempt says.
                    if matches!(error, WireError::Io(_)) {
                        cluster.forget_connections();
                    }
                    let _ = tokio::time::timeout_at(deadline, cluster.refresh()).await;
                }
                last_error = Some(error);
            }
        }
        if Instant::now() + pause >= deadline {
            return Err(give_up(operation, limit, last_error));
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(LONGEST_PAUSE);
    }
}

/// Out of time: the last transient error when there was one (it says why), a timeout otherwise.
fn give_up(operation: &'static str, limit: Duration, last: Option<WireError>) -> SourceError {
    match last {
        Some(error) => error.into_source(operation),
        None => timeout(operation, limit),
    }
}
