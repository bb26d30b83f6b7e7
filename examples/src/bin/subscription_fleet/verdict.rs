//! The verdict: every committed entry handled at least once but the poison ones, which are
//! handled never and parked exactly; entries handled twice only where a kill or a freeze
//! ended a lease; every child but the killed one exited gracefully, and none that no step hit
//! lost a lease.

use std::collections::{BTreeMap, BTreeSet};

use checkpoint_core::parked::ParkedEntry;

use crate::evidence::Handled;
use crate::readback::Logged;
use crate::steps::Faults;
use crate::writers::{self, Committed};

/// What the run left behind, gathered by the supervisor.
pub struct Evidence<'a> {
    pub logged: &'a BTreeMap<u64, Logged>,
    pub committed: &'a [Committed],
    pub handled: &'a [Handled],
    pub parked: &'a [ParkedEntry],
    pub faults: &'a Faults,
    pub started: usize,
    /// Whether the steps were done while the writers still appended.
    pub steps_while_writing: bool,
    pub exits: &'a BTreeMap<String, BTreeMap<String, u64>>,
}

/// The figures of the verdict, in the order the summary writes them, and what broke.
pub struct Verdict {
    pub figures: Vec<(&'static str, u64)>,
    pub violations: Vec<String>,
    /// The first few entries handled twice where no kill or freeze hit, with their children.
    pub redone_elsewhere: Vec<String>,
}

/// Judges the run.
pub fn judge(evidence: &Evidence<'_>) -> Verdict {
    let logged = evidence.logged;
    let mut times: BTreeMap<u64, u64> = BTreeMap::new();
    for line in evidence.handled {
        *times.entry(line.id).or_default() += 1;
    }
    let count = |keep: &dyn Fn(&u64, &Logged) -> bool| {
        logged.iter().filter(|(id, entry)| keep(id, entry)).count() as u64
    };
    let handled = |id: &u64| times.get(id).copied().unwrap_or(0);
    let faulted = evidence.faults.partitions();
    let poison = count(&|_, e| e.poison);
    let missing = count(&|id, e| !e.poison && handled(id) == 0);
    let poison_handled = count(&|id, e| e.poison && handled(id) > 0);
    let twice_faulted = count(&|id, e| handled(id) > 1 && faulted.contains(&e.partition));
    let twice_elsewhere = count(&|id, e| handled(id) > 1 && !faulted.contains(&e.partition));
    let unknown = times.keys().filter(|id| !logged.contains_key(id)).count() as u64;
    let (parked_unexpected, parked_missing) = parked_difference(evidence);
    let log_differs = log_difference(evidence);
    let unfaulted_losses: u64 = evidence
        .exits
        .iter()
        .filter(|(child, _)| !evidence.faults.children.contains(*child))
        .map(|(_, stats)| stats.get("losses").copied().unwrap_or(0))
        .sum();
    let stat = |key: &str| -> u64 { evidence.exits.values().filter_map(|s| s.get(key)).sum() };
    let figures = vec![
        ("entries", logged.len() as u64),
        ("committed", evidence.committed.len() as u64),
        (
            "committed_out_of_order",
            writers::out_of_order(evidence.committed),
        ),
        (
            "steps_while_writing",
            u64::from(evidence.steps_while_writing),
        ),
        ("log_differs", log_differs),
        ("poison", poison),
        ("handled_lines", evidence.handled.len() as u64),
        ("handled_ids", times.len() as u64),
        ("missing", missing),
        ("poison_handled", poison_handled),
        ("unknown_handled", unknown),
        ("parked", evidence.parked.len() as u64),
        ("parked_unexpected", parked_unexpected),
        ("parked_missing", parked_missing),
        ("handled_twice", twice_faulted + twice_elsewhere),
        ("handled_twice_faulted", twice_faulted),
        ("handled_twice_elsewhere", twice_elsewhere),
        ("handled_twice_by_unhit_children", twice_by_unhit(evidence)),
        ("faulted_partitions", faulted.len() as u64),
        ("children_started", evidence.started as u64),
        ("children_exited", evidence.exits.len() as u64),
        ("losses_unfaulted", unfaulted_losses),
        ("retries", stat("retries")),
        ("parked_by_children", stat("parked")),
        ("drain_timeouts", stat("drain_timeouts")),
    ];
    let violations = violations(&figures);
    let redone_elsewhere = redone_elsewhere(evidence, &faulted);
    Verdict {
        figures,
        violations,
        redone_elsewhere,
    }
}

/// Up to 10 entries handled twice outside the faulted partitions: `id (pN): child-a child-b`.
fn redone_elsewhere(evidence: &Evidence<'_>, faulted: &BTreeSet<u32>) -> Vec<String> {
    let mut by_id: BTreeMap<u64, Vec<&str>> = BTreeMap::new();
    for line in evidence.handled {
        by_id.entry(line.id).or_default().push(&line.child);
    }
    by_id
        .iter()
        .filter_map(|(id, children)| {
            let partition = evidence.logged.get(id)?.partition;
            (children.len() > 1 && !faulted.contains(&partition))
                .then(|| format!("{id} (p{partition}): {}", children.join(" ")))
        })
        .take(10)
        .collect()
}

/// Entries handled more than once, none of those times by a child a step killed or froze:
/// a redo that only a graceful handover can have caused.
fn twice_by_unhit(evidence: &Evidence<'_>) -> u64 {
    let mut by_id: BTreeMap<u64, (u64, bool)> = BTreeMap::new();
    for line in evidence.handled {
        let (times, hit) = by_id.entry(line.id).or_default();
        *times += 1;
        *hit |= evidence.faults.children.contains(&line.child);
    }
    by_id
        .values()
        .filter(|(times, hit)| *times > 1 && !hit)
        .count() as u64
}

/// Parked records that are not poison entries, and poison entries not parked (by partition
/// and position).
fn parked_difference(evidence: &Evidence<'_>) -> (u64, u64) {
    let parked: BTreeSet<(u32, u64)> = evidence
        .parked
        .iter()
        .map(|entry| (entry.partition, entry.position))
        .collect();
    let poison: BTreeSet<(u32, u64)> = evidence
        .logged
        .values()
        .filter(|entry| entry.poison)
        .map(|entry| (entry.partition, entry.position))
        .collect();
    (
        parked.difference(&poison).count() as u64,
        poison.difference(&parked).count() as u64,
    )
}

/// Committed entries the log does not return where the writer was told they are (plus the
/// log's entries no writer committed).
fn log_difference(evidence: &Evidence<'_>) -> u64 {
    let elsewhere = evidence
        .committed
        .iter()
        .filter(|c| {
            evidence.logged.get(&c.id).is_none_or(|logged| {
                (logged.partition, logged.position) != (c.partition, c.position)
            })
        })
        .count();
    let extra = evidence
        .logged
        .len()
        .saturating_sub(evidence.committed.len());
    (elsewhere + extra) as u64
}

/// Each broken promise, named with its figure.
fn violations(figures: &[(&'static str, u64)]) -> Vec<String> {
    let figure = |key: &str| {
        figures
            .iter()
            .find(|(k, _)| *k == key)
            .map_or(0, |(_, v)| *v)
    };
    let mut broken = Vec::new();
    let zero = [
        (
            "log_differs",
            "committed entries the log does not return as written",
        ),
        ("missing", "committed entries never handled (skipped)"),
        ("poison_handled", "poison entries handled"),
        ("unknown_handled", "handled ids the log does not have"),
        (
            "parked_unexpected",
            "parked records that are not poison entries",
        ),
        ("parked_missing", "poison entries not parked"),
        (
            "handled_twice_elsewhere",
            "entries handled twice where no kill or freeze hit",
        ),
        (
            "handled_twice_by_unhit_children",
            "entries handled twice, never by a killed or frozen child",
        ),
        (
            "losses_unfaulted",
            "leases lost by children no step killed or froze",
        ),
    ];
    for (key, what) in zero {
        if figure(key) > 0 {
            broken.push(format!("{key}={}: {what}", figure(key)));
        }
    }
    if figure("entries") == 0 || figure("poison") == 0 {
        broken.push("the log has no entries, or no poison ones: nothing was tested".into());
    }
    if figure("children_exited") + 1 != figure("children_started") {
        broken.push("every child but the killed one exits gracefully and writes its stats".into());
    }
    broken
}

impl Verdict {
    /// The summary: `key=value` lines.
    pub fn summary(&self, store: &str, source: &str, seconds: f64) -> String {
        let mut text = format!("store={store}\nsource={source}\nseconds={seconds:.1}\n");
        for (key, value) in &self.figures {
            text.push_str(&format!("{key}={value}\n"));
        }
        text.push_str(&format!("violations={}\n", self.violations.len()));
        text
    }

    pub fn print(&self) {
        for (key, value) in &self.figures {
            println!("   {key:<24} {value}");
        }
        for redone in &self.redone_elsewhere {
            println!("   redone where no step hit: {redone}");
        }
        for violation in &self.violations {
            println!("   VIOLATION: {violation}");
        }
    }
}
