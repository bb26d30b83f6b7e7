//! The steps the supervisor takes while the writers append: start four children, kill one,
//! freeze one past its lease, stop one gracefully, start two more. Each step waits until the
//! lease table shows its effect and records which partitions a kill or a freeze hit.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::fleet::Fleet;
use crate::leases::{Leases, describe, held_by, shared_by, taken_from};
use crate::{BoxError, LEASE};

/// A graceful shutdown drains and hands over: far below this.
pub const EXIT_TIMEOUT: Duration = Duration::from_secs(15);

/// The partitions whose owner a step killed or froze: the only ones where an entry may be
/// handled twice.
#[derive(Debug, Default)]
pub struct Faults {
    pub killed: BTreeSet<u32>,
    pub frozen: BTreeSet<u32>,
    /// The children killed or frozen.
    pub children: BTreeSet<String>,
}

impl Faults {
    pub fn partitions(&self) -> BTreeSet<u32> {
        self.killed.union(&self.frozen).copied().collect()
    }
}

fn step(title: &str) {
    println!("\n── {title}");
}

/// Every step, in order.
pub async fn run(leases: &Leases<'_>, fleet: &mut Fleet) -> Result<Faults, BoxError> {
    let mut faults = Faults::default();
    step("start 4 children");
    for id in ["child-1", "child-2", "child-3", "child-4"] {
        fleet.start(id)?;
    }
    settle(leases, fleet, "the 4 children to share the partitions").await?;
    faults.killed = kill(leases, fleet, "child-1").await?;
    faults.frozen = freeze(leases, fleet, "child-2").await?;
    faults.children = ["child-1", "child-2"].map(String::from).into();
    step("SIGTERM child-3 (graceful: it hands its partitions over)");
    let stopping = Instant::now();
    fleet.stop("child-3", EXIT_TIMEOUT).await?;
    println!("   exited 0 after {:.1?}", stopping.elapsed());
    step("start 2 more children");
    for id in ["child-5", "child-6"] {
        fleet.start(id)?;
    }
    settle(leases, fleet, "the new children to get their share").await?;
    Ok(faults)
}

/// Waits until every live child holds some partition and every partition is held.
async fn settle(leases: &Leases<'_>, fleet: &mut Fleet, what: &str) -> Result<(), BoxError> {
    let children = fleet.running();
    let (table, took) = leases
        .wait_until(fleet, what, |table| shared_by(table, &children))
        .await?;
    println!("   after {took:.1?}: {}", describe(&table));
    Ok(())
}

/// SIGKILL: no handover. Its leases expire; the others take them.
async fn kill(leases: &Leases<'_>, fleet: &mut Fleet, id: &str) -> Result<BTreeSet<u32>, BoxError> {
    step(&format!("SIGKILL {id}"));
    let killed_at = Instant::now();
    fleet.signal(id, "KILL").await?;
    fleet.exited(id, EXIT_TIMEOUT).await?;
    // Dead: what it holds now is exactly what the kill ended.
    let held = held_by(&leases.read().await?, id);
    println!("   it held {held:?}; they expire with its lease ({LEASE:?})");
    let (table, _) = leases
        .wait_until(fleet, "the others to take its partitions", |t| {
            taken_from(t, id, &held)
        })
        .await?;
    println!(
        "   taken over {:.1?} after the kill: {}",
        killed_at.elapsed(),
        describe(&table)
    );
    Ok(held.into_iter().collect())
}

/// SIGSTOP until the others took its partitions (past its lease), then SIGCONT: a zombie
/// that must find its leases gone before it acts, then rejoins.
async fn freeze(
    leases: &Leases<'_>,
    fleet: &mut Fleet,
    id: &str,
) -> Result<BTreeSet<u32>, BoxError> {
    step(&format!("SIGSTOP {id} past its lease, then SIGCONT"));
    let frozen_at = Instant::now();
    fleet.signal(id, "STOP").await?;
    // A request sent just before the stop may still land: let it, then what it holds is
    // what it holds while frozen.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let held = held_by(&leases.read().await?, id);
    println!("   frozen, holding {held:?}");
    let (table, _) = leases
        .wait_until(
            fleet,
            "the others to take the frozen child's partitions",
            |t| taken_from(t, id, &held),
        )
        .await?;
    println!(
        "   taken over {:.1?} after the freeze: {}",
        frozen_at.elapsed(),
        describe(&table)
    );
    fleet.signal(id, "CONT").await?;
    println!("   SIGCONT {id}");
    settle(leases, fleet, "the woken child to rejoin").await?;
    Ok(held.into_iter().collect())
}
