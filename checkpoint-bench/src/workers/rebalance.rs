//! Rebalance after a join: a balanced fleet, then one more worker. It asks owners above the
//! new share to hand partitions over; they do at their next round. Measured: from the start of
//! the new worker until the fleet is balanced within ±1, and the partitions that changed owner
//! (from the store's lease table before and after).

use std::sync::Arc;
use std::time::Instant;

use super::app::Work;
use super::fleet::Fleet;
use super::report::{Figure, ms};
use super::{CONVERGE_TIMEOUT, Findings, Plan, cost, group};
use crate::subject::{BenchError, BenchStore};

const ANCHORS: &str = "Kafka cooperative rebalancing: 900 partitions, 10 consumers, 5 s";

/// Starts the rebalance fleet, measures its cost at rest, then adds a worker and times the
/// rebalance.
pub(super) async fn measure(
    findings: &mut Findings,
    backend: &'static str,
    store: &Arc<dyn BenchStore>,
    plan: Plan,
) -> Result<(), BenchError> {
    let (workers, partitions) = plan.rebalance;
    let settings = plan.ownership;
    let mut fleet = Fleet::new(store, group("rebalance"), partitions, settings, Work::Idle);
    fleet.start(workers)?;
    let before: Vec<usize> = (0..workers).collect();
    fleet.wait_balanced(&before, CONVERGE_TIMEOUT).await?;
    cost::at_rest(findings, backend, &fleet, &before, plan.rest_rounds).await?;

    let owners = fleet.owners().await?;
    let joined_at = Instant::now();
    fleet.add()?;
    let after: Vec<usize> = (0..=workers).collect();
    fleet.wait_balanced(&after, CONVERGE_TIMEOUT).await?;
    let took = joined_at.elapsed();
    let moved = fleet
        .owners()
        .await?
        .iter()
        .filter(|(partition, owner)| owners.get(partition) != Some(owner))
        .count();
    let asked = fleet.stats(&[workers])[0].handovers_in;
    fleet.shutdown().await?;

    let n = workers + 1;
    let most = (partitions as usize).div_ceil(n) + 1;
    let bound = 2 * settings.renew;
    findings.figures.push(Figure {
        row: "Rebalance after a join",
        backend,
        setting: format!(
            "{partitions} partitions, {workers} → {n} workers, {}",
            settings.describe()
        ),
        measured: format!(
            "{} until balanced within ±1; {moved} partitions moved ({asked} handed over on \
             request)",
            ms(took)
        ),
        target: format!(
            "≤ 2 renew intervals = {}; ≤ ⌈P/N⌉ + 1 = {most} moved",
            ms(bound)
        ),
        anchor: ANCHORS,
        met: Some(took <= bound && moved <= most),
    });
    Ok(())
}
