//! `checkpoint serve`.

use std::net::SocketAddr;

use tokio::net::TcpListener;

use super::Context;
use super::sampling::checked;
use crate::args::ServeArgs;
use crate::error::CliError;
use crate::monitor::{Fleet, Sampler};
use crate::redact;
use crate::serve::{Latest, http};
use crate::source::SourceSpec;

/// Serves the page, the report and the metrics of `args.group` until Ctrl-C or SIGTERM.
///
/// Prints one line, `listening on http://ADDR/ (page), /api/fleet (JSON), /metrics
/// (Prometheus)`, with the address bound (the port chosen for port 0). Then one loop samples
/// the store and the log every interval and publishes the report; the server answers every
/// request from the report published last ([`crate::serve`]), so requests never reach the
/// store. A failed refresh is in the report (`error`, `refresh_failed`) and the next one tries
/// again: the server never stops on the store's or the log's error.
///
/// # Errors
///
/// A usage error for a bad address, name or setting (before any request); the listener's
/// error (the address in use, say); standard output's error.
pub async fn serve(
    context: Context<'_>,
    args: &ServeArgs,
    source: &SourceSpec,
) -> Result<(), CliError> {
    let group = args.group.as_str();
    let subscription = args.subscription.as_deref();
    let settings = checked(
        group,
        subscription,
        args.sampling.interval,
        args.sampling.window,
    )?;
    let address: SocketAddr = args.listen.trim().parse().map_err(|_| {
        CliError::usage(format!(
            "--listen takes an IP address and a port, such as 127.0.0.1:9460 or [::]:9460, not {:?}",
            args.listen
        ))
    })?;
    let listener = TcpListener::bind(address)
        .await
        .map_err(|error| CliError::failure(format!("cannot listen on {address}: {error}")))?;
    let bound = listener
        .local_addr()
        .map_err(|error| CliError::failure(format!("cannot listen on {address}: {error}")))?;
    writeln!(
        context.out,
        "listening on http://{bound}/ (page), /api/fleet (JSON), /metrics (Prometheus)"
    )?;
    context.out.flush()?;

    let mut fleet = Fleet::new(group, settings);
    let latest = Latest::default();
    // Before the first refresh answers: the group, the settings, nothing seen yet.
    latest.publish(&fleet.report());
    // The server needs only what it owns: its task outlives nothing of this function's.
    let server = tokio::spawn(http::accept(listener, latest.clone()));
    let sampler = Sampler::new(context.store, group, subscription, source);
    let secrets = source.target().secrets();
    let stop = stop_signal();
    tokio::select! {
        () = stop => {}
        () = refresh(sampler, &mut fleet, &latest, &secrets) => {}
    }
    // Open connections end with the runtime, when the command returns.
    server.abort();
    Ok(())
}

/// Samples every interval and publishes each report, forever. Refreshes never overlap: a slow
/// store delays the next one (`MissedTickBehavior::Delay`) rather than stacking them up.
async fn refresh(mut sampler: Sampler<'_>, fleet: &mut Fleet, latest: &Latest, secrets: &[String]) {
    let mut ticks = tokio::time::interval(fleet.settings().interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        match sampler.read().await {
            Ok(snapshot) => fleet.record(snapshot),
            // Published to whoever reaches the port: no credential of the log's URL, nor the
            // password of any URL the message quotes.
            Err(error) => fleet.record_error(redact::scrub(error.message(), secrets)),
        }
        latest.publish(&fleet.report());
    }
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
