//! What workers cost the store at rest: each worker's requests per renew interval over a quiet
//! window (from `WorkerStats::store_requests` and `rounds`), and 10,000 partitions over 100
//! workers in one process: the time until every partition is owned and until the fleet is balanced, what
//! the workers went through meanwhile (acquired, handed over, lost, failed lease requests,
//! least and most held; every store request timed by operation), and the requests per second
//! of all of them at rest.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use checkpoint_worker::WorkerStats;

use super::app::Work;
use super::fleet::{self, Fleet};
use super::report::{Figure, ms};
use super::timed::{self, Requests, Timed};
use super::{Findings, Plan, Settings, group};
use crate::measure::Samples;
use crate::stores::thousands;
use crate::subject::{BenchError, BenchStore};

/// The scale row's name.
const SCALE: &str = "Scale: many partitions over many workers in one process";

/// How long the scale fleet may take to converge before the row says it did not.
const SCALE_TIMEOUT: Duration = Duration::from_secs(120);

/// Renew intervals a fleet is left alone after it balanced, before a window starts.
const SETTLING: u32 = 3;

/// A renew interval at rest: the renew and (at most) one table read. A worker whose rounds run
/// longer than half an interval reads the table less often; its renews keep their cadence.
const PER_INTERVAL: u64 = 2;

/// Quiet windows tried: a window in which something moved (a claim, a handover, a failed
/// renew) says nothing about the cost at rest, so it is measured again; a fleet that never
/// rests (a machine too loaded to renew in time) is reported as such, not failed.
const TRIES: usize = 3;

/// The anchor of the cost rows.
const ANCHORS: &str = "KCL: one conditional `UpdateItem` per lease per renew";

/// Requests over one quiet window.
struct Rest {
    requests: u64,
    rounds: u64,
    seconds: f64,
    /// Renew intervals in the window, summed over the workers.
    intervals: u64,
    /// Every worker made at most a renew per interval and a table read per round, at most one
    /// round per interval (within two: a window's edges may cut a round and a renew in half).
    constant: bool,
}

impl Rest {
    fn per_interval(&self) -> f64 {
        self.requests as f64 / self.intervals.max(1) as f64
    }

    fn reads_per_interval(&self) -> f64 {
        self.rounds as f64 / self.intervals.max(1) as f64
    }
}

/// Measures `members` at rest over `rounds` renew intervals and adds the cost figure; a worker
/// whose requests are more than a renew per interval and a table read per round is a mismatch (the
/// smoke run fails).
pub(super) async fn at_rest(
    findings: &mut Findings,
    backend: &'static str,
    fleet: &Fleet,
    members: &[usize],
    rounds: u32,
) -> Result<(), BenchError> {
    let Some(rest) = quiet_window(fleet, members, rounds).await else {
        findings
            .figures
            .push(restless(backend, fleet, members.len()));
        return Ok(());
    };
    let workers = members.len();
    let per_worker = fleet.partitions as f64 / workers as f64;
    if !rest.constant {
        findings.mismatches.push(format!(
            "{backend}: workers at rest made {} requests in {} rounds over {} renew intervals, \
             more than a renew per interval and a table read per round",
            rest.requests, rest.rounds, rest.intervals
        ));
    }
    findings.figures.push(Figure {
        row: "Cost at rest (store requests per worker per renew interval)",
        backend,
        setting: format!(
            "{workers} workers, {} partitions (~{per_worker:.0} each), {}",
            thousands(fleet.partitions as usize),
            fleet.settings.describe()
        ),
        measured: format!(
            "{:.2} per renew interval ({} requests, {} of them table reads, in {} intervals; \
             {:.1} requests/s per worker)",
            rest.per_interval(),
            rest.requests,
            rest.rounds,
            rest.intervals,
            rest.requests as f64 / rest.seconds / workers as f64
        ),
        target: format!("at most {PER_INTERVAL}, not one per partition"),
        anchor: ANCHORS,
        met: Some(rest.constant),
    });
    Ok(())
}

