//! Graceful handover: one of the fleet's workers shuts down (`Worker::shutdown`): its
//! application stops dispatching, finishes the batch in flight and drops each assignment (the
//! drain), the worker writes each partition's final checkpoint and releases it, and the others
//! take them at their next round. Measured: the time until the others own every partition,
//! the drain apart, and the entries completed twice (redone).

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::app::Work;
use super::fleet::{self, Fleet};
use super::report::{Figure, ms};
use super::{CONVERGE_TIMEOUT, Findings, Plan, Settings, group};
use crate::subject::{BenchError, BenchStore};

const ANCHORS: &str = "KCL #845: 27 s to hand a lease over on shutdown";

/// What the handover may take beyond the drain (the target).
const BEYOND_DRAIN: Duration = Duration::from_millis(200);

/// How long the takers run after the handover before the ledger is read: long enough to
/// complete a few batches from where they resumed, so a position redone would show.
const AFTER: Duration = Duration::from_millis(300);

/// How long the entries flow before the shutdown, so every partition has a checkpoint.
const BEFORE: Duration = Duration::from_millis(300);

/// Shuts the last of the small fleet's workers down and times the handover.
pub(super) async fn measure(
    findings: &mut Findings,
    backend: &'static str,
    store: &Arc<dyn BenchStore>,
    plan: Plan,
    settings: Settings,
) -> Result<(), BenchError> {
    let (workers, partitions) = plan.small;
    let mut fleet = Fleet::new(
        store,
        group("handover"),
        partitions,
        settings,
        Work::Entries,
    );
    fleet.start(workers)?;
    let all: Vec<usize> = (0..workers).collect();
    fleet.wait_balanced(&all, CONVERGE_TIMEOUT).await?;
    tokio::time::sleep(BEFORE).await;

    let leaver = workers - 1;
    let takers = &all[..leaver];
    let leaving = fleet.members[leaver].worker.clone();
    // Its counters so far include the handovers of the fleet's start (a first worker claims
    // everything, then hands the others their share): only the shutdown's count here.
    let handed_before = leaving.stats().handovers_out;
    let started = Instant::now();
    let shutdown = tokio::spawn(async move { leaving.shutdown().await.map(|()| Instant::now()) });
    fleet
        .wait(
            "taken over after the shutdown",
            takers,
            CONVERGE_TIMEOUT,
            |stats| fleet::held(stats) == partitions as usize,
        )
        .await?;
    let took = started.elapsed();
    let returned = shutdown.await??.saturating_duration_since(started);
    let drain = fleet.members[leaver]
        .drops
        .last()
        .map_or(Duration::ZERO, |at| at.saturating_duration_since(started));
    tokio::time::sleep(AFTER).await;
    let (redone, entries) = (fleet.ledger.redone(), fleet.ledger.entries());
    let left = fleet.members[leaver].worker.stats();
    fleet.shutdown().await?;

    let measured = Measured {
        took,
        drain,
        returned,
        handed: left.handovers_out - handed_before,
        redone,
        entries,
        drain_timeouts: left.drain_timeouts,
        failed_writes: left.final_write_failures,
    };
    let setting = format!(
        "{workers} workers, {partitions} partitions, {}",
        settings.describe()
    );
    findings
        .figures
        .extend(figures(backend, setting, partitions, &measured));
    Ok(())
}

/// What one handover measured.
struct Measured {
    took: Duration,
    drain: Duration,
    returned: Duration,
    handed: u64,
    redone: u64,
    entries: usize,
    drain_timeouts: u64,
    failed_writes: u64,
}

/// The handover's figures: its time against the target, and the entries redone.
fn figures(backend: &'static str, setting: String, partitions: u32, m: &Measured) -> [Figure; 2] {
    let bound = BEYOND_DRAIN + m.drain;
    [
        Figure {
            row: "Graceful handover (shutdown of 1 of 4 workers)",
            backend,
            setting: setting.clone(),
            measured: format!(
                "{} until the takers own all {partitions} (drain {}, {} handed over; \
                 `shutdown()` returned after {})",
                ms(m.took),
                ms(m.drain),
                m.handed,
                ms(m.returned)
            ),
            target: format!("≤ 200 ms + the drain = {}", ms(bound)),
            anchor: ANCHORS,
            met: Some(m.took <= bound),
        },
        Figure {
            row: "Graceful handover: entries redone",
            backend,
            setting,
            measured: format!(
                "{} of {} entries completed twice ({} drain timeouts, {} failed final writes)",
                m.redone, m.entries, m.drain_timeouts, m.failed_writes
            ),
            target: "0".into(),
            anchor: ANCHORS,
            met: Some(m.redone == 0),
        },
    ]
}
