//! The committer (`checkpoint-committer`) between handlers and a store: what it gains end to
//! end over one `save` per entry, what it costs per entry in process, and what a held entry
//! costs in memory.
//!
//! - End to end (PostgreSQL, Redis, SQLite): 16 handler tasks over 64 partitions of one
//!   subscription, each handler owning 4 partitions. With the committer, a handler dispatches
//!   a batch of entries of its partitions and completes them in shuffled order; the entries
//!   count once the committer has written them. Against it, the same handlers complete each
//!   partition's entries in order and save the checkpoint after every entry (entry + 1), which
//!   is gap-free because each partition has one handler. A handler's work is nothing, so the
//!   figure is the cost of checkpointing. Every write is a durable commit in both.
//! - In process: `dispatched` + `completed` on `InMemoryCheckpointStore` with a flush interval
//!   that never comes, 16 tasks on the multi-thread runtime, each on its own partition.
//! - Memory: the live bytes (a counting global allocator) of 100,000 entries dispatched and not
//!   completed, over 64 partitions and in one.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use checkpoint_committer::{Committer, Partition};
use checkpoint_core::{CheckpointStore, InMemoryCheckpointStore};
use tokio::task::JoinSet;

use crate::allocator;
use crate::measure::Samples;
use crate::report::{Row, Target};
use crate::stores::thousands;
use crate::subject::{BenchError, context};

/// Handler tasks of the end-to-end workload.
const HANDLERS: u32 = 16;
/// Partitions of the one subscription; each handler owns `PARTITIONS / HANDLERS` of them.
const PARTITIONS: u32 = 64;
const SUBSCRIPTION: &str = "committer";
/// The committer's interval in the end-to-end workload.
const INTERVAL: Duration = Duration::from_millis(100);
/// Entries a handler dispatches on each of its partitions before it completes the batch.
const BATCH_PER_PARTITION: u64 = 64;
/// Pairs of `dispatched` + `completed` timed together in process: one `Instant::now` costs
/// tens of nanoseconds, as much as what is measured, so a batch is timed and divided.
const TIMED_BATCH: u32 = 64;
/// Entries held for the memory figure.
const HELD: u64 = 100_000;
/// A flush interval (and backoff) that never comes during an in-process measurement.
const NEVER: Duration = Duration::from_secs(3_600);
/// How long the written positions may take to reach the gap-free ones before the run fails.
const WRITE_TIMEOUT: Duration = Duration::from_secs(60);

/// How much of the committer workloads to run.
#[derive(Debug, Clone, Copy)]
struct Plan {
    /// Interleaved rounds of (committer, one save per entry).
    rounds: usize,
    /// How long the handlers run in each round.
    slice: Duration,
    /// An untimed round of each first (connections, prepared statements, scripts).
    warm_up: bool,
    /// Timed batches per task in process.
    batches: usize,
}

impl Plan {
    fn new(smoke: bool) -> Self {
        if smoke {
            Self {
                rounds: 1,
                slice: Duration::from_millis(200),
                warm_up: false,
                batches: 20,
            }
        } else {
            Self {
                rounds: 3,
                slice: Duration::from_secs(2),
                warm_up: true,
                batches: 2_000,
            }
        }
    }
}

/// A group of its own for every round.
fn group(what: &str) -> Arc<str> {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    format!("bench-{}-{nanos}-{what}", std::process::id()).into()
}

/// A tiny xorshift generator: enough to shuffle completions, no dependency.
struct XorShift(u64);

impl XorShift {
    fn new(seed: u64) -> Self {
        // Any odd seed is a valid (non-zero) state.
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// Fisher–Yates.
    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            items.swap(i, j);
        }
    }
}

/// The partitions handler `handler` owns.
fn owned(handler: u32) -> impl Iterator<Item = u32> {
    (handler..PARTITIONS).step_by(HANDLERS as usize)
}

/// Entries done and the time they took, summed over rounds.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    entries: u64,
    took: Duration,
    writes: u64,
}

impl Tally {
    fn add(&mut self, other: Tally) {
        self.entries += other.entries;
        self.took += other.took;
        self.writes += other.writes;
    }

    fn per_sec(self) -> f64 {
        self.entries as f64 / self.took.as_secs_f64()
    }
}

