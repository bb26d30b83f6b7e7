//! Timing: latency samples and their percentiles, throughput at a given concurrency, and
//! round trips counted through a proxy.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use checkpoint_conformance::round_trips::CountingProxy;
use tokio::task::JoinSet;

use crate::subject::{BenchError, BoxFut, context};

/// One operation of a workload; the argument is the worker (0..concurrency), which the save
/// workloads use as the partition so that every worker owns its key, as a subscription's
/// partition has one owner.
pub type Op = Arc<dyn Fn(u32) -> BoxFut<()> + Send + Sync>;

/// Latency samples of one operation.
#[derive(Debug, Clone, Default)]
pub struct Samples(Vec<Duration>);

impl From<Vec<Duration>> for Samples {
    fn from(samples: Vec<Duration>) -> Self {
        Self(samples)
    }
}

impl Samples {
    /// The `q` quantile (0..=1), nearest rank on the sorted samples.
    pub fn quantile(&self, q: f64) -> Duration {
        let mut sorted = self.0.clone();
        sorted.sort_unstable();
        if sorted.is_empty() {
            return Duration::ZERO;
        }
        // Nearest rank: the smallest sample with at least q of all samples at or below it.
        let rank = (q * sorted.len() as f64).ceil() as usize;
        sorted[rank.clamp(1, sorted.len()) - 1]
    }

    /// The median.
    pub fn p50(&self) -> Duration {
        self.quantile(0.50)
    }

    /// The 99th percentile.
    pub fn p99(&self) -> Duration {
        self.quantile(0.99)
    }

    /// How many samples.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether no sample was taken (an op the backend does not have).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Latency of each of `ops` at concurrency 1, interleaved: `rounds` rounds, each running
/// `per_round` calls of every op in turn. Interleaving spreads the machine's noise (other
/// processes, CPU frequency, the server's checkpoints) over all of them alike, so their
/// ratios hold even when the absolute figures drift.
pub async fn interleaved_latency(
    ops: &[(&str, Op)],
    rounds: usize,
    per_round: usize,
) -> Result<Vec<Samples>, BenchError> {
    let mut samples = vec![Samples::default(); ops.len()];
    for _ in 0..rounds {
        for ((name, op), samples) in ops.iter().zip(samples.iter_mut()) {
            for _ in 0..per_round {
                let started = Instant::now();
                op(0).await.map_err(context(format!("latency of {name}")))?;
                samples.0.push(started.elapsed());
            }
        }
    }
    Ok(samples)
}

/// Runs `op` once and returns how long it took.
pub async fn time_once<T, F>(what: &str, future: F) -> Result<(Duration, T), BenchError>
where
    F: Future<Output = Result<T, BenchError>>,
{
    let started = Instant::now();
    let value = future.await.map_err(context(what.to_owned()))?;
    Ok((started.elapsed(), value))
}

/// Completed operations per second of `ops`, each at `concurrency` workers on a multi-thread
/// runtime, interleaved: `rounds` rounds of `slice` per op. Returns (operations, seconds) per
/// op, summed over the rounds.
pub async fn interleaved_throughput(
    ops: &[(&str, Op)],
    concurrency: u32,
    rounds: usize,
    slice: Duration,
) -> Result<Vec<(u64, Duration)>, BenchError> {
    let mut totals = vec![(0_u64, Duration::ZERO); ops.len()];
    for _ in 0..rounds {
        for ((name, op), total) in ops.iter().zip(totals.iter_mut()) {
            let (done, took) = throughput(name, op, concurrency, slice).await?;
            total.0 += done;
            total.1 += took;
        }
    }
    Ok(totals)
}

/// `concurrency` workers each calling `op` back to back until `slice` has passed; the
/// operations completed and the time until the last worker finished its last call.
async fn throughput(
    name: &str,
    op: &Op,
    concurrency: u32,
    slice: Duration,
) -> Result<(u64, Duration), BenchError> {
    let started = Instant::now();
    let deadline = started + slice;
    let mut workers = JoinSet::new();
    for worker in 0..concurrency {
        let op = Arc::clone(op);
        workers.spawn(async move {
            let mut done = 0_u64;
            while Instant::now() < deadline {
                op(worker).await?;
                done += 1;
            }
            Ok::<u64, BenchError>(done)
        });
    }
    let mut done = 0;
    while let Some(joined) = workers.join_next().await {
        done += joined
            .map_err(context(format!("worker of {name}")))?
            .map_err(context(format!(
                "throughput of {name} at concurrency {concurrency}"
            )))?;
    }
    Ok((done, started.elapsed()))
}

/// Lets the proxy and any background work of a client finish, so that a count is final and
/// the next one starts clean. sqlx checks a connection when it returns to the pool, one more
/// exchange after the call has returned; that exchange must not land in the next count.
pub async fn settle() {
    tokio::time::sleep(Duration::from_millis(150)).await;
}

/// Round trips of one call, counted by a [`CountingProxy`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Trips {
    /// Exchanges of the call itself: all that were counted, less those the client library
    /// sends on its own after the call (see `Backend::release_exchanges`).
    pub waited: u64,
    /// Every exchange counted until the client had settled.
    pub settled: u64,
}

/// Round trips of one call of `op` through `proxy`: two warm-up calls first (prepared
/// statements, script cache, connection set-up), then the count of exactly one call.
pub async fn round_trips<F, Fut>(
    what: &str,
    proxy: &CountingProxy,
    release: u64,
    op: F,
) -> Result<Trips, BenchError>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<(), BenchError>>,
{
    // Twice: a call may take another branch the first time (the hand-written saves insert,
    // then update), and each branch's statements are prepared on their first use.
    for _ in 0..2 {
        op().await.map_err(context(format!(
            "warm-up of {what} through the counting proxy"
        )))?;
    }
    count(what, proxy, release, op()).await
}

/// Round trips of `call` through `proxy`, which has been warmed up for it. Every exchange is
/// counted once the client has settled (so that none of them, nor of the call before, lands
/// in the wrong count); `release` of them are the client's own after-call exchanges.
pub async fn count<Fut>(
    what: &str,
    proxy: &CountingProxy,
    release: u64,
    call: Fut,
) -> Result<Trips, BenchError>
where
    Fut: Future<Output = Result<(), BenchError>>,
{
    settle().await;
    proxy.reset();
    call.await
        .map_err(context(format!("{what} through the counting proxy")))?;
    settle().await;
    let settled = proxy.round_trips();
    Ok(Trips {
        waited: settled.saturating_sub(release),
        settled,
    })
}
