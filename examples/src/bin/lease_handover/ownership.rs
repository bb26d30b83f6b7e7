//! Who owns what, as the supervisor reads it from its own store client (`LeaseStore::leases`):
//! printing the table, and waiting until it shows what a step expects.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use checkpoint_core::LeaseTable;
use checkpoint_examples::ExampleStore;

use crate::fleet::Fleet;
use crate::synthetic::PARTITIONS;
use crate::{BoxError, SUBSCRIPTION};

/// How long a step may take before the run fails: several lease durations, so that only a
/// takeover or a handover that does not happen at all trips it.
const STEP_TIMEOUT: Duration = Duration::from_secs(20);
const POLL: Duration = Duration::from_millis(50);

/// The supervisor's view of the lease table.
pub struct Owners<'a> {
    pub store: &'a dyn ExampleStore,
    pub group: &'a str,
}

impl Owners<'_> {
    pub async fn read(&self) -> Result<LeaseTable, BoxError> {
        Ok(self.store.leases(self.group, SUBSCRIPTION).await?)
    }

    /// Reads the table until `expected` holds of it (checking meanwhile that no worker exited
    /// on its own); the table and how long it took.
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
                return Err(format!(
                    "waited {STEP_TIMEOUT:?} for {what}; the leases are:\n{}",
                    describe(&table)
                )
                .into());
            }
            tokio::time::sleep(POLL).await;
        }
    }
}

/// Every partition is leased, the live workers are exactly `workers`, and each holds its
/// share: ⌊P/N⌋ or ⌈P/N⌉.
pub fn balanced(table: &LeaseTable, workers: &[&str]) -> bool {
    let live: Vec<&str> = table.owners.iter().map(|o| o.owner.as_str()).collect();
    if live != workers || table.leases.len() != PARTITIONS as usize {
        return false;
    }
    let n = workers.len() as u32;
    let (low, high) = (PARTITIONS / n, PARTITIONS.div_ceil(n));
    workers.iter().all(|worker| {
        let held = table.leases.iter().filter(|l| l.owner == *worker).count() as u32;
        (low..=high).contains(&held)
    })
}

/// The partitions `worker` holds, with their epochs.
pub fn held_by(table: &LeaseTable, worker: &str) -> Vec<(u32, u64)> {
    table
        .leases
        .iter()
        .filter(|lease| lease.owner == worker)
        .map(|lease| (lease.partition, lease.epoch))
        .collect()
}

/// Each of `partitions` is leased by a worker other than `gone`.
pub fn taken_from(table: &LeaseTable, gone: &str, partitions: &[(u32, u64)]) -> bool {
    partitions.iter().all(|(partition, _)| {
        table
            .leases
            .iter()
            .any(|lease| lease.partition == *partition && lease.owner != gone)
    })
}

/// The table as the steps print it: each live worker with its partitions and their epochs,
/// then the partitions nobody holds.
pub fn describe(table: &LeaseTable) -> String {
    let mut by_owner: BTreeMap<&str, Vec<String>> = table
        .owners
        .iter()
        .map(|owner| (owner.owner.as_str(), Vec::new()))
        .collect();
    for lease in &table.leases {
        by_owner
            .entry(lease.owner.as_str())
            .or_default()
            .push(format!("p{} (epoch {})", lease.partition, lease.epoch));
    }
    let mut lines: Vec<String> = by_owner
        .iter()
        .map(|(owner, held)| {
            let held = if held.is_empty() {
                "nothing".to_owned()
            } else {
                held.join(", ")
            };
            format!("     {owner:<9} holds {held}")
        })
        .collect();
    let free: Vec<String> = (0..PARTITIONS)
        .filter(|p| !table.leases.iter().any(|lease| lease.partition == *p))
        .map(|p| format!("p{p}"))
        .collect();
    if !free.is_empty() {
        lines.push(format!("     free: {}", free.join(", ")));
    }
    lines.push(format!("     live workers: {}", table.owners.len()));
    lines.join("\n")
}
