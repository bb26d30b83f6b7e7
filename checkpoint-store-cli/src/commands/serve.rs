//! `checkpoint serve`. (Being written: the page, /api/fleet and /metrics.)

use super::Context;
use crate::args::ServeArgs;
use crate::error::CliError;
use crate::source::SourceSpec;

/// Serves the page, the report and the metrics of `args.group` until Ctrl-C or SIGTERM.
///
/// # Errors
///
/// A usage error for a bad address or setting; the listener's error.
pub async fn serve(
    _context: Context<'_>,
    _args: &ServeArgs,
    _source: &SourceSpec,
) -> Result<(), CliError> {
    Err(CliError::failure("serve: not built yet"))
}

/// Resolves at Ctrl-C (SIGINT) or SIGTERM: when `watch` and `serve` stop.
pub async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = terminate.recv() => {}
                }
            }
            // Without a SIGTERM handler, Ctrl-C alone (SIGTERM then ends the process).
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
