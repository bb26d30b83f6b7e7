//! `checkpoint check`.

use super::Context;
use super::sampling::checked;
use crate::args::CheckArgs;
use crate::error::{CliError, Exit};
use crate::monitor::{Fleet, Sampler};
use crate::output::write_json;
use crate::source::SourceSpec;

/// Samples the group `args.samples` times, `args.interval` apart, judges each partition, and
/// prints one line per partition that needs attention (`stalled orders/2 checkpoint 310
/// unchanged for 8.0 s over 5 samples, lag 346, owner w-4117`), or the whole report as JSON.
///
/// # Errors
///
/// Exit code 4 when a partition needs attention (after printing); refused (3) when there is
/// no partition to judge; a usage error for a bad name or setting; the store's or the log's
/// error.
pub async fn check(
    context: Context<'_>,
    args: &CheckArgs,
    source: &SourceSpec,
) -> Result<(), CliError> {
    let group = args.group.as_str();
    let subscription = args.subscription.as_deref();
    let settings = checked(group, subscription, args.interval, args.samples)?;
    let mut sampler = Sampler::new(context.store, group, subscription, source);
    let mut fleet = Fleet::new(group, settings);
    let mut ticks = tokio::time::interval(settings.interval);
    for _ in 0..settings.window {
        ticks.tick().await;
        fleet.record(sampler.read().await?);
    }
    let report = fleet.report();
    if args.json {
        write_json(context.out, &report)?;
    } else {
        for p in report.attention() {
            writeln!(
                context.out,
                "{} {}/{} {}",
                p.verdict.as_str(),
                p.subscription,
                p.partition,
                p.evidence
            )?;
        }
    }
    if report.partitions.is_empty() {
        return Err(CliError::refused(format!(
            "no checkpoints, live leases or parked entries to judge in group {group:?}"
        )));
    }
    match report.attention().count() {
        0 => Ok(()),
        n => Err(CliError::new(
            Exit::Attention,
            format!(
                "{n} of {} partitions need attention",
                report.partitions.len()
            ),
        )),
    }
}