/// The end-to-end rows and target of one backend: committer against one save per entry.
pub async fn end_to_end(
    backend: &'static str,
    store: &Arc<dyn CheckpointStore>,
    smoke: bool,
) -> Result<(Vec<Row>, Vec<Target>), BenchError> {
    let plan = Plan::new(smoke);
    if plan.warm_up {
        let slice = Duration::from_millis(300);
        with_committer(store, slice).await?;
        per_entry(store, slice).await?;
    }
    let mut committed = Tally::default();
    let mut saved = Tally::default();
    for round in 0..plan.rounds {
        eprintln!(
            "checkpoint-bench: {backend}: committer end to end, round {}",
            round + 1
        );
        committed.add(with_committer(store, plan.slice).await?);
        saved.add(per_entry(store, plan.slice).await?);
    }
    let (with, without) = (committed.per_sec(), saved.per_sec());
    let ratio = with / without;
    let mut rows = Vec::new();
    let mut row = Row::new(
        backend,
        format!(
            "**committer**, {} ms interval: {HANDLERS} handlers × {PARTITIONS} partitions, \
             completions shuffled, entries/s once written",
            INTERVAL.as_millis()
        ),
        format!(
            "{} entries, {} writes",
            thousands(committed.entries as usize),
            thousands(committed.writes as usize)
        ),
    );
    row.ops_per_sec = Some(with);
    rows.push(row);
    let mut row = Row::new(
        backend,
        format!("one `save` per entry: the same {HANDLERS} handlers, each partition in order"),
        format!("{} entries", thousands(saved.entries as usize)),
    );
    row.ops_per_sec = Some(without);
    rows.push(row);
    let goal = if backend == "redis" { 10.0 } else { 50.0 };
    let target = Target {
        backend,
        target: format!(
            "committer entries/s ≥ {goal:.0}× one save per entry ({HANDLERS} handlers, \
             {PARTITIONS} partitions)"
        ),
        measured: format!("{ratio:.0}× ({with:.0} vs {without:.0} entries/s)"),
        met: Some(ratio >= goal),
    };
    Ok((rows, vec![target]))
}

