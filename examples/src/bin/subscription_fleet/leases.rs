//! Who holds what, as the supervisor reads it from its own store client
//! (`LeaseStore::leases`): waiting until the table shows what a step expects.

use std::time::{Duration, Instant};

use checkpoint_core::LeaseTable;

use crate::fleet::Fleet;
use crate::store::FleetStore;
use crate::{BoxError, PARTITIONS, SUBSCRIPTION};

/// Several lease durations: only a takeover or a handover that never happens trips it.
pub const STEP_TIMEOUT: Duration = Duration::from_secs(15);
const POLL: Duration = Duration::from_millis(50);

/// The supervisor's view of the lease table of the fleet's group.
pub struct Leases<'a> {
    pub store: &'a dyn FleetStore,
    pub group: &'a str,
}

impl Leases<'_> {
    pub async fn read(&self) -> Result<LeaseTable, BoxError> {
        Ok(self.store.leases(self.group, SUBSCRIPTION).await?)
    }

    /// Reads the table until `expected` holds of it, checking meanwhile that no child exited
    /// on its own; returns the table and how long it took.
    pub async fn wait_until(
        &self,
        fleet: &mut Fleet,
        what: &str,
        expected: impl Fn(&LeaseTable) -> bool,
    ) -> Result<(LeaseTable, Duration), BoxError> {
        let start = Instant::now();
        loop {
            fleet.check_running()?;
            let table = self.read().await?;
            if expected(&table) {
                return Ok((table, start.elapsed()));
            }
            if start.elapsed() > STEP_TIMEOUT {
                return Err(
                    format!("waited {STEP_TIMEOUT:?} for {what}: {}", describe(&table)).into(),
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }
}

/// Every partition is leased, and each of `children` (exactly the live ones) holds one.
pub fn shared_by(table: &LeaseTable, children: &[String]) -> bool {
    let live: Vec<&str> = table.owners.iter().map(|o| o.owner.as_str()).collect();
    table.leases.len() == PARTITIONS as usize
        && live == children
        && children
            .iter()
            .all(|child| table.leases.iter().any(|lease| &lease.owner == child))
}

/// The partitions `child` holds.
pub fn held_by(table: &LeaseTable, child: &str) -> Vec<u32> {
    table
        .leases
        .iter()
        .filter(|lease| lease.owner == child)
        .map(|lease| lease.partition)
        .collect()
}

/// Each of `partitions` is leased by a child other than `gone`.
pub fn taken_from(table: &LeaseTable, gone: &str, partitions: &[u32]) -> bool {
    partitions.iter().all(|partition| {
        table
            .leases
            .iter()
            .any(|lease| lease.partition == *partition && lease.owner != gone)
    })
}

/// The table on one line: `p0 child-2 (epoch 3), …`.
pub fn describe(table: &LeaseTable) -> String {
    let held: Vec<String> = table
        .leases
        .iter()
        .map(|lease| {
            format!(
                "p{} {} (epoch {})",
                lease.partition, lease.owner, lease.epoch
            )
        })
        .collect();
    format!("{}; {} live", held.join(", "), table.owners.len())
}
