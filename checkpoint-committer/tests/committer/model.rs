//! The committer against a model: random sparse logs, random completion orders, skips, store
//! failures, slow writes, releases and tick timings, on tokio's paused clock.
//!
//! At every write the recorder checks that no written position is ahead of the model's
//! gap-free position at that moment and that no written position goes back. At the end, the
//! stored positions (plus what a failed shutdown handed back) equal the model's, and the
//! number of `save_all` calls is at most the ticks that fit in the elapsed time, plus one per
//! release, plus one for shutdown.
//!
//! `CHECKPOINT_COMMITTER_CASES` sets the number of cases (default 512), `CHECKPOINT_SEED`
//! replays a failing run.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use checkpoint_committer::{Committer, CommitterError, Partition};
use checkpoint_core::CheckpointStore;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

use crate::recording::{Fault, RecordingStore, Truth, recording_store};

const GROUP: &str = "model";
const SUBSCRIPTION: &str = "orders";

/// One entry of a partition's log: how far after the previous one it is, and whether the
/// subscription filters it out.
#[derive(Debug, Clone, Copy)]
struct LogEntry {
    gap: u64,
    skipped: bool,
}

#[derive(Debug, Clone)]
enum Step {
    /// Dispatch (or skip) the next entry of a partition.
    Next(usize),
    /// Complete one of the partition's running entries (or a zombie's, after a release).
    Complete(usize, usize),
    /// Let time pass.
    Wait(u64),
    /// Release the partition, then take it again from what the store holds.
    Release(usize),
    /// Calls the committer must refuse, changing nothing.
    Refused(usize),
}

#[derive(Debug, Clone)]
struct Plan {
    interval_ms: u64,
    max_in_flight: usize,
    logs: Vec<(u64, Vec<LogEntry>)>,
    steps: Vec<Step>,
    faults: Vec<Fault>,
    delays_ms: Vec<u64>,
    complete_all_at_end: bool,
}

fn plans() -> impl Strategy<Value = Plan> {
    let entry =
        (1u64..4, prop::bool::weighted(0.2)).prop_map(|(gap, skipped)| LogEntry { gap, skipped });
    let log = (0u64..1_000, prop::collection::vec(entry, 0..40));
    let step = prop_oneof![
        6 => (0usize..4).prop_map(Step::Next),
        6 => (0usize..4, any::<usize>()).prop_map(|(p, i)| Step::Complete(p, i)),
        2 => (1u64..400).prop_map(Step::Wait),
        1 => (0usize..4).prop_map(Step::Release),
        1 => (0usize..4).prop_map(Step::Refused),
    ];
    let fault = prop_oneof![
        3 => Just(Fault::None),
        1 => any::<bool>().prop_map(|retryable| Fault::Before { retryable }),
        1 => Just(Fault::After),
    ];
    (
        10u64..200,
        1usize..24,
        prop::collection::vec(log, 1..=4),
        prop::collection::vec(step, 0..200),
        prop::collection::vec(fault, 0..12),
        prop::collection::vec(0u64..150, 0..4),
        any::<bool>(),
    )
        .prop_map(
            |(interval_ms, max_in_flight, logs, steps, faults, delays_ms, complete_all_at_end)| {
                Plan {
                    interval_ms,
                    max_in_flight,
                    logs,
                    steps,
                    faults,
                    delays_ms,
                    complete_all_at_end,
                }
            },
        )
}

/// The model of one partition, written as plainly as possible: a set of running positions.
struct PartitionModel {
    /// The log: absolute positions and whether each is filtered out.
    log: Vec<(u64, bool)>,
    cursor: usize,
    /// The lowest position the next dispatch or skip may take.
    next: u64,
    running: BTreeSet<u64>,
    handle: Partition,
    /// Entries an earlier owner dispatched and never completed, with that owner's handle.
    zombies: Vec<(Partition, u64)>,
}

impl PartitionModel {
    fn gap_free(&self) -> u64 {
        self.running.first().copied().unwrap_or(self.next)
    }

    /// Entries held: running ones and completed ones behind the oldest running one.
    fn held(&self) -> usize {
        let Some(&oldest) = self.running.first() else {
            return 0;
        };
        self.log[..self.cursor]
            .iter()
            .filter(|(position, skipped)| !skipped && *position >= oldest)
            .count()
    }
}

struct Run {
    committer: Committer,
    store: Arc<RecordingStore>,
    truth: Truth,
    partitions: Vec<PartitionModel>,
    releases: usize,
    max_in_flight: usize,
}

impl Run {
    fn publish(&self, index: usize) {
        let model = &self.partitions[index];
        self.truth
            .lock()
            .unwrap()
            .insert((SUBSCRIPTION.to_owned(), index as u32), model.gap_free());
    }

    fn held(&self) -> usize {
        self.partitions.iter().map(PartitionModel::held).sum()
    }