/// One round with the committer: entries completed out of order, counted once written.
async fn with_committer(
    store: &Arc<dyn CheckpointStore>,
    slice: Duration,
) -> Result<Tally, BenchError> {
    let group = group("committer");
    let committer = Committer::builder(Arc::clone(store), &*group)
        .interval(INTERVAL)
        .max_in_flight(HELD as usize)
        .start()?;
    let partitions = (0..PARTITIONS)
        .map(|partition| committer.partition(SUBSCRIPTION, partition, 0))
        .collect::<Result<Vec<_>, _>>()?;
    let started = Instant::now();
    let deadline = started + slice;
    let mut handlers = JoinSet::new();
    for handler in 0..HANDLERS {
        let mine: Vec<Partition> = owned(handler)
            .map(|partition| partitions[partition as usize].clone())
            .collect();
        handlers.spawn(complete_shuffled(
            mine,
            deadline,
            XorShift::new(u64::from(handler) + 1),
        ));
    }
    let (entries, ends) = join(handlers).await?;
    // Counted once written: wait for the periodic flush to write every partition up to the
    // end of what was dispatched (all of it is completed by now).
    loop {
        let stats = committer.stats();
        let written = stats
            .partitions
            .iter()
            .all(|p| p.committed == ends[p.partition as usize]);
        if written {
            break;
        }
        if started.elapsed() > slice + WRITE_TIMEOUT {
            return Err(format!(
                "the committer did not write the gap-free positions within {WRITE_TIMEOUT:?}"
            )
            .into());
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let took = started.elapsed();
    let writes = committer.stats().writes;
    committer.shutdown().await?;
    check_stored(store, &group, &ends).await?;
    Ok(Tally {
        entries,
        took,
        writes,
    })
}

/// A handler with the committer: dispatches a batch of each of its partitions, then completes
/// the whole batch in shuffled order, until the deadline. Returns the entries completed and,
/// per partition, the position after the last one.
async fn complete_shuffled(
    partitions: Vec<Partition>,
    deadline: Instant,
    mut rng: XorShift,
) -> Result<(u64, Vec<(u32, u64)>), BenchError> {
    let mut next = vec![0_u64; partitions.len()];
    let mut batch = Vec::with_capacity(partitions.len() * BATCH_PER_PARTITION as usize);
    let mut done = 0_u64;
    while Instant::now() < deadline {
        batch.clear();
        for (index, partition) in partitions.iter().enumerate() {
            for _ in 0..BATCH_PER_PARTITION {
                partition.dispatched(next[index]).await?;
                batch.push((index, next[index]));
                next[index] += 1;
            }
        }
        rng.shuffle(&mut batch);
        for &(index, position) in &batch {
            partitions[index].completed(position)?;
        }
        done += batch.len() as u64;
        // A real reader waits for the log here; let the other handlers and the flush run.
        tokio::task::yield_now().await;
    }
    Ok((
        done,
        partitions
            .iter()
            .map(Partition::partition)
            .zip(next)
            .collect(),
    ))
}

/// One round of one `save` per entry, each partition's entries in order.
async fn per_entry(store: &Arc<dyn CheckpointStore>, slice: Duration) -> Result<Tally, BenchError> {
    let group = group("per-entry");
    let started = Instant::now();
    let deadline = started + slice;
    let mut handlers = JoinSet::new();
    for handler in 0..HANDLERS {
        let (store, group) = (Arc::clone(store), Arc::clone(&group));
        handlers.spawn(async move {
            let mine: Vec<u32> = owned(handler).collect();
            let mut next = vec![0_u64; mine.len()];
            let mut done = 0_u64;
            while Instant::now() < deadline {
                for (index, &partition) in mine.iter().enumerate() {
                    // The entry's work is nothing; then its checkpoint: the next entry.
                    store
                        .save(&group, SUBSCRIPTION, partition, next[index] + 1)
                        .await?;
                    next[index] += 1;
                    done += 1;
                }
            }
            Ok::<_, BenchError>((done, mine.into_iter().zip(next).collect()))
        });
    }
    let (entries, ends) = join(handlers).await?;
    let took = started.elapsed();
    check_stored(store, &group, &ends).await?;
    Ok(Tally {
        entries,
        took,
        writes: entries,
    })
}

type HandlerResult = Result<(u64, Vec<(u32, u64)>), BenchError>;

/// Waits for every handler: entries done in all, and the end position of every partition.
async fn join(mut handlers: JoinSet<HandlerResult>) -> Result<(u64, Vec<u64>), BenchError> {
    let mut entries = 0;
    let mut ends = vec![0_u64; PARTITIONS as usize];
    while let Some(joined) = handlers.join_next().await {
        let (done, partitions) = joined.map_err(context("a handler task"))??;
        entries += done;
        for (partition, end) in partitions {
            ends[partition as usize] = end;
        }
    }
    Ok((entries, ends))
}

/// Every partition's stored checkpoint is the position after its last entry: nothing skipped,
/// nothing left unwritten.
async fn check_stored(
    store: &Arc<dyn CheckpointStore>,
    group: &str,
    ends: &[u64],
) -> Result<(), BenchError> {
    let stored = store.list(group).await.map_err(context("list"))?;
    let mut found = vec![None; ends.len()];
    for checkpoint in stored {
        found[checkpoint.partition as usize] = Some(checkpoint.position);
    }
    for (partition, (&end, found)) in ends.iter().zip(found).enumerate() {
        if found != Some(end) {
            return Err(format!(
                "partition {partition}: stored {found:?}, expected {end} (the position after \
                 its last entry)"
            )
            .into());
        }
    }
    Ok(())
}

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
        rows.push(row);
        let measured = format!(
            "p50 {} ns, p99 {} ns",
            samples.p50().as_nanos(),
            samples.p99().as_nanos()
        );
        targets.push(if shuffled {
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
                target: format!(
                    "committer: `dispatched` + `completed` p50 ≤ 1 µs at {HANDLERS} tasks"
                ),
                measured,
                met: Some(samples.p50() <= Duration::from_micros(1)),
            }
        });
    }

    eprintln!("checkpoint-bench: committer: bytes per held entry");
    for partitions in [PARTITIONS, 1] {
        let bytes = bytes_per_held_entry(partitions).await?;
        let spread = if partitions == 1 {
            "in one partition".to_owned()
        } else {
            format!("over {partitions} partitions")
        };
        rows.push(Row::new(
            "in process",
            format!(
                "bytes per held entry: {bytes:.1} ({} dispatched, not completed, {spread}; \
                 live bytes counted by the allocator)",
                thousands(HELD as usize)
            ),
            format!("{} entries", thousands(HELD as usize)),
        ));
        targets.push(Target {
            backend: "in process",
            target: format!("committer: bytes per held entry, {spread} (reported)"),
            measured: format!("{bytes:.1} B"),
            met: None,
        });
    }
    Ok((rows, targets))
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
            let mut rng = XorShift::new(u64::from(task) + 100);
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
