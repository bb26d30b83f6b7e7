//! The verdict: every committed entry handled at least once but the poison ones, which are
//! handled never and parked exactly; entries handled twice only where a kill or a freeze
//! ended a lease; every child but the killed one exited gracefully, and none that no step hit
//! lost a lease. On SQLite, one exception, only with the evidence that a frozen process held
//! the file's write lock through its freeze (`frozen_in_write=1`): then every child whose
//! renews waited past its deadline lost its leases, and what it handled since its last stored
//! checkpoint was redone (`handled_twice_by_frozen_lock`); see checkpoint-sqlite's crate doc.

use std::collections::{BTreeMap, BTreeSet};

use checkpoint_core::parked::ParkedEntry;

use crate::evidence::Handled;
use crate::readback::Logged;
use crate::steps::Faults;
use crate::writers::{self, Committed};
use crate::{LEASE, PARTITIONS, slack};

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
    /// The first few entries handled twice where no kill or freeze hit, with their children
    /// and what explains them.
    pub redone_elsewhere: Vec<String>,
    /// Whether a frozen process held the store file's write lock through its freeze.
    pub frozen_in_write: bool,
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
    let unknown = times.keys().filter(|id| !logged.contains_key(id)).count() as u64;
    let (parked_unexpected, parked_missing) = parked_difference(evidence);
    let redos = redos(evidence, &faulted);
    let stat = |key: &str| -> u64 { evidence.exits.values().filter_map(|s| s.get(key)).sum() };
    let mut figures = vec![
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
        ("log_differs", log_difference(evidence)),
        ("poison", poison),
        ("handled_lines", evidence.handled.len() as u64),
        ("handled_ids", times.len() as u64),
        ("missing", count(&|id, e| !e.poison && handled(id) == 0)),
        (
            "poison_handled",
            count(&|id, e| e.poison && handled(id) > 0),
        ),
        ("unknown_handled", unknown),
        ("parked", evidence.parked.len() as u64),
        ("parked_unexpected", parked_unexpected),
        ("parked_missing", parked_missing),
        ("handled_twice", redos.faulted + redos.elsewhere),
        ("handled_twice_faulted", redos.faulted),
        ("handled_twice_elsewhere", redos.elsewhere),
        ("handled_twice_by_unhit_children", redos.by_unhit),
        ("handled_twice_by_frozen_lock", redos.by_frozen_lock),
        ("handled_twice_unexplained", redos.unexplained),
        ("partitions", u64::from(PARTITIONS)),
        ("faulted_partitions", faulted.len() as u64),
        ("children_started", evidence.started as u64),
        ("children_killed", evidence.faults.kills),
        ("children_exited", evidence.exits.len() as u64),
        ("retries", stat("retries")),
        ("parked_by_children", stat("parked")),
        ("drain_timeouts", stat("drain_timeouts")),
    ];
    figures.extend(lock_figures(evidence));
    Verdict {
        violations: violations(&figures),
        figures,
        redone_elsewhere: redos.examples,
        frozen_in_write: evidence.faults.frozen_in_write(),
    }
}

/// The leases lost by children no step hit, and what the probes of the write lock saw
/// during the freeze: the evidence for `frozen_in_write`.
fn lock_figures(evidence: &Evidence<'_>) -> Vec<(&'static str, u64)> {
    let unfaulted = || {
        evidence
            .exits
            .iter()
            .filter(|(child, _)| !evidence.faults.children.contains(*child))
            .map(|(_, stats)| stats.get("losses").copied().unwrap_or(0))
    };
    let lock = evidence.faults.lock.clone().unwrap_or_default();
    vec![
        ("losses_unfaulted", unfaulted().sum()),
        (
            "children_lost_unfaulted",
            unfaulted().filter(|&losses| losses > 0).count() as u64,
        ),
        ("lease_ms", LEASE.as_millis() as u64),
        ("slack_ms", slack().as_millis() as u64),
        (
            "frozen_in_write",
            u64::from(evidence.faults.frozen_in_write()),
        ),
        ("freeze_ms", lock.frozen.as_millis() as u64),
        ("freeze_probes", lock.probes),
        ("freeze_probes_locked", lock.locked),
        (
            "writers_longest_stall_ms",
            writers::longest_stall(evidence.committed).as_millis() as u64,
        ),
    ]
}

