//! In process: what `dispatched` + `completed` cost, and what a held entry costs in memory.

use std::time::{Duration, Instant};

use checkpoint_committer::Committer;
use checkpoint_core::InMemoryCheckpointStore;
use tokio::task::JoinSet;

use super::{HANDLERS, HELD, NEVER, PARTITIONS, Plan, SUBSCRIPTION, TIMED_BATCH};
use crate::allocator;
use crate::measure::Samples;
use crate::report::{Row, Target};
use crate::stores::thousands;
use crate::subject::{BenchError, context};

/// The in-process rows and targets: the cost of `dispatched` + `completed`, and the bytes of a
/// held entry. Run them while nothing else runs (the memory count is process-wide).
pub async fn in_process(smoke: bool) -> Result<(Vec<Row>, Vec<Target>), BenchError> {
    let plan = Plan::new(smoke);
    let mut rows = Vec::new();
    let mut targets = Vec::new();

    eprintln!("checkpoint-bench: committer: cost per entry in process");
    // Untimed first: the runtime's threads, the committer's first allocations.
    cost_per_entry(false, plan.batches.min(20)).await?;
    for shuffled in [false, true] {
        let samples = cost_per_entry(shuffled, plan.batches).await?;
        rows.push(cost_row(shuffled, &samples));
        targets.push(cost_target(shuffled, &samples));
    }

    eprintln!("checkpoint-bench: committer: bytes per held entry");
    for partitions in [PARTITIONS, 1] {
        let bytes = bytes_per_held_entry(partitions).await?;
        let (row, target) = held_entry_figures(partitions, bytes);
        rows.push(row);
        targets.push(target);
    }
    Ok((rows, targets))
}

/// The row of the cost per entry, completed in order or `shuffled`.
fn cost_row(shuffled: bool, samples: &Samples) -> Row {
    let workload = if shuffled {
        format!(
            "`dispatched` × {TIMED_BATCH} then `completed` × {TIMED_BATCH} shuffled, \
             per entry, {HANDLERS} tasks (batches timed, ÷ {TIMED_BATCH})"
        )
    } else {
        format!(
            "`dispatched` + `completed` per entry, {HANDLERS} tasks (batches of \
             {TIMED_BATCH} pairs timed, ÷ {TIMED_BATCH})"
        )
    };
    let mut row = Row::new(
        "in process",
        workload,
        format!("{} batches", thousands(samples.len())),
    );
    row.p50 = Some(samples.p50());
    row.p99 = Some(samples.p99());
    row
}

/// The cost's target: 1 µs per entry completed in order; completed `shuffled`, reported
/// only.
fn cost_target(shuffled: bool, samples: &Samples) -> Target {
    let measured = format!(
        "p50 {} ns, p99 {} ns",
        samples.p50().as_nanos(),
        samples.p99().as_nanos()
    );
    if shuffled {
        Target {
            backend: "in process",
            target: format!(
                "committer: `dispatched` + `completed` completed out of order, \
                 {HANDLERS} tasks (reported)"
            ),
            measured,
            met: None,
        }
    } else {
        Target {
            backend: "in process",
            target: format!("committer: `dispatched` + `completed` p50 ≤ 1 µs at {HANDLERS} tasks"),
            measured,
            met: Some(samples.p50() <= Duration::from_micros(1)),
        }
    }
}

/// The row and the (reported) target of `bytes` per held entry over `partitions`.
fn held_entry_figures(partitions: u32, bytes: f64) -> (Row, Target) {
    let spread = if partitions == 1 {
        "in one partition".to_owned()
    } else {
        format!("over {partitions} partitions")
    };
    let row = Row::new(
        "in process",
        format!(
            "bytes per held entry: {bytes:.1} ({} dispatched, not completed, {spread}; \
             live bytes counted by the allocator)",
            thousands(HELD as usize)
        ),
        format!("{} entries", thousands(HELD as usize)),
    );
    let target = Target {
        backend: "in process",
        target: format!("committer: bytes per held entry, {spread} (reported)"),
        measured: format!("{bytes:.1} B"),
        met: None,
    };
    (row, target)
}

/// Per-entry costs of `dispatched` + `completed`, from batches of [`TIMED_BATCH`] timed
/// together, by [`HANDLERS`] tasks each on its own partition. In order: each entry completed
/// right after it is dispatched; shuffled: a batch dispatched, then completed in an order drawn
/// before the clock starts.
async fn cost_per_entry(shuffled: bool, batches: usize) -> Result<Samples, BenchError> {
    let committer = Committer::builder(InMemoryCheckpointStore::new(), "bench-in-process")
        .interval(NEVER)
        .max_backoff(NEVER)
        .start()?;
    let mut tasks = JoinSet::new();
    for task in 0..HANDLERS {
        let partition = committer.partition(SUBSCRIPTION, task, 0)?;
        tasks.spawn(async move {
            let mut rng = fastrand::Rng::with_seed(u64::from(task) + 100);
            let mut order: Vec<u64> = (0..u64::from(TIMED_BATCH)).collect();
            let mut samples = Vec::with_capacity(batches);
            let mut base = 0_u64;
            for _ in 0..batches {
                if shuffled {
                    rng.shuffle(&mut order);
                }
                let started = Instant::now();
                if shuffled {
                    for position in base..base + u64::from(TIMED_BATCH) {
                        partition.dispatched(position).await?;
                    }
                    for &offset in &order {
                        partition.completed(base + offset)?;
                    }
                } else {
                    for position in base..base + u64::from(TIMED_BATCH) {
                        partition.dispatched(position).await?;
                        partition.completed(position)?;
                    }
                }
                samples.push(started.elapsed() / TIMED_BATCH);
                base += u64::from(TIMED_BATCH);
                // Between batches, never inside one: the runtime's budget is fresh for each.
                tokio::task::yield_now().await;
            }
            Ok::<_, BenchError>(samples)
        });
    }
    let mut all = Vec::with_capacity(batches * HANDLERS as usize);
    while let Some(joined) = tasks.join_next().await {
        all.extend(joined.map_err(context("an in-process task"))??);
    }
    committer.shutdown().await?;
    Ok(Samples::from(all))
}

/// Live bytes per entry of [`HELD`] entries dispatched and not completed, spread over
/// `partitions`, counted by the global allocator from just before the first dispatch (the
/// committer and its partitions already exist) to just after the last.
async fn bytes_per_held_entry(partitions: u32) -> Result<f64, BenchError> {
    let committer = Committer::builder(InMemoryCheckpointStore::new(), "bench-memory")
        .interval(NEVER)
        .max_backoff(NEVER)
        .max_in_flight(HELD as usize)
        .start()?;
    let handles = (0..partitions)
        .map(|partition| committer.partition(SUBSCRIPTION, partition, 0))
        .collect::<Result<Vec<_>, _>>()?;
    let count = u64::from(partitions);
    let window = allocator::Window::open();
    // No await point suspends here (there is room for every entry), so nothing else of the
    // process runs in the window.
    for entry in 0..HELD {
        handles[(entry % count) as usize]
            .dispatched(entry / count)
            .await?;
    }
    let live = window.close();
    let held: usize = committer.stats().partitions.iter().map(|p| p.held).sum();
    if held != HELD as usize {
        return Err(format!("the committer holds {held} entries, not {HELD}").into());
    }
    committer.shutdown().await?;
    Ok(live as f64 / HELD as f64)
}
