//! Failover: one of the fleet's workers crashes (its keeper stops with no handover, release or
//! leave; its application's tasks are aborted); the others see its leases expire and take its
//! partitions. Measured: from the crash until the survivors own every partition.

use std::sync::Arc;
use std::time::{Duration, Instant};

use checkpoint_core::lease::safe_duration;

use super::app::Work;
use super::fleet::{self, Fleet};
use super::report::{Figure, ms};
use super::{CONVERGE_TIMEOUT, Findings, Plan, cost, group};
use crate::subject::{BenchError, BenchStore};

/// What other systems take by default before a dead worker's partitions move.
const ANCHORS: &str = "KCL 10 s, Axon 10 s, Azure Event Hubs 60 s (defaults)";

/// The failover row's absolute bound with a 2 s lease.
const WITHIN: Duration = Duration::from_secs(3);

/// Crashes the last of the small fleet's workers and times the takeover; the fleet's at-rest
/// cost is measured first, while it is balanced.
pub(super) async fn measure(
    findings: &mut Findings,
    backend: &'static str,
    store: &Arc<dyn BenchStore>,
    plan: Plan,
) -> Result<(), BenchError> {
    let (workers, partitions) = plan.small;
    let settings = plan.ownership;
    let mut fleet = Fleet::new(
        store,
        group("failover"),
        partitions,
        settings,
        Work::Entries,
    );
    fleet.start(workers)?;
    let all: Vec<usize> = (0..workers).collect();
    fleet.wait_balanced(&all, CONVERGE_TIMEOUT).await?;
    cost::at_rest(findings, backend, &fleet, &all, plan.rest_rounds).await?;

    let victim = workers - 1;
    let survivors = &all[..victim];
    let last = fleet.stats(&[victim]).remove(0);
    let orphaned = last.held.len();
    // When the store lets the crashed worker's leases go: its local deadline (counted from its
    // last renew's sending, shortened by the clock-rate and safety margins) plus those margins.
    let expires_in = last.held_for.unwrap_or_default()
        + settings.lease.saturating_sub(safe_duration(settings.lease));
    let crashed_at = Instant::now();
    fleet.crash(victim);
    fleet
        .wait(
            "owned again after the crash",
            survivors,
            CONVERGE_TIMEOUT,
            |stats| fleet::held(stats) == partitions as usize,
        )
        .await?;
    let took = crashed_at.elapsed();
    let redone = fleet.ledger.redone();
    fleet.shutdown().await?;

    let bound = settings.lease + settings.renew;
    // The 3 s bound is the target's for a 2 s lease; a shorter (smoke) lease has only its own.
    let bound = if settings.lease == Duration::from_secs(2) {
        bound.min(WITHIN)
    } else {
        bound
    };
    findings.figures.push(Figure {
        row: "Failover (crash of 1 of 4 workers)",
        backend,
        setting: format!(
            "{workers} workers, {partitions} partitions, {}",
            settings.describe()
        ),
        measured: format!(
            "{} until all {partitions} owned again: its leases expired ≈{} after the crash, \
             the survivors owned them {} after that ({orphaned} partitions; {redone} entries \
             redone: completed after its last write, at-least-once)",
            ms(took),
            ms(expires_in),
            ms(took.saturating_sub(expires_in))
        ),
        target: format!("≤ lease + one renew interval, ≤ {}", ms(bound)),
        anchor: ANCHORS,
        met: Some(took <= bound),
    });
    Ok(())
}