/// The entries handled more than once, sorted by what explains them.
#[derive(Default)]
struct Redos {
    /// In a partition a kill or a freeze hit, and outside them.
    faulted: u64,
    elsewhere: u64,
    /// Never handled by a child a step killed or froze.
    by_unhit: u64,
    /// Elsewhere or by unhit children only, explained by a process frozen inside a write.
    by_frozen_lock: u64,
    /// Elsewhere or by unhit children only, and not explained by it: a broken promise.
    unexplained: u64,
    /// Up to 10 of the last two kinds: `id (pN): child-a child-b (why)`.
    examples: Vec<String>,
}

/// Sorts every redo. One in a partition a kill or a freeze hit, by the child it hit, is theirs.
/// Any other is the frozen lock's only if a process froze inside a write (`frozen_in_write`)
/// and the entry was first handled by a child that lost a lease, before the lock was released
/// or within a lease after it (a child whose renew waited behind the lock may lose its
/// partitions until then); anything else, after a graceful handover say, is unexplained.
fn redos(evidence: &Evidence<'_>, faulted: &BTreeSet<u32>) -> Redos {
    let mut by_id: BTreeMap<u64, Vec<&Handled>> = BTreeMap::new();
    for line in evidence.handled {
        by_id.entry(line.id).or_default().push(line);
    }
    for lines in by_id.values_mut() {
        lines.sort_by_key(|line| line.at_ms);
    }
    let lost: BTreeSet<&str> = evidence
        .exits
        .iter()
        .filter(|(_, stats)| stats.get("losses").is_some_and(|&losses| losses > 0))
        .map(|(child, _)| child.as_str())
        .collect();
    let lock_until = evidence
        .faults
        .lock
        .as_ref()
        .filter(|_| evidence.faults.frozen_in_write())
        .map(|lock| lock.released_at_ms + LEASE.as_millis() as u64);
    let mut redos = Redos::default();
    for (id, lines) in by_id.iter().filter(|(_, lines)| lines.len() > 1) {
        let Some(partition) = evidence.logged.get(id).map(|entry| entry.partition) else {
            continue; // counted as unknown_handled
        };
        let in_faulted = faulted.contains(&partition);
        let hit = lines
            .iter()
            .any(|line| evidence.faults.children.contains(&line.child));
        *(if in_faulted {
            &mut redos.faulted
        } else {
            &mut redos.elsewhere
        }) += 1;
        redos.by_unhit += u64::from(!hit);
        if in_faulted && hit {
            continue;
        }
        let first = lines.first();
        let by_lock = first.zip(lock_until).is_some_and(|(first, until)| {
            first.at_ms < until && lost.contains(first.child.as_str())
        });
        *(if by_lock {
            &mut redos.by_frozen_lock
        } else {
            &mut redos.unexplained
        }) += 1;
        if redos.examples.len() < 10 {
            let children: Vec<&str> = lines.iter().map(|line| line.child.as_str()).collect();
            let why = if by_lock {
                "the frozen lock"
            } else {
                "unexplained"
            };
            redos.examples.push(format!(
                "{id} (p{partition}): {} ({why})",
                children.join(" ")
            ));
        }
    }
    redos
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
            "handled_twice_unexplained",
            "entries handled twice where no kill or freeze hit, or never by a child it hit, and no process frozen inside a write explains it",
        ),
    ];
    for (key, what) in zero {
        if figure(key) > 0 {
            broken.push(format!("{key}={}: {what}", figure(key)));
        }
    }
    // A process frozen inside a write stops every renew of the file: past the slack, every
    // child loses its leases (documented in checkpoint-sqlite). Nothing else may cost one.
    if figure("losses_unfaulted") > 0 && figure("frozen_in_write") == 0 {
        broken.push(format!(
            "losses_unfaulted={}: leases lost by children no step killed or froze",
            figure("losses_unfaulted")
        ));
    }
    if figure("entries") == 0 || figure("poison") == 0 {
        broken.push("the log has no entries, or no poison ones: nothing was tested".into());
    }
    if figure("children_exited") + figure("children_killed") != figure("children_started") {
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
            println!("   redone outside what a kill or a freeze hit: {redone}");
        }
        for violation in &self.violations {
            println!("   VIOLATION: {violation}");
        }
    }
}
