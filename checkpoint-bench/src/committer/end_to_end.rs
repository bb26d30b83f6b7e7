//! End to end: the committer against one `save` per entry, on a real store.

use std::sync::Arc;
use std::time::{Duration, Instant};

use checkpoint_committer::{Committer, Partition};
use checkpoint_core::CheckpointStore;
use tokio::task::JoinSet;

use super::{
    BATCH_PER_PARTITION, HANDLERS, HELD, INTERVAL, PARTITIONS, Plan, SUBSCRIPTION, Tally,
    WRITE_TIMEOUT, group, owned,
};
use crate::report::{Row, Target};
use crate::stores::thousands;
use crate::subject::{BenchError, context};

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
pub(crate) async fn with_committer(
    store: &Arc<dyn CheckpointStore>,
    slice: Duration,
) -> Result<Tally, BenchError> {
    let group = group("committer");
    let committer = start_committer(store, &group)?;
    let partitions = (0..PARTITIONS)
        .map(|partition| committer.partition(SUBSCRIPTION, partition, 0))
        .collect::<Result<Vec<_>, _>>()?;
    let (tally, ends) = drive(&committer, &partitions, slice).await?;
    committer.shutdown().await?;
    check_stored(store, &group, &ends).await?;
    Ok(tally)
}

/// The committer of one round, as the end-to-end rows configure it (the workers' row hands
/// the same one to a worker).
pub(crate) fn start_committer(
    store: &Arc<dyn CheckpointStore>,
    group: &str,
) -> Result<Committer, BenchError> {
    Ok(Committer::builder(Arc::clone(store), group)
        .interval(INTERVAL)
        .max_in_flight(HELD as usize)
        .start()?)
}

/// The handlers of one round over `partitions` (the committer's handles of partitions
/// `0..PARTITIONS`, in order), until `slice` has passed and the committer has written
/// everything they completed. Returns the tally and each partition's end position.
pub(crate) async fn drive(
    committer: &Committer,
    partitions: &[Partition],
    slice: Duration,
) -> Result<(Tally, Vec<u64>), BenchError> {
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
            fastrand::Rng::with_seed(u64::from(handler) + 1),
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
    let tally = Tally {
        entries,
        took: started.elapsed(),
        writes: committer.stats().writes,
    };
    Ok((tally, ends))
}

/// A handler with the committer: dispatches a batch of each of its partitions, then completes
/// the whole batch in shuffled order, until the deadline. Returns the entries completed and,
/// per partition, the position after the last one.
async fn complete_shuffled(
    partitions: Vec<Partition>,
    deadline: Instant,
    mut rng: fastrand::Rng,
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
pub(crate) async fn check_stored(
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
