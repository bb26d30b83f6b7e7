//! `checkpoint status --watch`.

use super::Context;
use super::sampling::checked;
use crate::args::SamplingArgs;
use crate::error::CliError;
use crate::monitor::{Fleet, Sampler, view};
use crate::redact;
use crate::source::SourceSpec;

/// Switches to the terminal's alternate screen and hides the cursor; the way back.
const ENTER: &str = "\x1b[?1049h\x1b[?25l";
const LEAVE: &str = "\x1b[?25h\x1b[?1049l";

/// Samples `group` every `sampling.interval` until Ctrl-C (or SIGTERM) and shows each refresh
/// ([`view`]): redrawn in place when `terminal` gives the terminal's height, else as a block
/// of plain lines per refresh. A failed refresh is shown in the header and the next one tries
/// again; the view never stops on the store's or the log's error.
///
/// # Errors
///
/// A usage error for a bad name or setting (before any request); standard output's error.
pub async fn watch(
    context: Context<'_>,
    group: &str,
    subscription: Option<&str>,
    source: &SourceSpec,
    sampling: SamplingArgs,
    terminal: Option<&dyn Fn() -> usize>,
) -> Result<(), CliError> {
    let settings = checked(group, subscription, sampling.interval, sampling.window)?;
    let mut sampler = Sampler::new(context.store, group, subscription, source);
    let mut fleet = Fleet::new(group, settings);
    let mut ticks = tokio::time::interval(settings.interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let out = context.out;
    if terminal.is_some() {
        write!(out, "{ENTER}")?;
    }
    let secrets = source.target().secrets();
    let stop = super::serve::stop_signal();
    tokio::pin!(stop);
    let result = loop {
        tokio::select! {
            _ = ticks.tick() => {}
            () = &mut stop => break Ok(()),
        }
        match sampler.read().await {
            Ok(snapshot) => fleet.record(snapshot),
            // Shown as it comes, not through the command's error line: scrubbed here.
            Err(error) => fleet.record_error(redact::scrub(error.message(), &secrets)),
        }
        let report = fleet.report();
        let clock = view::clock(report.taken_at_ms);
        let lines = view::render(&report, &clock, terminal.map(|height| height()));
        let drawn = match terminal {
            // Home, each line cleared to its end, then everything below cleared.
            Some(_) => write!(out, "\x1b[H{}\x1b[K\x1b[J", lines.join("\x1b[K\r\n")),
            None => writeln!(out, "{}\n", lines.join("\n")),
        };
        if let Err(error) = drawn.and_then(|()| out.flush()) {
            break Err(CliError::from(error));
        }
    };
    if terminal.is_some() {
        write!(out, "{LEAVE}")?;
        out.flush()?;
    }
    result
}
