//! The tables: every figure of the run, and the targets of the issue with what was measured.

use std::fmt::Write as _;
use std::time::Duration;

/// One line of the figures table.
#[derive(Debug, Clone)]
pub struct Row {
    /// Backend name.
    pub backend: &'static str,
    /// What ran, e.g. `save (store)`.
    pub workload: String,
    /// Samples, operations or entries, as the workload says.
    pub n: String,
    /// Median latency (or the median time of one call of a batch workload).
    pub p50: Option<Duration>,
    /// 99th percentile latency.
    pub p99: Option<Duration>,
    /// Operations per second (saves for the batch workloads).
    pub ops_per_sec: Option<f64>,
    /// Round trips of one operation, counted on the wire (`n/a` for an embedded database).
    pub round_trips: String,
    /// Latency: p50 / the floor's p50. Throughput: ops/s / the floor's ops/s.
    pub vs_floor: Option<f64>,
    /// Latency: p50 / the raw client's p50. Throughput: ops/s / the raw client's ops/s.
    pub vs_raw: Option<f64>,
}

impl Row {
    /// A row with only its name; the figures are filled in by the caller.
    pub fn new(backend: &'static str, workload: impl Into<String>, n: impl Into<String>) -> Self {
        Self {
            backend,
            workload: workload.into(),
            n: n.into(),
            p50: None,
            p99: None,
            ops_per_sec: None,
            round_trips: String::new(),
            vs_floor: None,
            vs_raw: None,
        }
    }
}

/// One target of the issue, with the figure measured in this run.
#[derive(Debug, Clone)]
pub struct Target {
    /// Backend name.
    pub backend: &'static str,
    /// The target, in words.
    pub target: String,
    /// What this run measured.
    pub measured: String,
    /// Met, missed, or only reported (`None`).
    pub met: Option<bool>,
}

/// A duration as people read it: ns below 10 µs, µs below 10 ms, ms above.
pub fn duration(value: Duration) -> String {
    let micros = value.as_secs_f64() * 1e6;
    if micros < 10.0 {
        format!("{} ns", value.as_nanos())
    } else if micros < 10_000.0 {
        format!("{micros:.0} µs")
    } else {
        format!("{:.1} ms", micros / 1e3)
    }
}

fn ratio(value: Option<f64>) -> String {
    value.map_or_else(String::new, |r| format!("{r:.2}×"))
}

fn rate(value: Option<f64>) -> String {
    match value {
        None => String::new(),
        Some(r) if r >= 100.0 => format!("{r:.0}"),
        Some(r) => format!("{r:.1}"),
    }
}

/// The figures as a markdown table.
pub fn figures(rows: &[Row]) -> String {
    let mut out = String::from(
        "| backend | workload | n | p50 | p99 | ops/s | round trips | × floor | × raw client |\n\
         | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for row in rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            row.backend,
            row.workload,
            row.n,
            row.p50.map(duration).unwrap_or_default(),
            row.p99.map(duration).unwrap_or_default(),
            rate(row.ops_per_sec),
            row.round_trips,
            ratio(row.vs_floor),
            ratio(row.vs_raw),
        );
    }
    out
}

/// The targets as a markdown table.
pub fn targets(targets: &[Target]) -> String {
    let mut out = String::from("| backend | target | measured | |\n| --- | --- | --- | --- |\n");
    for target in targets {
        let verdict = match target.met {
            Some(true) => "met",
            Some(false) => "**missed**",
            None => "reported",
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            target.backend, target.target, target.measured, verdict
        );
    }
    out
}

/// How to read the ratio columns, printed under the table.
pub const LEGEND: &str = "Ratios: latency rows divide the p50 by the p50 of the floor (or raw \
client) measured in the same run, interleaved with it (lower is better, 1.00× = no cost of its \
own); throughput rows divide ops/s by the floor's (or raw client's) ops/s at the same \
concurrency (higher is better). Round trips are counted on the wire by a loopback proxy, one \
operation after a warm-up; timings use direct connections.";
