//! The workers' rows (`checkpoint-worker`): workers of one subscription in this process, over
//! one store, measured side by side in one run with what other systems take by default.
//!
//! - **Failover** (`failover.rs`): 4 workers over 64 partitions, one crashed (no goodbye, its
//!   application's tasks aborted): the time until the 3 others own every partition again.
//! - **Graceful handover** (`handover.rs`): one of 4 shuts down: the time until the others own
//!   its partitions, the drain apart, and the entries redone (completed twice).
//! - **Rebalance after a join** (`rebalance.rs`): 1,024 partitions, 15 workers, then a 16th:
//!   the time until balanced within ±1 and the partitions moved.
//! - **Cost** (`cost.rs`): store requests per worker per renew interval at rest, and 10,000 partitions
//!   over 100 workers (in memory, PostgreSQL): time until all owned and until balanced, what
//!   the workers went through (acquired, lost, failed lease requests, least and most held),
//!   the store's requests timed by operation (`timed.rs`), requests per second at rest. Alone:
//!   `--workloads scale`.
//! - **Committer under a worker** (`committer.rs`): the committer's end-to-end row with the
//!   assignments' committer handles, against the committer alone, interleaved.
//!
//! Timings are printed, never asserted; the smoke run checks one structural count, a worker's
//! requests at rest: a renew per renew interval and a table read per round, at most one round
//! per interval, whatever it holds.

mod app;
mod committer;
mod cost;
mod failover;
mod fleet;
mod handover;
mod rebalance;
pub(crate) mod report;
mod timed;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use checkpoint_core::InMemoryCheckpointStore;
use checkpoint_worker::{DEFAULT_LEASE_DURATION, DEFAULT_RENEWS_PER_LEASE};

pub(crate) use report::{Figure, tables};

use crate::subject::{BenchError, BenchStore};

/// The subscription of every fleet (each row has a group of its own).
const SUBSCRIPTION: &str = "workers";

/// How long any fleet may take to converge before the run fails: a bound, not a target.
const CONVERGE_TIMEOUT: Duration = Duration::from_secs(300);

/// A worker's lease and renew interval.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Settings {
    pub lease: Duration,
    pub renew: Duration,
}

impl Settings {
    /// The lease with the worker's default interval (lease / `DEFAULT_RENEWS_PER_LEASE`).
    fn default_for(lease: Duration) -> Self {
        Self {
            lease,
            renew: lease / DEFAULT_RENEWS_PER_LEASE,
        }
    }

    fn describe(self) -> String {
        format!(
            "{} s lease, {} ms renew",
            self.lease.as_secs_f64(),
            self.renew.as_millis()
        )
    }
}

/// How much of the workers' rows to run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan {
    smoke: bool,
    /// Failover and rebalance: the lease with its default renew interval.
    ownership: Settings,
    /// The graceful handover runs at each of these renew intervals (same lease).
    handover_renews: [Option<Duration>; 2],
    /// Workers and partitions of the failover and handover fleets.
    small: (usize, u32),
    /// Workers before the join and partitions of the rebalance fleet.
    rebalance: (usize, u32),
    /// Workers and partitions of the scale row, with their settings.
    scale: (usize, u32, Settings),
    /// Rounds of each at-rest window.
    rest_rounds: u32,
}

impl Plan {
    pub(crate) fn new(smoke: bool) -> Self {
        if smoke {
            let ownership = Settings::default_for(Duration::from_millis(500));
            Self {
                smoke,
                ownership,
                handover_renews: [Some(ownership.renew), None],
                small: (4, 16),
                rebalance: (3, 64),
                scale: (10, 200, ownership),
                rest_rounds: 3,
            }
        } else {
            // A 2 s lease (the failover target's) with the worker's default interval for it,
            // 400 ms; the handover also at 100 ms, since a taker sees a freed partition at its
            // next round.
            let ownership = Settings::default_for(Duration::from_secs(2));
            Self {
                smoke,
                ownership,
                handover_renews: [Some(ownership.renew), Some(Duration::from_millis(100))],
                small: (4, 64),
                rebalance: (15, 1_024),
                // The worker's defaults: 100 workers each reading a 10,000-lease table every
                // 2 s.
                scale: (100, 10_000, Settings::default_for(DEFAULT_LEASE_DURATION)),
                rest_rounds: 10,
            }
        }
    }
}

/// What the rows found: the figures, and structural counts that differ from the documented.
#[derive(Debug, Default)]
pub(crate) struct Findings {
    pub figures: Vec<Figure>,
    pub mismatches: Vec<String>,
}

/// A group of its own for every fleet.
fn group(what: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    format!(
        "wk-{}-{}-{what}",
        std::process::id(),
        nanos % 1_000_000_000_000
    )
}

/// Every workers' row on one backend's store (and the scale row on PostgreSQL).
pub(crate) async fn run_backend(
    backend: &'static str,
    store: &Arc<dyn BenchStore>,
    plan: Plan,
) -> Result<Findings, BenchError> {
    let mut findings = Findings::default();
    eprintln!("checkpoint-bench: {backend}: workers: failover");
    failover::measure(&mut findings, backend, store, plan).await?;
    for renew in plan.handover_renews.into_iter().flatten() {
        eprintln!("checkpoint-bench: {backend}: workers: graceful handover, {renew:?} renew");
        let settings = Settings {
            renew,
            ..plan.ownership
        };
        handover::measure(&mut findings, backend, store, plan, settings).await?;
    }
    eprintln!("checkpoint-bench: {backend}: workers: rebalance after a join");
    rebalance::measure(&mut findings, backend, store, plan).await?;
    if backend == "postgres" {
        eprintln!("checkpoint-bench: {backend}: workers: scale");
        cost::scale(&mut findings, backend, store, plan).await?;
    }
    eprintln!("checkpoint-bench: {backend}: workers: committer under a worker");
    committer::measure(&mut findings, backend, store, plan.smoke).await?;
    Ok(findings)
}

/// The scale row alone (`--workloads scale`): on PostgreSQL, as in [`run_backend`]; nothing on
/// the other backends.
pub(crate) async fn run_scale(
    backend: &'static str,
    store: &Arc<dyn BenchStore>,
    plan: Plan,
) -> Result<Findings, BenchError> {
    let mut findings = Findings::default();
    if backend == "postgres" {
        eprintln!("checkpoint-bench: {backend}: workers: scale");
        cost::scale(&mut findings, backend, store, plan).await?;
    }
    Ok(findings)
}

/// The scale row on the in-memory store.
pub(crate) async fn run_in_memory(plan: Plan) -> Result<Findings, BenchError> {
    let mut findings = Findings::default();
    eprintln!("checkpoint-bench: in memory: workers: scale");
    let store: Arc<dyn BenchStore> = Arc::new(InMemoryCheckpointStore::new());
    cost::scale(&mut findings, "in memory", &store, plan).await?;
    Ok(findings)
}
