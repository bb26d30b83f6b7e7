//! A worker process: owns some partitions through a `checkpoint-worker` worker, runs the
//! committer through each assignment, and appends a line per completed entry to the
//! completion log. SIGTERM shuts it down gracefully; the end of its stdin (the supervisor is
//! gone) too.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use checkpoint_worker::{Assignment, Stop, Worker};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::{Semaphore, oneshot};
use tokio::task::JoinSet;

use crate::completions::{CompletionLog, Exit};
use crate::slow::slow_writes;
use crate::synthetic::{self, PARTITIONS};
use crate::{BoxError, DRAIN_TIMEOUT, SUBSCRIPTION, renew_interval};

/// Entries of one partition running at once: handlers finish them out of order.
const IN_FLIGHT: usize = 2;
/// A handler works on an entry for up to this long (a random part of it).
const MAX_WORK: Duration = Duration::from_millis(30);

/// What a worker process is told on its command line.
#[derive(Debug)]
pub struct WorkerArgs {
    pub store: String,
    pub group: String,
    pub worker_id: String,
    pub completions: PathBuf,
    /// How long each checkpoint write waits before it goes to the store (zero: none).
    pub write_delay: Duration,
    /// The lease's duration (`--lease-ms`), renewed every sixth of it.
    pub lease: Duration,
}

/// What every partition task of the process shares.
struct Context {
    worker: Worker,
    log: CompletionLog,
}

/// Runs the worker until SIGTERM (or the supervisor's end), then shuts it down gracefully.
pub async fn run(args: WorkerArgs) -> Result<(), BoxError> {
    // Before anything else: a SIGTERM that arrives while the store opens must not kill the
    // process the default way, without a handover.
    let mut terminate = signal(SignalKind::terminate())?;
    let mut orphaned = supervisor_gone();
    let store = Arc::new(slow_writes(
        checkpoint_examples::open_store(&args.store).await?,
        args.write_delay,
    ));
    let (worker, mut assignments) =
        Worker::builder(Arc::clone(&store), &args.group, SUBSCRIPTION, PARTITIONS)
            .worker_id(&args.worker_id)
            .lease_duration(args.lease)
            .renew_interval(renew_interval(args.lease))
            .drain_timeout(DRAIN_TIMEOUT)
            .start()?;
    let context = Arc::new(Context {
        worker: worker.clone(),
        log: CompletionLog::open(&args.completions)?,
    });
    let mut partitions = JoinSet::new();
    let why = loop {
        tokio::select! {
            _ = terminate.recv() => break "SIGTERM",
            _ = &mut orphaned => break "the supervisor is gone",
            next = assignments.next() => match next {
                Some(assignment) => {
                    partitions.spawn(run_partition(assignment, Arc::clone(&context)));
                }
                None => return Err("the worker stopped on its own".into()),
            },
            Some(done) = partitions.join_next() => done??,
        }
    };
    say(
        &args.worker_id,
        &format!("{why}: shutting down (hands every partition over)"),
    );
    // A partition granted just before the shutdown may still be in the stream, already told
    // to hand over: dropping it says it is drained (nothing was dispatched), so the shutdown
    // does not wait the drain timeout for it.
    tokio::spawn(async move { while assignments.next().await.is_some() {} });
    worker.shutdown().await?;
    while let Some(done) = partitions.join_next().await {
        done??;
    }
    let stats = worker.stats();
    context.log.exit(&Exit {
        worker: args.worker_id.clone(),
        losses: stats.losses,
        lease_failures: stats.renew_failures,
        final_write_failures: stats.final_write_failures,
        drain_timeouts: stats.drain_timeouts,
        slowed_writes: store.around().slowed(),
    })?;
    say(
        &args.worker_id,
        &format!(
            "shut down; it acquired {} leases ({} by handover), handed {} over ({} drain timeouts), lost {}, {} lease requests failed",
            stats.acquired,
            stats.handovers_in,
            stats.handovers_out,
            stats.drain_timeouts,
            stats.losses,
            stats.renew_failures
        ),
    );
    Ok(())
}

