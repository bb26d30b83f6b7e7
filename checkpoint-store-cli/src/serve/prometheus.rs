//! The report as Prometheus metrics, in the text exposition format 0.0.4 (`/metrics`).
//!
//! Every metric is a gauge of the latest refresh (a counter for `refreshes_total`), labelled
//! with the `group`; a partition's are also labelled `subscription` and `partition`. A value
//! the monitor does not know (no checkpoint, no head, no rate yet) has no sample, rather than
//! a made-up 0.
//!
//! | metric | labels | value |
//! | --- | --- | --- |
//! | `checkpoint_monitor_partition_position` | partition's | the checkpoint (first position not completed) |
//! | `checkpoint_monitor_partition_head` | partition's | the log's last position |
//! | `checkpoint_monitor_partition_lag` | partition's | `head + 1 - position` (0 without entries) |
//! | `checkpoint_monitor_partition_parked` | partition's | parked entries |
//! | `checkpoint_monitor_partition_rate` | partition's | positions completed per second over the window |
//! | `checkpoint_monitor_partition_catch_up_seconds` | partition's | seconds to lag 0 at the window's rates |
//! | `checkpoint_monitor_partition_owner_changes` | partition's | owner or epoch changes since the monitor started |
//! | `checkpoint_monitor_partition_verdict` | partition's, `verdict` | 1 for the partition's verdict, 0 for the four others |
//! | `checkpoint_monitor_partition_owner_info` | partition's, `owner` | 1, only while a live lease holds it |
//! | `checkpoint_monitor_partitions` | `group`, `verdict` | partitions with that verdict (every verdict, 0 included) |
//! | `checkpoint_monitor_refreshes_total` | `group` | successful refreshes since the monitor started (a counter) |
//! | `checkpoint_monitor_last_refresh_timestamp_seconds` | `group` | when the last successful refresh was taken (none before the first) |
//! | `checkpoint_monitor_refresh_failed` | `group` | 1 when the last refresh failed (the figures are the one before), else 0 |
//! | `checkpoint_monitor_store_requests_per_refresh` | `group` | the store requests the last refresh made |
//! | `checkpoint_monitor_source_requests_per_refresh` | `group` | the log's `heads` calls the last refresh made |
//!
//! The verdicts (`stopped`, `stalled`, `falling_behind`, `keeping_up`, `caught_up`) are one
//! series each, as kube-state-metrics shows a pod's phase: an alert is
//! `checkpoint_monitor_partition_verdict{verdict="stalled"} == 1`, and a change of verdict does
//! not end one series and start another.

use std::fmt::Write;

use crate::monitor::{PartitionReport, Report, Verdict};

/// The metrics' common prefix.
const PREFIX: &str = "checkpoint_monitor_";

/// The report as Prometheus text.
pub fn render(report: &Report) -> String {
    let mut out = Exposition::default();
    partition_metrics(&mut out, report);
    verdict_metrics(&mut out, report);
    refresh_metrics(&mut out, report);
    out.text
}

/// One optional figure per partition: a family of gauges whose samples are the known values.
type Figure = fn(&PartitionReport) -> Option<f64>;

/// A count as a sample value. Exact up to 2^53, as every Prometheus value (a float) is.
#[allow(clippy::cast_precision_loss)]
fn count(value: u64) -> f64 {
    value as f64
}

fn partition_metrics(out: &mut Exposition, report: &Report) {
    let figures: [(&str, &str, Figure); 7] = [
        (
            "partition_position",
            "The checkpoint: the first position not completed.",
            |p| p.position.map(count),
        ),
        (
            "partition_head",
            "The position of the log's last entry in the partition.",
            |p| p.head.map(count),
        ),
        (
            "partition_lag",
            "Entries not completed: head + 1 - position (0 without entries).",
            |p| p.lag.map(count),
        ),
        (
            "partition_parked",
            "Entries the subscription parked in the partition.",
            |p| Some(count(u64::try_from(p.parked).unwrap_or(u64::MAX))),
        ),
        (
            "partition_rate",
            "Positions completed per second over the window.",
            |p| p.rate,
        ),
        (
            "partition_catch_up_seconds",
            "Seconds to lag 0 at the window's rates (no sample: never at these rates).",
            |p| p.catch_up_s,
        ),
        (
            "partition_owner_changes",
            "Owner or epoch changes since the monitor started.",
            |p| Some(count(p.owner_changes)),
        ),
    ];
    for (name, help, figure) in figures {
        out.family(name, help);
        for p in &report.partitions {
            if let Some(value) = figure(p) {
                out.sample(name, &partition_labels(report, p, None), value);
            }
        }
    }
    out.family(
        "partition_owner_info",
        "The live lease's owner of the partition (1; no sample when nobody holds it).",
    );
    for p in &report.partitions {
        if let Some(owner) = &p.owner {
            let labels = partition_labels(report, p, Some(("owner", owner)));
            out.sample("partition_owner_info", &labels, 1.0);
        }
    }
}

