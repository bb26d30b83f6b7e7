//! The checker: a recorded history against a linearizable max-register per key.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};

use checkpoint_core::Checkpoint;

use super::generator::{Call, KEYS, Key};

/// How a call returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A save or save_all succeeded.
    Saved,
    /// A load returned this.
    Loaded(Option<u64>),
    /// A list returned these (keys outside the key space are kept as `Err` to be reported).
    Listed(Vec<Result<(Key, u64), Checkpoint>>),
    /// The call failed.
    Failed(String),
}

/// One call of a history with its real-time interval on the logical clock.
#[derive(Debug, Clone)]
pub struct Event {
    /// Which owner made the call.
    pub owner: usize,
    /// Whether that owner is a zombie.
    pub zombie: bool,
    /// The call.
    pub call: Call,
    /// The logical time it started.
    pub start: u64,
    /// The logical time it returned.
    pub end: u64,
    /// How it returned.
    pub outcome: Outcome,
}

/// A recorded history: its events and the final state read after every call returned.
#[derive(Debug, Clone, Default)]
pub struct History {
    /// Every call, in the order they started.
    pub events: Vec<Event>,
}

impl fmt::Display for History {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut events: Vec<&Event> = self.events.iter().collect();
        events.sort_by_key(|e| e.start);
        for e in events {
            let who = format!(
                "owner {}{}",
                e.owner,
                if e.zombie { " (zombie)" } else { "" }
            );
            let call = match &e.call {
                Call::Save(k, p) => format!("save({k}, {p})"),
                Call::SaveAll(entries) => {
                    let mut text = String::from("save_all[");
                    for (i, (k, p)) in entries.iter().enumerate() {
                        let _ = write!(text, "{}{k}={p}", if i == 0 { "" } else { ", " });
                    }
                    text.push(']');
                    text
                }
                Call::Load(k) => format!("load({k})"),
                Call::List => "list()".to_owned(),
            };
            let outcome = match &e.outcome {
                Outcome::Saved => "ok".to_owned(),
                Outcome::Loaded(v) => format!("{v:?}"),
                Outcome::Listed(entries) => {
                    let mut text = String::from("{");
                    for (i, entry) in entries.iter().enumerate() {
                        let sep = if i == 0 { "" } else { ", " };
                        let _ = match entry {
                            Ok((k, p)) => write!(text, "{sep}{k}={p}"),
                            Err(c) => write!(
                                text,
                                "{sep}UNKNOWN {:?}/{}={}",
                                c.subscription, c.partition, c.position
                            ),
                        };
                    }
                    text.push('}');
                    text
                }
                Outcome::Failed(error) => format!("ERROR {error}"),
            };
            writeln!(
                f,
                "  [{:>4} .. {:>4}] {who:<18} {call} -> {outcome}",
                e.start, e.end
            )?;
        }
        Ok(())
    }
}

/// A write of one key within a history: a `save`, or one entry of a `save_all`.
#[derive(Debug, Clone, Copy)]
struct Write {
    position: u64,
    start: u64,
    end: u64,
    acknowledged: bool,
}

/// A read of one key: a `load`, or what a `list` said of the key (absent is `None`).
#[derive(Debug, Clone, Copy)]
struct Read {
    value: Option<u64>,
    start: u64,
    end: u64,
    event: usize,
}

/// Checks a history against a linearizable max-register per key.
///
/// For every key:
/// - every value read was written by a save that started before the read returned (so no
///   value is ever higher than the highest attempted, and no key appears that was never saved);
/// - a read is at least every save acknowledged before the read started;
/// - a read is never lower than a read that returned before it started (reads never go
///   backwards in real time);
/// - the final value, read after every call returned, is the highest acknowledged save (or a
///   higher one whose call failed, when failures are allowed).
#[derive(Debug, Clone, Default)]
pub struct HistoryChecker {
    /// Whether a failed call is allowed (fault-injection runs) rather than itself a violation.
    pub allow_failures: bool,
}

impl HistoryChecker {
    /// Checks `history` and the `final_state` read after it; the error lists every violation.
    pub fn check(&self, history: &History, final_state: &BTreeMap<Key, u64>) -> Result<(), String> {
        let mut violations = Vec::new();
        let (writes, reads) = self.calls_per_key(history, &mut violations);
        for k in (0..KEYS as u8).map(Key) {
            let writes = writes.get(&k).map(Vec::as_slice).unwrap_or_default();
            let reads = reads.get(&k).map(Vec::as_slice).unwrap_or_default();
            check_reads(k, writes, reads, &mut violations);
            check_reads_never_go_back(k, reads, &mut violations);
            check_final(k, writes, final_state.get(&k).copied(), &mut violations);
        }
        for (k, value) in final_state {
            if usize::from(k.0) >= KEYS {
                violations.push(format!("final state has unknown key {k:?} = {value}"));
            }
        }
        if violations.is_empty() {
            Ok(())
        } else {
            Err(violations.join("\n"))
        }
    }