/// Resolves when the supervisor closes this process's stdin (it exited, however): a worker
/// left behind by a supervisor that died shuts down instead of running forever.
fn supervisor_gone() -> oneshot::Receiver<()> {
    let (gone, receiver) = oneshot::channel();
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
        let _ = gone.send(());
    });
    receiver
}

/// One partition: dispatches its entries in log order from where it resumes, `IN_FLIGHT` at
/// a time, each to a handler task; stops dispatching when told to, drains on a handover.
async fn run_partition(assignment: Assignment, context: Arc<Context>) -> Result<(), BoxError> {
    let (partition, epoch) = (assignment.partition(), assignment.epoch());
    let me = context.worker.id().to_owned();
    let entries = synthetic::entries(partition);
    let first = entries.partition_point(|&position| position < assignment.resume_at());
    say(
        &me,
        &format!(
            "p{partition} acquired, epoch {epoch}, resumes at {} ({} entries left)",
            assignment.resume_at(),
            entries.len() - first
        ),
    );
    // Handlers share the assignment: it is dropped (the partition is drained) when this task
    // and every handler are done with it.
    let assignment = Arc::new(assignment);
    let slots = Arc::new(Semaphore::new(IN_FLIGHT));
    let mut handlers = JoinSet::new();
    let mut random = fastrand::Rng::with_seed((epoch << 32) | u64::from(partition));
    for &position in &entries[first..] {
        while let Some(done) = handlers.try_join_next() {
            done??;
        }
        let slot = tokio::select! {
            _ = assignment.stopped() => break,
            slot = Arc::clone(&slots).acquire_owned() => slot?,
        };
        // Before each dispatch: a worker that was frozen past its lease's local deadline
        // finds out here, before it acts, even before its lease keeper has run again.
        if !assignment.is_held() {
            if assignment.stop().is_none() {
                let why = "its local deadline has passed, before its keeper said anything";
                say(
                    &me,
                    &format!("p{partition}: {why}; stops before entry {position}"),
                );
            }
            break;
        }
        if assignment.committer().dispatched(position).await.is_err() {
            break; // the committer let go of the partition: it was lost
        }
        let work = Duration::from_micros(random.u64(1..=MAX_WORK.as_micros() as u64));
        handlers.spawn(handle(
            Arc::clone(&assignment),
            Arc::clone(&context),
            position,
            work,
            slot,
        ));
    }
    let stop = assignment.stopped().await;
    if let Stop::Handover { .. } = stop {
        while let Some(done) = handlers.try_join_next() {
            done??;
        }
        let running = handlers.len();
        while let Some(done) = handlers.join_next().await {
            done??;
        }
        say(
            &me,
            &format!("p{partition}: handed over after draining {running} entries in flight"),
        );
    } else {
        // Stop at once: another worker may own the partition already.
        handlers.abort_all();
        context.log.lost(partition, epoch, &me)?;
        say(
            &me,
            &format!("p{partition}: lost (epoch {epoch}); stops at once"),
        );
    }
    Ok(())
}

/// A handler: works on the entry, then, if this worker still holds the partition, performs
/// its effect (the line in the completion log) and reports it completed.
async fn handle(
    assignment: Arc<Assignment>,
    context: Arc<Context>,
    position: u64,
    work: Duration,
    _slot: tokio::sync::OwnedSemaphorePermit,
) -> Result<(), BoxError> {
    tokio::time::sleep(work).await;
    // The lease is still this worker's by its local deadline, a drain included: a worker frozen
    // in the middle of its handler finds out here, before its effect.
    if !assignment.lease_valid() {
        return Ok(()); // not completed: the next owner does it
    }
    let (partition, epoch) = (assignment.partition(), assignment.epoch());
    context
        .log
        .append(partition, position, context.worker.id(), epoch)?;
    // After the effect, never before: the checkpoint only passes entries whose effect is done.
    // A refusal means the partition was let go meanwhile: the next owner redoes the entry.
    let _ = assignment.committer().completed(position);
    Ok(())
}

/// A line of the worker's own, on the supervisor's output.
fn say(worker: &str, what: &str) {
    println!("      [{worker}] {what}");
}
