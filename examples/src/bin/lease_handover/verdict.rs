//! The end of the run: every entry completed and none skipped, entries redone per kind of stop,
//! the zombie's acts, leases lost that no step caused, the stored checkpoints; printed, and
//! written as a summary for tests.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::completions::{Completion, Exit, Journal, Loss};
use crate::synthetic::{self, PARTITIONS};

/// A lease: worker, partition, epoch.
pub type Lease = (String, u32, u64);

/// How each lease that did not end in a graceful handover ended.
#[derive(Debug, Default)]
pub struct Stops {
    /// The leases the SIGKILLed worker held when it died.
    pub killed: BTreeSet<Lease>,
    /// The leases the SIGSTOPped worker held while it was frozen.
    pub frozen: BTreeSet<Lease>,
    /// The workers a fault touched (killed or frozen): their stats at exit count losses the
    /// fault caused.
    pub faulted: BTreeSet<String>,
    /// When the frozen worker was woken up (µs since the Unix epoch, taken before SIGCONT).
    pub woken_at: u128,
    /// When the scenario started (µs since the Unix epoch): losses are printed from it.
    pub started_at: u128,
}

/// What the completion log and the store say at the end.
#[derive(Debug, Default)]
pub struct Verdict {
    pub entries: usize,
    pub completions: usize,
    pub completed: usize,
    /// Entries of the log never completed.
    pub missing: Vec<(u32, u64)>,
    /// Completions of positions that are no entry of the log.
    pub outside: Vec<(u32, u64)>,
    pub redone_killed: usize,
    pub redone_frozen: usize,
    /// Redone after a lease was lost that neither the kill nor the freeze ended. Must be 0.
    pub redone_lost: usize,
    /// Redone after a graceful stop: the SIGTERMed worker's, every rebalance and the final
    /// shutdowns. Must be 0.
    pub redone_graceful: usize,
    /// Completions by the frozen worker, under a lease it held when frozen, after it was woken.
    pub zombie_acts: usize,
    /// Leases (partition, epoch) under which more than one worker completed entries.
    pub shared_epochs: Vec<(u32, u64)>,
    /// Leases lost (`Stop::Lost`, as the partition's task logged it) that neither the kill nor
    /// the freeze ended. Must be none.
    pub unfaulted_losses: Vec<Loss>,
    /// The stats of every worker that exited gracefully, in the order they exited.
    pub exits: Vec<Exit>,
    /// Of those, the workers no fault touched, with the losses they counted. Must be none.
    pub unfaulted_exit_losses: Vec<(String, u64)>,
    /// When the scenario started (µs since the Unix epoch).
    pub started_at: u128,
    /// Partitions whose stored checkpoint is not the end of their log: (partition, stored).
    pub checkpoints_off: Vec<(u32, Option<u64>)>,
    /// The stored checkpoints at the end, by partition.
    pub checkpoints: BTreeMap<u32, Option<u64>>,
}

/// Checks the completions of `journal` against the synthetic log, charges redone entries to
/// the stop that ended the lease of their first completion, finds the losses no step caused,
/// and compares the stored `checkpoints`.
pub fn judge(
    journal: &Journal,
    stops: &Stops,
    checkpoints: &BTreeMap<u32, Option<u64>>,
) -> Verdict {
    let mut verdict = Verdict {
        completions: journal.completions.len(),
        checkpoints: checkpoints.clone(),
        exits: journal.exits.clone(),
        started_at: stops.started_at,
        ..Verdict::default()
    };
    let faulted = |lease: &Lease| stops.killed.contains(lease) || stops.frozen.contains(lease);
    verdict.unfaulted_losses = journal
        .losses
        .iter()
        .filter(|loss| !faulted(&(loss.worker.clone(), loss.partition, loss.epoch)))
        .cloned()
        .collect();
    verdict.unfaulted_exit_losses = journal
        .exits
        .iter()
        .filter(|exit| exit.losses > 0 && !stops.faulted.contains(&exit.worker))
        .map(|exit| (exit.worker.clone(), exit.losses))
        .collect();
    let per_entry = verdict.check_completions(&journal.completions, stops);
    let lost: BTreeSet<Lease> = verdict
        .unfaulted_losses
        .iter()
        .map(|loss| (loss.worker.clone(), loss.partition, loss.epoch))
        .collect();
    for done in per_entry.values().filter(|done| done.len() > 1) {
        let first = done[0];
        let lease = (first.worker.clone(), first.partition, first.epoch);
        let redone = done.len() - 1;
        if stops.killed.contains(&lease) {
            verdict.redone_killed += redone;
        } else if stops.frozen.contains(&lease) {
            verdict.redone_frozen += redone;
        } else if lost.contains(&lease) {
            verdict.redone_lost += redone;
        } else {
            verdict.redone_graceful += redone;
        }
    }
    verdict.checkpoints_off = (0..PARTITIONS)
        .map(|p| (p, checkpoints.get(&p).copied().flatten()))
        .filter(|(p, stored)| *stored != Some(synthetic::end(*p)))
        .collect();
    verdict
}