    async fn step(&mut self, step: &Step) -> Result<(), String> {
        match *step {
            Step::Next(p) => {
                let Some(index) = self.index(p) else {
                    return Ok(());
                };
                let model = &mut self.partitions[index];
                let Some(&(position, skipped)) = model.log.get(model.cursor) else {
                    return Ok(());
                };
                if skipped {
                    model
                        .handle
                        .skipped(position)
                        .map_err(|e| format!("skip {position}: {e}"))?;
                    model.cursor += 1;
                    model.next = position + 1;
                    self.publish(index);
                    return Ok(());
                }
                let full = self.held() >= self.max_in_flight;
                let model = &mut self.partitions[index];
                let dispatched = tokio::time::timeout(
                    Duration::from_millis(1),
                    model.handle.dispatched(position),
                )
                .await;
                match (full, dispatched) {
                    (false, Ok(Ok(()))) => {
                        model.cursor += 1;
                        model.next = position + 1;
                        model.running.insert(position);
                        self.publish(index);
                        Ok(())
                    }
                    // Backpressure: a full committer makes `dispatched` wait; the cancelled
                    // wait records nothing.
                    (true, Err(_elapsed)) => Ok(()),
                    (full, outcome) => Err(format!(
                        "dispatch {position} with the committer {}: {outcome:?}",
                        if full { "full" } else { "not full" }
                    )),
                }
            }
            Step::Complete(p, pick) => {
                let Some(index) = self.index(p) else {
                    return Ok(());
                };
                let model = &mut self.partitions[index];
                let choices = model.running.len() + model.zombies.len();
                if choices == 0 {
                    return Ok(());
                }
                let pick = pick % choices;
                if pick < model.running.len() {
                    let position = *model.running.iter().nth(pick).unwrap();
                    // The model first, so the truth is never behind the committer.
                    model.running.remove(&position);
                    self.publish(index);
                    self.partitions[index]
                        .handle
                        .completed(position)
                        .map_err(|e| format!("complete {position}: {e}"))
                } else {
                    let (zombie, position) = model.zombies.swap_remove(pick - model.running.len());
                    match zombie.completed(position) {
                        Err(CommitterError::NotHeld { .. }) => Ok(()),
                        other => Err(format!(
                            "a released partition's completion of {position} was not refused: {other:?}"
                        )),
                    }
                }
            }
            Step::Wait(ms) => {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(())
            }
            Step::Release(p) => {
                let Some(index) = self.index(p) else {
                    return Ok(());
                };
                let partition = index as u32;
                // A failed release write is fine: the next owner redoes more.
                match self.committer.release(SUBSCRIPTION, partition).await {
                    Ok(()) | Err(CommitterError::Flush { .. }) => {}
                    Err(other) => return Err(format!("release {partition}: {other}")),
                }
                self.releases += 1;
                let stored = self
                    .store
                    .load(GROUP, SUBSCRIPTION, partition)
                    .await
                    .map_err(|e| e.to_string())?
                    .unwrap_or(0);
                self.store
                    .around()
                    .acknowledge(SUBSCRIPTION, partition, stored);
                let handle = self
                    .committer
                    .partition(SUBSCRIPTION, partition, stored)
                    .map_err(|e| format!("take {partition} again: {e}"))?;
                let model = &mut self.partitions[index];
                let old = std::mem::replace(&mut model.handle, handle);
                model.zombies.extend(
                    model
                        .running
                        .iter()
                        .map(|&position| (old.clone(), position)),
                );
                model.running.clear();
                model.cursor = model
                    .log
                    .partition_point(|(position, _)| *position < stored);
                model.next = stored;
                self.publish(index);
                Ok(())
            }
            Step::Refused(p) => {
                let Some(index) = self.index(p) else {
                    return Ok(());
                };
                let model = &self.partitions[index];
                let before = model.handle.stats();
                if model.next > 0 {
                    match model.handle.dispatched(model.next - 1).await {
                        Err(CommitterError::NotAhead { .. }) => {}
                        other => return Err(format!("a dispatch behind the last one: {other:?}")),
                    }
                }
                let not_running = (0..).find(|p| !model.running.contains(p)).unwrap();
                match model.handle.completed(not_running) {
                    Err(CommitterError::NotInFlight { .. }) => {}
                    other => {
                        return Err(format!(
                            "a completion of {not_running}, not running: {other:?}"
                        ));
                    }
                }
                let after = model.handle.stats();
                if (before.gap_free, before.in_flight, before.held)
                    != (after.gap_free, after.in_flight, after.held)
                {
                    return Err(format!(
                        "refused calls changed the partition: {before:?} → {after:?}"
                    ));
                }
                Ok(())
            }
        }
    }

    fn index(&self, p: usize) -> Option<usize> {
        (p < self.partitions.len()).then_some(p)
    }
}

