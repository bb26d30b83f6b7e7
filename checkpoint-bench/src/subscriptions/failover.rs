//! Failover with the source attached: two subscriptions on PostgreSQL (source and store)
//! while a writer per partition appends; one crashes (its lease keeper stops: no handover, no
//! release). Measured: from the crash until the survivor has handled, on every partition the
//! crashed one held, an entry appended after the crash; and the entries handled twice (those
//! the crashed one handled after its last checkpoint write: at-least-once). Then the graceful
//! handover row (`handover.rs`) on the same fleet.

use std::time::{Instant, SystemTime};

use super::fleet::{Fleet, SETTLE, WRITE_PAUSE, setting};
use super::pairs::Pair;
use super::{Figure, Plan, handover};
use crate::subject::BenchError;
use crate::workers::report::ms;

const ROW: &str = "Failover with the source attached (crash of 1 of 2 subscriptions)";

/// Both rows on `pair`.
pub(super) async fn measure(
    pair: &Pair,
    plan: Plan,
    figures: &mut Vec<Figure>,
) -> Result<(), BenchError> {
    let mut fleet = Fleet::new(pair, plan).await?;
    let result = rows(&mut fleet, pair, plan, figures).await;
    let closed = fleet.close().await;
    result.and(closed)
}

async fn rows(
    fleet: &mut Fleet,
    pair: &Pair,
    plan: Plan,
    figures: &mut Vec<Figure>,
) -> Result<(), BenchError> {
    let (survivor, victim) = (fleet.add()?, fleet.add()?);
    fleet.start_writers();
    fleet.wait_balanced(&[survivor, victim]).await?;
    tokio::time::sleep(SETTLE).await;

    let orphaned = fleet.held(victim);
    let twice_before = fleet.ledger.twice();
    let committer = fleet.members[victim].worker().committer().clone();
    let writes_before = committer.stats().writes;
    let (since, crashed) = (SystemTime::now(), Instant::now());
    fleet.crash(victim);
    fleet.wait_handled(survivor, &orphaned, since).await?;
    let took = crashed.elapsed();
    tokio::time::sleep(SETTLE).await;
    let twice = fleet.ledger.twice() - twice_before;
    // The hook stops the lease keeper only: the crashed worker's committer lives on (a killed
    // process's would not), which the row says.
    let late_writes = committer.stats().writes - writes_before;

    let bound = plan.lease + plan.renew;
    figures.push(Figure {
        row: ROW,
        pair: pair.name,
        setting: setting(plan),
        measured: format!(
            "{} until the survivor handled a new entry on each of the {} partitions the crashed \
             one held; {twice} entries handled twice (at-least-once: handled after its last \
             checkpoint write; its committer, which `crash()` leaves running, wrote \
             {late_writes} times after the crash)",
            ms(took),
            orphaned.len()
        ),
        target: format!(
            "≤ lease + one renew interval + the write pause = {}",
            ms(bound + WRITE_PAUSE)
        ),
        met: Some(took <= bound + WRITE_PAUSE),
    });
    handover::measure(fleet, survivor, pair, plan, figures).await
}