    /// Every write and read of the history, per key; failed calls (when not allowed) and
    /// malformed lists go to `violations`.
    fn calls_per_key(
        &self,
        history: &History,
        violations: &mut Vec<String>,
    ) -> (BTreeMap<Key, Vec<Write>>, BTreeMap<Key, Vec<Read>>) {
        let mut writes: BTreeMap<Key, Vec<Write>> = BTreeMap::new();
        let mut reads: BTreeMap<Key, Vec<Read>> = BTreeMap::new();
        for (index, e) in history.events.iter().enumerate() {
            if let Outcome::Failed(error) = &e.outcome
                && !self.allow_failures
            {
                violations.push(format!("call #{index} failed: {error}"));
            }
            let acknowledged = e.outcome == Outcome::Saved;
            let mut write = |key: Key, position: u64| {
                writes.entry(key).or_default().push(Write {
                    position,
                    start: e.start,
                    end: e.end,
                    acknowledged,
                });
            };
            let read = |value: Option<u64>| Read {
                value,
                start: e.start,
                end: e.end,
                event: index,
            };
            match (&e.call, &e.outcome) {
                (Call::Save(k, p), _) => write(*k, *p),
                (Call::SaveAll(entries), _) => entries.iter().for_each(|(k, p)| write(*k, *p)),
                (Call::Load(k), Outcome::Loaded(value)) => {
                    reads.entry(*k).or_default().push(read(*value));
                }
                (Call::List, Outcome::Listed(entries)) => {
                    let seen = listed_keys(index, entries, violations);
                    for k in (0..KEYS as u8).map(Key) {
                        reads
                            .entry(k)
                            .or_default()
                            .push(read(seen.get(&k).copied()));
                    }
                }
                _ => {}
            }
        }
        (writes, reads)
    }
}

/// What a `list` (call #`index`) said of each key; a key listed twice or never saved in the
/// group goes to `violations`.
fn listed_keys(
    index: usize,
    entries: &[Result<(Key, u64), Checkpoint>],
    violations: &mut Vec<String>,
) -> BTreeMap<Key, u64> {
    let mut seen = BTreeMap::new();
    for entry in entries {
        match entry {
            Ok((k, p)) => {
                if seen.insert(*k, *p).is_some() {
                    violations.push(format!("call #{index}: list returned {k} twice"));
                }
            }
            Err(c) => violations.push(format!(
                "call #{index}: list returned a key never saved in this group: {:?}/{}",
                c.subscription, c.partition
            )),
        }
    }
    seen
}

/// Every read of `k` was written by a save that started before the read returned, and is at
/// least every save acknowledged before the read started.
fn check_reads(k: Key, writes: &[Write], reads: &[Read], violations: &mut Vec<String>) {
    for read in reads {
        if let Some(value) = read.value
            && !writes
                .iter()
                .any(|w| w.position == value && w.start < read.end)
        {
            let highest = writes
                .iter()
                .filter(|w| w.start < read.end)
                .map(|w| w.position)
                .max();
            violations.push(format!(
                "call #{}: read {k} = {value}, which no save started before it returned had written (highest attempted by then: {highest:?})",
                read.event
            ));
        }
        let floor = writes
            .iter()
            .filter(|w| w.acknowledged && w.end < read.start)
            .map(|w| w.position)
            .max();
        if floor.is_some() && read.value < floor {
            violations.push(format!(
                "call #{}: read {k} = {:?}, below {floor:?} which was acknowledged before the read started",
                read.event, read.value
            ));
        }
    }
}

/// Reads of `k` never go backwards in real time.
fn check_reads_never_go_back(k: Key, reads: &[Read], violations: &mut Vec<String>) {
    for earlier in reads {
        for later in reads.iter().filter(|later| earlier.end < later.start) {
            if later.value < earlier.value {
                violations.push(format!(
                    "call #{}: read {k} = {:?} after call #{} had already read {:?}: went backwards",
                    later.event, later.value, earlier.event, earlier.value
                ));
            }
        }
    }
}

/// The final value of `k` is the highest acknowledged save, or a higher one whose call failed.
fn check_final(k: Key, writes: &[Write], final_value: Option<u64>, violations: &mut Vec<String>) {
    let highest_acknowledged = writes
        .iter()
        .filter(|w| w.acknowledged)
        .map(|w| w.position)
        .max();
    let possible: BTreeSet<Option<u64>> = std::iter::once(highest_acknowledged)
        .chain(
            writes
                .iter()
                .filter(|w| !w.acknowledged && Some(w.position) > highest_acknowledged)
                .map(|w| Some(w.position)),
        )
        .collect();
    if !possible.contains(&final_value) {
        violations.push(format!(
            "final {k} = {final_value:?}, but the highest acknowledged save was {highest_acknowledged:?}"
        ));
    }
}