/// A window of `rounds` renew intervals in which nothing moved, if one came in `TRIES`.
async fn quiet_window(fleet: &Fleet, members: &[usize], rounds: u32) -> Option<Rest> {
    // A worker that asked for a handover looks again every few tens of milliseconds for two
    // renew intervals after its last request, even once it holds its share: a fleet just
    // balanced is not at rest until then.
    tokio::time::sleep(fleet.settings.renew * SETTLING).await;
    for _ in 0..TRIES {
        let started = Instant::now();
        let before = fleet.stats(members);
        tokio::time::sleep(fleet.settings.renew * rounds).await;
        let after = fleet.stats(members);
        let seconds = started.elapsed().as_secs_f64();
        if before.iter().zip(&after).any(|(b, a)| moved(b, a)) {
            continue;
        }
        let deltas: Vec<(u64, u64)> = before
            .iter()
            .zip(&after)
            .map(|(b, a)| (a.store_requests - b.store_requests, a.rounds - b.rounds))
            .collect();
        // A renew at most every interval (fewer when renews answer slower than two intervals:
        // at most two are in flight), a round (a table read) at most every interval.
        let intervals = (seconds / fleet.settings.renew.as_secs_f64()).round() as u64;
        let steady = |&(requests, rounds): &(u64, u64)| {
            requests <= rounds + intervals + 2 && rounds <= intervals + 1
        };
        return Some(Rest {
            requests: deltas.iter().map(|d| d.0).sum(),
            rounds: deltas.iter().map(|d| d.1).sum(),
            seconds,
            intervals: intervals * deltas.len() as u64,
            constant: deltas.iter().all(steady),
        });
    }
    None
}

/// The figure of a fleet that never stayed at rest for a whole window.
fn restless(backend: &'static str, fleet: &Fleet, workers: usize) -> Figure {
    Figure {
        row: "Cost at rest (store requests per worker per renew interval)",
        backend,
        setting: format!(
            "{workers} workers, {} partitions, {}",
            thousands(fleet.partitions as usize),
            fleet.settings.describe()
        ),
        measured: format!("something moved in each of {TRIES} windows: never at rest"),
        target: format!("at most {PER_INTERVAL}, not one per partition"),
        anchor: ANCHORS,
        met: Some(false),
    }
}

/// Whether anything changed hands or failed between two stats of one worker.
fn moved(before: &WorkerStats, after: &WorkerStats) -> bool {
    after.acquired != before.acquired
        || after.handovers_out != before.handovers_out
        || after.losses != before.losses
        || after.renew_failures != before.renew_failures
}

/// The scale row: the plan's workers over its partitions, all started at once, until every
/// partition is owned and the fleet balanced; what the workers went through meanwhile (their
/// stats, and every store request timed by operation); then its requests at rest.
pub(super) async fn scale(
    findings: &mut Findings,
    backend: &'static str,
    store: &Arc<dyn BenchStore>,
    plan: Plan,
) -> Result<(), BenchError> {
    let (workers, partitions, settings) = plan.scale;
    let (started, all) = (Instant::now(), (0..workers).collect::<Vec<usize>>());
    let (fleet, timed) = start_timed(store, plan)?;
    let converged = converge(&fleet, &all, started).await;
    let went = Tally::of(&fleet.stats(&all));
    let requests = timed.around().take();
    eprintln!(
        "checkpoint-bench: {backend}: scale: {}; requests while converging: {}",
        went.describe(),
        timed::describe(&requests)
    );
    let setting = scale_setting(partitions, workers, settings);
    // A fleet this large that does not converge is a finding of the row, not a failed run.
    let (owned, balanced) = match converged {
        Ok(times) => times,
        Err(error) => {
            let measured = format!(
                "**did not converge**: {error}; {}; requests: {}",
                went.describe(),
                timed::describe(&requests)
            );
            let measured = format!("{measured}; {}", shut_down(fleet).await);
            findings
                .figures
                .push(unconverged(backend, setting, measured));
            return Ok(());
        }
    };
    let converged = format!(
        "converged: all owned in {}, balanced within ±1 in {}; {}; slowest requests: {}",
        ms(owned),
        ms(balanced),
        went.describe(),
        slowest(&requests)
    );
    let Some(rest) = quiet_window(&fleet, &all, plan.rest_rounds).await else {
        let moved = Tally::of(&fleet.stats(&all)).since(&went);
        let measured = format!(
            "{converged}; **never at rest** (something moved in each of {TRIES} windows; after \
             converging: {moved}); {}",
            shut_down(fleet).await
        );
        findings
            .figures
            .push(unconverged(backend, setting, measured));
        return Ok(());
    };
    let shutdown = shut_down(fleet).await;
    mismatch_at_rest(findings, backend, workers, &rest);
    let expected = PER_INTERVAL as f64 * workers as f64 / settings.renew.as_secs_f64();
    findings.figures.push(Figure {
        row: SCALE,
        backend,
        setting,
        measured: format!(
            "{converged}; at rest {:.0} requests/s for all {workers} ({:.2} per worker per \
             renew interval, {:.2} of them table reads); {shutdown}",
            rest.requests as f64 / rest.seconds,
            rest.per_interval(),
            rest.reads_per_interval()
        ),
        target: format!(
            "converge: reported; at rest at most {PER_INTERVAL} per worker per renew interval \
             = {expected:.0} requests/s"
        ),
        anchor: ANCHORS,
        met: Some(rest.constant),
    });
    Ok(())
}