/// Completions per entry of the log, each in the order they were appended (the first is the
/// one a redo is charged to).
type PerEntry<'a> = BTreeMap<(u32, u64), Vec<&'a Completion>>;

impl Verdict {
    /// Checks every completion against the log: positions outside it, entries never
    /// completed, the zombie's acts, leases shared by two workers.
    fn check_completions<'a>(
        &mut self,
        completions: &'a [Completion],
        stops: &Stops,
    ) -> PerEntry<'a> {
        let log: BTreeMap<u32, BTreeSet<u64>> = (0..PARTITIONS)
            .map(|p| (p, synthetic::entries(p).into_iter().collect()))
            .collect();
        self.entries = log.values().map(BTreeSet::len).sum();
        let mut per_entry = PerEntry::new();
        let mut workers_per_epoch: BTreeMap<(u32, u64), BTreeSet<&str>> = BTreeMap::new();
        for completion in completions {
            let key = (completion.partition, completion.position);
            if !log
                .get(&completion.partition)
                .is_some_and(|entries| entries.contains(&completion.position))
            {
                self.outside.push(key);
                continue;
            }
            per_entry.entry(key).or_default().push(completion);
            workers_per_epoch
                .entry((completion.partition, completion.epoch))
                .or_default()
                .insert(&completion.worker);
            let lease = (
                completion.worker.clone(),
                completion.partition,
                completion.epoch,
            );
            if stops.frozen.contains(&lease) && completion.unix_micros >= stops.woken_at {
                self.zombie_acts += 1;
            }
        }
        for (partition, entries) in &log {
            self.missing.extend(
                entries
                    .iter()
                    .filter(|&&p| !per_entry.contains_key(&(*partition, p)))
                    .map(|&p| (*partition, p)),
            );
        }
        self.completed = per_entry.len();
        self.shared_epochs = workers_per_epoch
            .into_iter()
            .filter(|(_, w)| w.len() > 1)
            .map(|(k, _)| k)
            .collect();
        per_entry
    }

    /// Seconds from the start of the scenario to `unix_micros`.
    fn since_start(&self, unix_micros: u128) -> f64 {
        unix_micros.saturating_sub(self.started_at) as f64 / 1e6
    }

    /// The losses no step caused, in words: who, which lease, when.
    fn describe_losses(&self) -> String {
        self.unfaulted_losses
            .iter()
            .map(|loss| {
                format!(
                    "{} p{} (epoch {}) at +{:.3} s",
                    loss.worker,
                    loss.partition,
                    loss.epoch,
                    self.since_start(loss.unix_micros)
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// A sum over the workers' stats at exit.
    fn exit_total(&self, count: fn(&Exit) -> u64) -> u64 {
        self.exits.iter().map(count).sum()
    }

    /// Every way the run broke a promise, in words; empty when it kept them all.
    pub fn violations(&self) -> Vec<String> {
        let mut found = Vec::new();
        if !self.missing.is_empty() {
            found.push(format!(
                "{} entries were never completed (skipped), first {:?}",
                self.missing.len(),
                &self.missing[..self.missing.len().min(5)]
            ));
        }
        if !self.outside.is_empty() {
            found.push(format!(
                "{} completions of positions outside the log, first {:?}",
                self.outside.len(),
                &self.outside[..self.outside.len().min(5)]
            ));
        }
        if self.redone_graceful > 0 {
            found.push(format!(
                "{} entries redone after a graceful handover (must be 0)",
                self.redone_graceful
            ));
        }
        if !self.unfaulted_losses.is_empty() {
            found.push(format!(
                "{} leases lost by workers no step killed or froze (must be 0; {} entries redone \
                 after them): {}",
                self.unfaulted_losses.len(),
                self.redone_lost,
                self.describe_losses()
            ));
        }
        if !self.unfaulted_exit_losses.is_empty() {
            found.push(format!(
                "workers no step killed or froze counted losses at exit (must be 0): {:?}",
                self.unfaulted_exit_losses
            ));
        }
        if self.zombie_acts > 0 {
            found.push(format!(
                "the frozen worker completed {} entries under its old leases after it was woken up",
                self.zombie_acts
            ));
        }
        if !self.shared_epochs.is_empty() {
            found.push(format!(
                "leases (partition, epoch) used by more than one worker: {:?}",
                self.shared_epochs
            ));
        }
        for (partition, stored) in &self.checkpoints_off {
            found.push(format!(
                "p{partition}'s stored checkpoint is {stored:?}, not the end of its log ({})",
                synthetic::end(*partition)
            ));
        }
        found
    }

    /// The verdict as the example prints it.
    pub fn print(&self) {
        println!(
            "   entries in the log:        {} ({PARTITIONS} partitions of {})",
            self.entries,
            synthetic::ENTRIES_PER_PARTITION
        );
        println!(
            "   completed at least once:   {} ({} completions); never completed: {}; outside the log: {}",
            self.completed,
            self.completions,
            self.missing.len(),
            self.outside.len()
        );
        println!("   redone, by the stop that ended the lease of their first completion:");
        println!(
            "     killed (SIGKILL)                          {:>5}",
            self.redone_killed
        );
        println!(
            "     frozen (SIGSTOP past its lease)            {:>5}",
            self.redone_frozen
        );
        println!(
            "     lost, with no kill or freeze behind it     {:>5}",
            self.redone_lost
        );
        println!(
            "     graceful (SIGTERM, rebalances, shutdowns)  {:>5}",
            self.redone_graceful
        );
        println!(
            "   leases lost that no step caused: {}{}",
            self.unfaulted_losses.len(),
            if self.unfaulted_losses.is_empty() {
                String::new()
            } else {
                format!(" ({})", self.describe_losses())
            }
        );
        println!("   the workers' stats as they exited gracefully:");
        for exit in &self.exits {
            println!(
                "     {:<9} lost {}, {} lease requests failed, {} final writes failed, {} drain \
                 timeouts, {} writes slowed",
                exit.worker,
                exit.losses,
                exit.lease_failures,
                exit.final_write_failures,
                exit.drain_timeouts,
                exit.slowed_writes
            );
        }
        println!(
            "   the zombie's acts under its old leases after waking: {}",
            self.zombie_acts
        );
        let stored: Vec<String> = self
            .checkpoints
            .iter()
            .map(|(p, stored)| match stored {
                Some(position) => format!("p{p}={position}"),
                None => format!("p{p}=none"),
            })
            .collect();
        println!("   stored checkpoints: {}", stored.join(" "));
        println!(
            "   of which at the end of their partition's log: {} of {PARTITIONS}",
            PARTITIONS as usize - self.checkpoints_off.len()
        );
    }

    /// The machine-readable summary: `key=value` lines.
    pub fn summary(&self, store: &str, seconds: f64) -> String {
        let mut out = String::new();
        let violations = self.violations();
        let unfaulted_at_exit: u64 = self.unfaulted_exit_losses.iter().map(|(_, n)| n).sum();
        let lines: [(&str, String); 23] = [
            ("store", store.to_owned()),
            ("partitions", PARTITIONS.to_string()),
            ("entries", self.entries.to_string()),
            ("completed", self.completed.to_string()),
            ("completions", self.completions.to_string()),
            ("missing", self.missing.len().to_string()),
            ("outside", self.outside.len().to_string()),
            ("redone_killed", self.redone_killed.to_string()),
            ("redone_frozen", self.redone_frozen.to_string()),
            ("redone_lost", self.redone_lost.to_string()),
            ("redone_graceful", self.redone_graceful.to_string()),
            ("zombie_acts", self.zombie_acts.to_string()),
            ("lost_unfaulted", self.unfaulted_losses.len().to_string()),
            ("lost_unfaulted_at_exit", unfaulted_at_exit.to_string()),
            ("workers_exited", self.exits.len().to_string()),
            (
                "lease_failures",
                self.exit_total(|e| e.lease_failures).to_string(),
            ),
            (
                "final_write_failures",
                self.exit_total(|e| e.final_write_failures).to_string(),
            ),
            (
                "drain_timeouts",
                self.exit_total(|e| e.drain_timeouts).to_string(),
            ),
            (
                "slowed_writes",
                self.exit_total(|e| e.slowed_writes).to_string(),
            ),
            (
                "checkpoints_at_end",
                (PARTITIONS as usize - self.checkpoints_off.len()).to_string(),
            ),
            ("seconds", format!("{seconds:.1}")),
            ("violations", violations.len().to_string()),
            ("lost_detail", self.describe_losses()),
        ];
        for (key, value) in lines {
            let _ = writeln!(out, "{key}={value}");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done(partition: u32, position: u64, worker: &str, epoch: u64, at: u128) -> Completion {
        Completion {
            partition,
            position,
            worker: worker.to_owned(),
            epoch,
            unix_micros: at,
        }
    }

    /// Every entry of the log completed once by `worker-9`, then `extra`.
    fn all_once_then(extra: Vec<Completion>) -> Vec<Completion> {
        let mut completions: Vec<Completion> = (0..PARTITIONS)
            .flat_map(|p| {
                synthetic::entries(p)
                    .into_iter()
                    .map(move |pos| done(p, pos, "worker-9", 1, 0))
            })
            .collect();
        completions.extend(extra);
        completions
    }

    fn journal(completions: Vec<Completion>) -> Journal {
        Journal {
            completions,
            ..Journal::default()
        }
    }

    fn lost(partition: u32, epoch: u64, worker: &str) -> Loss {
        Loss {
            partition,
            epoch,
            worker: worker.to_owned(),
            unix_micros: 2_500_000,
        }
    }

    fn exited(worker: &str, losses: u64) -> Exit {
        Exit {
            worker: worker.to_owned(),
            losses,
            ..Exit::default()
        }
    }

    fn at_the_end() -> BTreeMap<u32, Option<u64>> {
        (0..PARTITIONS)
            .map(|p| (p, Some(synthetic::end(p))))
            .collect()
    }

    #[test]
    fn a_redo_is_charged_to_the_stop_that_ended_the_first_completion_s_lease() {
        let first = synthetic::entries(0)[0];
        let mut completions = vec![done(0, first, "worker-1", 3, 0)];
        completions.extend(all_once_then(Vec::new()));
        let stops = Stops {
            killed: [("worker-1".to_owned(), 0, 3)].into(),
            ..Stops::default()
        };
        let verdict = judge(&journal(completions), &stops, &at_the_end());
        assert_eq!(
            (
                verdict.redone_killed,
                verdict.redone_frozen,
                verdict.redone_graceful
            ),
            (1, 0, 0)
        );
        assert!(
            verdict.violations().is_empty(),
            "{:?}",
            verdict.violations()
        );
    }

    #[test]
    fn skipped_entries_outside_positions_graceful_redos_and_zombie_acts_are_violations() {
        let entries = synthetic::entries(1);
        let outside = (0..).find(|p| !entries.contains(p)).unwrap_or_default();
        let mut completions = all_once_then(vec![
            done(1, outside, "worker-9", 1, 0),
            done(1, entries[5], "worker-9", 1, 0),
            done(2, synthetic::entries(2)[0], "worker-2", 4, 50),
        ]);
        completions.retain(|c| (c.partition, c.position) != (3, synthetic::entries(3)[7]));
        let stops = Stops {
            frozen: [("worker-2".to_owned(), 2, 4)].into(),
            woken_at: 50,
            ..Stops::default()
        };
        let verdict = judge(&journal(completions), &stops, &at_the_end());
        assert_eq!(verdict.outside.len(), 1);
        assert_eq!(verdict.missing, vec![(3, synthetic::entries(3)[7])]);
        assert_eq!(verdict.redone_graceful, 2); // entry 5 of p1, and p2's first entry
        assert_eq!(verdict.zombie_acts, 1);
        assert_eq!(verdict.shared_epochs, Vec::new());
        assert_eq!(verdict.violations().len(), 4, "{:?}", verdict.violations());
    }

    #[test]
    fn a_loss_no_step_caused_is_a_violation_and_its_redos_are_charged_to_it() {
        let first = synthetic::entries(0)[0];
        let mut completions = vec![done(0, first, "worker-4", 2, 0)];
        completions.extend(all_once_then(Vec::new()));
        let mut journal = journal(completions);
        // worker-2's loss of a lease it held frozen is the freeze's; worker-4's is no step's.
        journal.losses = vec![lost(1, 1, "worker-2"), lost(0, 2, "worker-4")];
        journal.exits = vec![exited("worker-2", 1), exited("worker-4", 1)];
        let stops = Stops {
            frozen: [("worker-2".to_owned(), 1, 1)].into(),
            faulted: ["worker-2".to_owned()].into(),
            started_at: 1_000_000,
            ..Stops::default()
        };
        let verdict = judge(&journal, &stops, &at_the_end());
        assert_eq!((verdict.redone_lost, verdict.redone_graceful), (1, 0));
        assert_eq!(verdict.unfaulted_losses, vec![lost(0, 2, "worker-4")]);
        assert_eq!(
            verdict.unfaulted_exit_losses,
            vec![("worker-4".to_owned(), 1)]
        );
        assert_eq!(
            verdict.describe_losses(),
            "worker-4 p0 (epoch 2) at +1.500 s"
        );
        assert_eq!(verdict.violations().len(), 2, "{:?}", verdict.violations());
    }
}