fn verdict_metrics(out: &mut Exposition, report: &Report) {
    out.family(
        "partition_verdict",
        "The partition's verdict: 1 for the current one, 0 for the others.",
    );
    for p in &report.partitions {
        for verdict in Verdict::ALL {
            let labels = partition_labels(report, p, Some(("verdict", verdict.as_str())));
            out.sample("partition_verdict", &labels, one_if(p.verdict == verdict));
        }
    }
    out.family("partitions", "Partitions with each verdict.");
    for verdict in Verdict::ALL {
        let labels = [
            ("group", report.group.as_str()),
            ("verdict", verdict.as_str()),
        ];
        let n = u64::try_from(report.count(verdict)).unwrap_or(u64::MAX);
        out.sample("partitions", &labels, count(n));
    }
}

fn refresh_metrics(out: &mut Exposition, report: &Report) {
    let group = [("group", report.group.as_str())];
    out.typed_family(
        "refreshes_total",
        "counter",
        "Successful refreshes since the monitor started.",
    );
    out.sample("refreshes_total", &group, count(report.refreshes));
    out.family(
        "last_refresh_timestamp_seconds",
        "When the last successful refresh was taken, in seconds since the Unix epoch.",
    );
    if report.refreshes > 0 {
        let seconds = count(report.taken_at_ms) / 1000.0;
        out.sample("last_refresh_timestamp_seconds", &group, seconds);
    }
    out.family(
        "refresh_failed",
        "1 when the last refresh failed (the other figures are the refresh before it).",
    );
    out.sample("refresh_failed", &group, one_if(report.error.is_some()));
    out.family(
        "store_requests_per_refresh",
        "Requests the last refresh made to the store.",
    );
    out.sample(
        "store_requests_per_refresh",
        &group,
        count(report.requests.store),
    );
    out.family(
        "source_requests_per_refresh",
        "Calls of the log's heads the last refresh made.",
    );
    out.sample(
        "source_requests_per_refresh",
        &group,
        count(report.requests.source),
    );
}

fn one_if(condition: bool) -> f64 {
    if condition { 1.0 } else { 0.0 }
}

/// `group`, `subscription`, `partition` and one more label when given.
fn partition_labels<'a>(
    report: &'a Report,
    p: &'a PartitionReport,
    extra: Option<(&'a str, &'a str)>,
) -> Vec<(&'a str, String)> {
    let mut labels = vec![
        ("group", report.group.clone()),
        ("subscription", p.subscription.clone()),
        ("partition", p.partition.to_string()),
    ];
    labels.extend(extra.map(|(name, value)| (name, value.to_owned())));
    labels
}

/// The text being written.
#[derive(Default)]
struct Exposition {
    text: String,
}

impl Exposition {
    /// `# HELP` and `# TYPE` of a gauge.
    fn family(&mut self, name: &str, help: &str) {
        self.typed_family(name, "gauge", help);
    }

    /// `# HELP` and `# TYPE` of a metric of type `kind`.
    fn typed_family(&mut self, name: &str, kind: &str, help: &str) {
        // Writing to a String cannot fail.
        let _ = writeln!(self.text, "# HELP {PREFIX}{name} {}", escape_help(help));
        let _ = writeln!(self.text, "# TYPE {PREFIX}{name} {kind}");
    }

    /// One sample: `name{labels} value`.
    fn sample<V: AsRef<str>>(&mut self, name: &str, labels: &[(&str, V)], value: f64) {
        let labels: Vec<String> = labels
            .iter()
            .map(|(label, value)| format!("{label}=\"{}\"", escape_label(value.as_ref())))
            .collect();
        let _ = writeln!(
            self.text,
            "{PREFIX}{name}{{{}}} {}",
            labels.join(","),
            number(value)
        );
    }
}

/// A value as the format writes it: `NaN`, `+Inf`, `-Inf` or a decimal number.
fn number(value: f64) -> String {
    if value.is_nan() {
        "NaN".to_owned()
    } else if value.is_infinite() {
        if value > 0.0 { "+Inf" } else { "-Inf" }.to_owned()
    } else {
        // Rust's shortest representation that reads back the same, never an exponent.
        format!("{value}")
    }
}

/// A label value: backslash, double quote and line feed escaped.
fn escape_label(value: &str) -> String {
    escape(value, true)
}

/// A `# HELP` text: backslash and line feed escaped (a double quote stays).
fn escape_help(value: &str) -> String {
    escape(value, false)
}

fn escape(value: &str, quote: bool) -> String {
    let mut escaped = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => escaped.push_str("\\\\"),
            '\n' => escaped.push_str("\\n"),
            '"' if quote => escaped.push_str("\\\""),
            c => escaped.push(c),
        }
    }
    escaped
}

#[cfg(test)]
mod tests;
