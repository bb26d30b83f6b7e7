//! Commit → handler latency: entries carrying their send time, appended one at a time at rest
//! and by concurrent writers; the handler records how long ago each was sent.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use checkpoint_core::source::Entry;
use checkpoint_subscription::{HandlerResult, Subscription};
use tokio::task::JoinSet;

use super::log::Log;
use super::pairs::Pair;
use super::{Figure, Plan, SUBSCRIPTION, WRITERS, payload, unique, wait_for};
use crate::measure::Samples;
use crate::report::duration;
use crate::subject::BenchError;

const ROW: &str = "Commit → handler latency";

/// Between two appends at rest: each entry is handled before the next is written.
const REST_PAUSE: Duration = Duration::from_millis(10);

/// What the handler saw so far: now − sent of every entry.
type Seen = Arc<Mutex<Vec<Duration>>>;

/// One subscription on a new log; at rest, then under concurrent writers.
pub(super) async fn measure(
    pair: &Pair,
    plan: Plan,
    figures: &mut Vec<Figure>,
) -> Result<(), BenchError> {
    let log = pair.create_log("latency", plan.partitions).await?;
    let seen: Seen = Arc::default();
    let recording = Arc::clone(&seen);
    let subscription = Subscription::builder(
        Arc::clone(&pair.store),
        log.source(),
        unique("latency"),
        SUBSCRIPTION,
    )
    .handler(move |entry: Arc<Entry>| {
        let seen = Arc::clone(&recording);
        async move {
            let (_, sent) = payload::read(&entry.payload).ok_or("not a stamped entry")?;
            let age = payload::age(sent);
            seen.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(age);
            HandlerResult::Ok(())
        }
    })
    .start()?;
    let partitions = plan.partitions as usize;
    wait_for("the subscription holding every partition", || {
        subscription.stats().worker.held.len() == partitions
    })
    .await?;

    for n in 0..plan.at_rest {
        log.append(
            partition_of(n, plan),
            payload::stamped(partition_of(n, plan)),
        )
        .await?;
        tokio::time::sleep(REST_PAUSE).await;
    }
    let at_rest = collect(&seen, plan.at_rest).await?;
    write_concurrently(&log, plan).await?;
    let concurrent = collect(&seen, WRITERS * plan.per_writer).await?;
    subscription.shutdown().await?;
    log.remove().await?;

    let caveat = pair
        .latency_caveat()
        .map(|caveat| format!("; {caveat}"))
        .unwrap_or_default();
    let setting = |how: &str| {
        format!(
            "{how}, {} partitions; send time in the payload, taken before the append (its \
             commit included){caveat}",
            plan.partitions
        )
    };
    figures.push(figure(
        pair.name,
        setting(&format!(
            "1 writer, one entry every {} ms",
            REST_PAUSE.as_millis()
        )),
        &at_rest,
    ));
    figures.push(figure(
        pair.name,
        setting(&format!("{WRITERS} writers appending back to back")),
        &concurrent,
    ));
    Ok(())
}

fn partition_of(n: usize, plan: Plan) -> u32 {
    u32::try_from(n).unwrap_or(0) % plan.partitions
}

/// `WRITERS` tasks, each appending `plan.per_writer` entries one after another.
async fn write_concurrently(log: &Arc<dyn Log>, plan: Plan) -> Result<(), BenchError> {
    let mut writers = JoinSet::new();
    for writer in 0..WRITERS {
        let log = Arc::clone(log);
        let partition = partition_of(writer, plan);
        writers.spawn(async move {
            for _ in 0..plan.per_writer {
                log.append(partition, payload::stamped(partition)).await?;
            }
            Ok::<_, BenchError>(())
        });
    }
    while let Some(done) = writers.join_next().await {
        done??;
    }
    Ok(())
}

/// Waits until the handler saw `count` entries, and takes them.
async fn collect(seen: &Seen, count: usize) -> Result<Samples, BenchError> {
    let length = || seen.lock().unwrap_or_else(PoisonError::into_inner).len();
    wait_for(&format!("{count} entries handled"), || length() >= count).await?;
    let taken = std::mem::take(&mut *seen.lock().unwrap_or_else(PoisonError::into_inner));
    Ok(Samples::from(taken))
}

fn figure(pair: &'static str, setting: String, samples: &Samples) -> Figure {
    Figure {
        row: ROW,
        pair,
        setting,
        measured: format!(
            "p50 {}, p99 {} ({} entries)",
            duration(samples.p50()),
            duration(samples.p99()),
            samples.len()
        ),
        target: String::new(),
        met: None,
    }
}
