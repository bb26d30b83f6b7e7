//! The steps the supervisor takes while the writers append: start four children, kill one,
//! freeze one past its lease, stop one gracefully, start two more. Each step waits until the
//! lease table shows its effect and records which partitions a kill or a freeze hit.
//!
//! On SQLite the supervisor probes the file's write lock during the freeze: a child frozen
//! inside a write transaction holds it, and then nobody can renew or take a lease until it
//! wakes (see the `lock` module). With `--freeze-in-write-ms` the kill and the child's freeze
//! give way to a process of the supervisor's that holds the write lock on purpose and is
//! frozen for exactly that long.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::fleet::Fleet;
use crate::leases::{Leases, STEP_TIMEOUT, describe, held_by, shared_by, taken_from};
use crate::lock::{self, FrozenLock, PROBE_EVERY, Probe};
use crate::{BoxError, LEASE, slack};

/// A graceful shutdown drains and hands over: far below this.
pub const EXIT_TIMEOUT: Duration = Duration::from_secs(15);

/// A frozen child whose freeze kept the write lock held this long (past every lease: no
/// takeover can happen while it holds it) is woken: the freeze of the issue that found it.
const FROZEN_IN_WRITE_FOR: Duration = Duration::from_millis(3_500);

/// How the steps run: the probe of the store's SQLite file (none on other stores), and the
/// freeze of a lock holder that replaces the kill and the child's freeze when asked.
pub struct Plan {
    pub probe: Option<(PathBuf, Probe)>,
    pub freeze_in_write: Option<Duration>,
}

/// The partitions whose owner a step killed or froze: the only ones where an entry may be
/// handled twice.
#[derive(Debug, Default)]
pub struct Faults {
    pub killed: BTreeSet<u32>,
    pub frozen: BTreeSet<u32>,
    /// The children killed or frozen.
    pub children: BTreeSet<String>,
    /// How many children were killed (they write no stats).
    pub kills: u64,
    /// What the probes of the SQLite file's write lock saw during the freeze.
    pub lock: Option<FrozenLock>,
}

impl Faults {
    pub fn partitions(&self) -> BTreeSet<u32> {
        self.killed.union(&self.frozen).copied().collect()
    }

    /// Whether the frozen process held the store file's write lock through its freeze.
    pub fn frozen_in_write(&self) -> bool {
        self.lock.as_ref().is_some_and(FrozenLock::held_through)
    }
}

fn step(title: &str) {
    println!("\n── {title}");
}

/// Every step, in order.
pub async fn run(
    leases: &Leases<'_>,
    fleet: &mut Fleet,
    plan: &mut Plan,
) -> Result<Faults, BoxError> {
    let mut faults = Faults::default();
    step("start 4 children");
    for id in ["child-1", "child-2", "child-3", "child-4"] {
        fleet.start(id)?;
    }
    settle(leases, fleet, "the 4 children to share the partitions").await?;
    let probe = plan.probe.as_mut();
    if let Some(freeze) = plan.freeze_in_write {
        let (file, probe) = probe.ok_or("--freeze-in-write-ms needs an SQLite store")?;
        step(&format!(
            "freeze a process inside a write transaction for {freeze:?} (lease {LEASE:?}; slack {:?})",
            slack()
        ));
        faults.lock = Some(lock::freeze_holder(file, probe, freeze).await?);
        settle(leases, fleet, "every child to hold partitions again").await?;
    } else {
        faults.killed = kill(leases, fleet, "child-1").await?;
        faults.kills = 1;
        let (frozen, seen) = freeze(leases, fleet, "child-2", probe.map(|(_, p)| p)).await?;
        (faults.frozen, faults.lock) = (frozen, seen);
        faults.children = ["child-1", "child-2"].map(String::from).into();
    }
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
/// that must find its leases gone before it acts, then rejoins. If the probes find the write
/// lock held all along for `FROZEN_IN_WRITE_FOR` instead, the child froze inside a write and
/// nobody can take anything: it is woken then.
async fn freeze(
    leases: &Leases<'_>,
    fleet: &mut Fleet,
    id: &str,
    mut probe: Option<&mut Probe>,
) -> Result<(BTreeSet<u32>, Option<FrozenLock>), BoxError> {
    step(&format!("SIGSTOP {id} past its lease, then SIGCONT"));
    let frozen_at = Instant::now();
    fleet.signal(id, "STOP").await?;
    // A request sent just before the stop may still land: let it, then what it holds is
    // what it holds while frozen.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let held = held_by(&leases.read().await?, id);
    println!("   frozen, holding {held:?}");
    let mut seen = FrozenLock::default();
    let mut locked_since: Option<Instant> = None;
    loop {
        fleet.check_running()?;
        let table = leases.read().await?;
        if taken_from(&table, id, &held) {
            println!(
                "   taken over {:.1?} after the freeze: {}",
                frozen_at.elapsed(),
                describe(&table)
            );
            break;
        }
        if let Some(probe) = probe.as_deref_mut() {
            seen.probes += 1;
            if probe.locked().await? {
                seen.locked += 1;
                locked_since.get_or_insert_with(Instant::now);
            } else {
                locked_since = None;
            }
        }
        if locked_since.is_some_and(|since| since.elapsed() >= FROZEN_IN_WRITE_FOR) {
            println!(
                "   the write lock held all along for {FROZEN_IN_WRITE_FOR:?}: {id} froze inside a write, nobody can take a lease"
            );
            break;
        }
        if frozen_at.elapsed() > STEP_TIMEOUT {
            return Err(format!(
                "waited {STEP_TIMEOUT:?} for the others to take the frozen child's partitions: {}",
                describe(&table)
            )
            .into());
        }
        tokio::time::sleep(PROBE_EVERY).await;
    }
    fleet.signal(id, "CONT").await?;
    seen.frozen = frozen_at.elapsed();
    seen.released_at_ms = lock::wall_ms();
    println!("   SIGCONT {id}");
    settle(leases, fleet, "the woken child to rejoin").await?;
    Ok((held.into_iter().collect(), probe.map(|_| seen)))
}