async fn run_plan(plan: &Plan) -> Result<(), String> {
    let truth: Truth = Arc::new(Mutex::new(HashMap::new()));
    let delays = plan
        .delays_ms
        .iter()
        .map(|&ms| Duration::from_millis(ms))
        .collect();
    let store = Arc::new(recording_store(
        Arc::clone(&truth),
        plan.faults.clone(),
        delays,
    ));
    let interval = Duration::from_millis(plan.interval_ms);
    let started = tokio::time::Instant::now();
    let committer = Committer::builder(Arc::clone(&store), GROUP)
        .interval(interval)
        .max_in_flight(plan.max_in_flight)
        .max_backoff(interval * 8)
        .start()
        .map_err(|e| e.to_string())?;
    let mut partitions = Vec::new();
    for (index, (resume_at, entries)) in plan.logs.iter().enumerate() {
        // The partition resumes where the store stands, as a real one does.
        store
            .inner()
            .save(GROUP, SUBSCRIPTION, index as u32, *resume_at)
            .await
            .map_err(|e| e.to_string())?;
        store
            .around()
            .acknowledge(SUBSCRIPTION, index as u32, *resume_at);
        let mut position = *resume_at;
        let log = entries
            .iter()
            .map(|entry| {
                position += entry.gap;
                (position - 1, entry.skipped)
            })
            .collect();
        let handle = committer
            .partition(SUBSCRIPTION, index as u32, *resume_at)
            .map_err(|e| e.to_string())?;
        partitions.push(PartitionModel {
            log,
            cursor: 0,
            next: *resume_at,
            running: BTreeSet::new(),
            handle,
            zombies: Vec::new(),
        });
    }
    let mut run = Run {
        committer: committer.clone(),
        store: Arc::clone(&store),
        truth,
        partitions,
        releases: 0,
        max_in_flight: plan.max_in_flight,
    };
    for index in 0..run.partitions.len() {
        run.publish(index);
    }
    for (n, step) in plan.steps.iter().enumerate() {
        run.step(step)
            .await
            .map_err(|e| format!("step {n} ({step:?}): {e}"))?;
    }
    if plan.complete_all_at_end {
        for index in 0..run.partitions.len() {
            while !run.partitions[index].running.is_empty() {
                run.step(&Step::Complete(index, 0)).await?;
            }
        }
    }
    let elapsed = started.elapsed();
    let shutdown = committer.shutdown().await;
    let mut handed_back = HashMap::new();
    match shutdown {
        Ok(()) => {}
        Err(CommitterError::Flush { unwritten, .. }) => {
            for checkpoint in unwritten {
                handed_back.insert(checkpoint.partition, checkpoint.position);
            }
        }
        Err(other) => return Err(format!("shutdown: {other}")),
    }
    let mut problems = store.around().violations();
    for (index, model) in run.partitions.iter().enumerate() {
        let stored = store
            .inner()
            .load(GROUP, SUBSCRIPTION, index as u32)
            .await
            .map_err(|e| e.to_string())?
            .unwrap_or(0);
        let ended = stored.max(handed_back.get(&(index as u32)).copied().unwrap_or(0));
        if ended != model.gap_free() {
            problems.push(format!(
                "partition {index}: stored {stored}, handed back {:?}, but the gap-free position is {}",
                handed_back.get(&(index as u32)),
                model.gap_free()
            ));
        }
    }
    let ticks = (elapsed.as_nanos() / interval.as_nanos()) as usize;
    let bound = ticks + run.releases + 1;
    if store.around().calls() > bound {
        problems.push(format!(
            "{} save_all calls in {elapsed:?} at {interval:?} with {} releases: more than {bound}",
            store.around().calls(),
            run.releases
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

fn cases() -> u32 {
    std::env::var("CHECKPOINT_COMMITTER_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(512)
}

fn seed() -> u64 {
    std::env::var("CHECKPOINT_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..))
}

fn run_case(plan: &Plan) -> Result<(), String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .map_err(|e| e.to_string())?
        .block_on(run_plan(plan))
}

#[test]
fn committer_matches_the_model() {
    let (cases, seed) = (cases(), seed());
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let mut runner = TestRunner::new_with_rng(
        Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        },
        TestRng::from_seed(RngAlgorithm::ChaCha, &bytes),
    );
    let strategy = plans();
    let mut writes = 0usize;
    for case in 0..cases {
        let mut tree = strategy.new_tree(&mut runner).unwrap();
        let Err(mut why) = run_case(&tree.current()) else {
            writes += tree.current().steps.len();
            continue;
        };
        // Shrink to a smaller failing plan, within a bounded number of re-runs.
        for _ in 0..256 {
            if !tree.simplify() {
                break;
            }
            match run_case(&tree.current()) {
                Err(smaller) => why = smaller,
                Ok(()) => {
                    if !tree.complicate() {
                        break;
                    }
                }
            }
        }
        panic!(
            "case {case} of {cases} (CHECKPOINT_SEED={seed}) breaks the committer's promises:\n{why}\nplan: {:#?}",
            tree.current()
        );
    }
    eprintln!("committer model: {cases} cases, {writes} steps, seed {seed}");
}