/// A mismatch when a worker at rest made more than a renew per interval and a table read per
/// round.
fn mismatch_at_rest(findings: &mut Findings, backend: &str, workers: usize, rest: &Rest) {
    if !rest.constant {
        findings.mismatches.push(format!(
            "{backend}: {workers} workers at rest made {} requests in {} rounds over {} renew \
             intervals",
            rest.requests, rest.rounds, rest.intervals
        ));
    }
}

/// Shuts the fleet down, all at once; how that went, in words.
async fn shut_down(fleet: Fleet) -> String {
    let workers = fleet.members.len();
    let failed = fleet.shutdown_reporting().await;
    match failed.first() {
        None => format!("all {workers} shut down"),
        Some(first) => format!(
            "**{} of {workers} shutdowns failed** (first: {first})",
            failed.len()
        ),
    }
}

/// The figure of a scale fleet that did not converge, or never rested: what it went through,
/// in `measured`.
fn unconverged(backend: &'static str, setting: String, measured: String) -> Figure {
    Figure {
        row: SCALE,
        backend,
        setting,
        measured,
        target: "converge: reported".into(),
        anchor: ANCHORS,
        met: Some(false),
    }
}

/// The scale fleet, started, every request of it going through the returned [`Timed`].
fn start_timed(store: &Arc<dyn BenchStore>, plan: Plan) -> Result<(Fleet, Arc<Timed>), BenchError> {
    let (workers, partitions, settings) = plan.scale;
    let timed = Arc::new(timed::timed(Arc::clone(store)));
    let mut fleet = Fleet::new(
        &(Arc::clone(&timed) as Arc<dyn BenchStore>),
        group("scale"),
        partitions,
        settings,
        Work::Idle,
    );
    fleet.start(workers)?;
    Ok((fleet, timed))
}

/// Waits until `members` own every partition, then until they are balanced; the time of each
/// from `started`.
async fn converge(
    fleet: &Fleet,
    members: &[usize],
    started: Instant,
) -> Result<(Duration, Duration), BenchError> {
    let partitions = fleet.partitions as usize;
    fleet
        .wait("owning every partition", members, SCALE_TIMEOUT, |stats| {
            fleet::owned(stats) == partitions
        })
        .await?;
    let owned = started.elapsed();
    let left = SCALE_TIMEOUT.saturating_sub(owned);
    fleet.wait_balanced(members, left).await?;
    Ok((owned, started.elapsed()))
}

/// The renew's and the table read's p99 and max: the requests a worker's leases hang on.
fn slowest(requests: &BTreeMap<&'static str, Requests>) -> String {
    ["renew", "leases"]
        .iter()
        .filter_map(|operation| {
            let requests = requests.get(operation)?;
            let max = requests.took.iter().max().copied().unwrap_or_default();
            let p99 = Samples::from(requests.took.clone()).p99();
            Some(format!(
                "{operation} p99 {}, max {} ({} failed)",
                ms(p99),
                ms(max),
                requests.failed + requests.abandoned
            ))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a fleet's workers went through, summed from their stats.
struct Tally {
    acquired: u64,
    handed_over: u64,
    losses: u64,
    failed: u64,
    min_held: usize,
    max_held: usize,
}

impl Tally {
    fn of(stats: &[WorkerStats]) -> Self {
        let sum = |count: fn(&WorkerStats) -> u64| stats.iter().map(count).sum::<u64>();
        let held = stats.iter().map(|s| s.held.len());
        Self {
            acquired: sum(|s| s.acquired),
            handed_over: sum(|s| s.handovers_out),
            losses: sum(|s| s.losses),
            failed: sum(|s| s.renew_failures),
            min_held: held.clone().min().unwrap_or(0),
            max_held: held.max().unwrap_or(0),
        }
    }

    /// What changed since `before`, in words.
    fn since(&self, before: &Self) -> String {
        format!(
            "{} more acquired, {} more handed over, {} more lost, {} more failed lease requests",
            self.acquired - before.acquired,
            self.handed_over - before.handed_over,
            self.losses - before.losses,
            self.failed - before.failed
        )
    }

    fn describe(&self) -> String {
        format!(
            "{} acquired, {} handed over, {} lost, {} failed lease requests, held {}-{} per worker",
            self.acquired, self.handed_over, self.losses, self.failed, self.min_held, self.max_held
        )
    }
}

fn scale_setting(partitions: u32, workers: usize, settings: Settings) -> String {
    format!(
        "{} partitions, {workers} workers, {}",
        thousands(partitions as usize),
        settings.describe()
    )
}
