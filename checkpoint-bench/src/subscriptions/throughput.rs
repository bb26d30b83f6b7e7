//! End-to-end throughput of a no-op handler: a subscription against the hand-written loop
//! (`hand_loop.rs`) on the same pre-filled log, alternately, each from the log's start in a
//! group of its own.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use checkpoint_core::source::{Entry, Source};
use checkpoint_subscription::{
    DEFAULT_MAX_IN_FLIGHT, DEFAULT_PAGE_SIZE, HandlerResult, Subscription,
};
use tokio::sync::Notify;

use super::hand_loop::{self, Looped};
use super::pairs::Pair;
use super::{Figure, Plan, SUBSCRIPTION, TIMEOUT, unique};
use crate::subject::{BenchError, context};
use crate::workers::report::ms;

const ROW: &str = "End-to-end throughput (no-op handler)";

/// What one subscription run took.
struct Subscribed {
    /// From `start()` to the last entry handled: what a job, a test or a command waits, the
    /// worker's cold start (joining, looking at the lease table, claiming) included.
    took: Duration,
    /// From `start()` to the first entry handled: the cold start.
    first: Duration,
    /// The committer's `save_all` calls, its final writes at the shutdown included.
    writes: u64,
}

/// Entries handled, and a signal at the last one.
struct Count {
    first: OnceLock<Instant>,
    handled: AtomicU64,
    target: u64,
    done: Notify,
}

/// Fills a log, then runs the loop and the subscription over it `plan.rounds` times each.
pub(super) async fn measure(
    pair: &Pair,
    plan: Plan,
    figures: &mut Vec<Figure>,
) -> Result<(), BenchError> {
    let entries = pair
        .entries_cap()
        .map_or(plan.entries, |cap| plan.entries.min(cap));
    let per_partition = entries / u64::from(plan.partitions);
    let total = per_partition * u64::from(plan.partitions);
    let log = pair.create_log("throughput", plan.partitions).await?;
    let filling = Instant::now();
    log.fill(per_partition).await?;
    // Progress, for sizing a slow source's log (`Pair::entries_cap`).
    eprintln!(
        "checkpoint-bench: {}: subscriptions: {total} entries written in {:.1} s",
        pair.name,
        filling.elapsed().as_secs_f64()
    );
    let source = log.source();
    let (mut looped, mut subscribed): (Option<Looped>, Option<Subscribed>) = (None, None);
    for _ in 0..plan.rounds {
        let round = hand_loop::run(
            &pair.store,
            &source,
            &unique("loop"),
            per_partition,
            DEFAULT_PAGE_SIZE,
        )
        .await
        .map_err(context("the hand-written loop"))?;
        if looped.as_ref().is_none_or(|best| round.took < best.took) {
            looped = Some(round);
        }
        let round = subscribe(pair, &source, total)
            .await
            .map_err(context("the subscription"))?;
        if subscribed
            .as_ref()
            .is_none_or(|best| round.took < best.took)
        {
            subscribed = Some(round);
        }
    }
    log.remove().await?;
    let (Some(looped), Some(subscribed)) = (looped, subscribed) else {
        return Err("no throughput round ran".into());
    };
    let sized_down = (entries < plan.entries).then(|| {
        format!(
            " (sized down from {}: this source appends one entry per request, which fills \
             slowly)",
            plan.entries
        )
    });
    let total_said = format!("{total} entries{}", sized_down.unwrap_or_default());
    figures.push(figure(
        pair.name,
        plan,
        total,
        &total_said,
        &looped,
        &subscribed,
    ));
    Ok(())
}

/// One subscription over the whole log, from its start until every entry is handled; then a
/// graceful shutdown (its final checkpoint writes).
async fn subscribe(
    pair: &Pair,
    source: &Arc<dyn Source>,
    total: u64,
) -> Result<Subscribed, BenchError> {
    let count = Arc::new(Count {
        first: OnceLock::new(),
        handled: AtomicU64::new(0),
        target: total,
        done: Notify::new(),
    });
    let counting = Arc::clone(&count);
    let started = Instant::now();
    let subscription = Subscription::builder(
        Arc::clone(&pair.store),
        Arc::clone(source),
        unique("subscription"),
        SUBSCRIPTION,
    )
    .handler(move |entry: Arc<Entry>| {
        let count = Arc::clone(&counting);
        async move {
            std::hint::black_box(&entry);
            count.first.get_or_init(Instant::now);
            if count.handled.fetch_add(1, Ordering::Relaxed) + 1 == count.target {
                count.done.notify_one();
            }
            HandlerResult::Ok(())
        }
    })
    .start()?;
    tokio::time::timeout(TIMEOUT, count.done.notified())
        .await
        .map_err(context(format!("waiting for {total} entries handled")))?;
    let took = started.elapsed();
    let first = count
        .first
        .get()
        .map_or(took, |first| first.saturating_duration_since(started));
    subscription.shutdown().await?;
    Ok(Subscribed {
        took,
        first,
        writes: subscription.worker().committer().stats().writes,
    })
}

fn figure(
    pair: &'static str,
    plan: Plan,
    total: u64,
    total_said: &str,
    looped: &Looped,
    subscribed: &Subscribed,
) -> Figure {
    let rate = |took: Duration| total as f64 / took.as_secs_f64().max(f64::MIN_POSITIVE);
    let (ours, theirs) = (rate(subscribed.took), rate(looped.took));
    let steady = rate(subscribed.took.saturating_sub(subscribed.first));
    let ratio = ours / theirs;
    Figure {
        row: ROW,
        pair,
        setting: format!(
            "{total_said} over {} partitions, pages of {DEFAULT_PAGE_SIZE}, \
             {DEFAULT_MAX_IN_FLIGHT} \
             in flight per partition, the worker's defaults and the default committer; best of {} \
             (subscription: from `start()` to the last entry handled, its cold start included; \
             hand loop: from its first `load` to its last `save`)",
            plan.partitions, plan.rounds
        ),
        measured: format!(
            "subscription {ours:.0} entries/s ({} checkpoint writes: the committer's `save_all`s); \
             hand loop {theirs:.0} entries/s ({} `save`s, one per page); {ratio:.2}× \
             (first entry handled {} after `start()`; {:.2}× from the first entry to the last)",
            subscribed.writes,
            looped.saves,
            ms(subscribed.first),
            steady / theirs,
        ),
        target: "≥ 1× the hand loop".into(),
        met: Some(ratio >= 1.0),
    }
}
