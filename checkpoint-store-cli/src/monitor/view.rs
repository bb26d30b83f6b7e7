//! The live view of `status --watch`: a header, one line per partition (what needs attention
//! first), and the evidence of each that does, in 80 columns.
//!
//! ```text
//! 21:03:05 UTC · orders · 8 partitions: 1 stopped, 1 stalled, 1 behind, 5 ok
//! VERDICT    PARTITION    OWNER     CHECKPT    HEAD    LAG RATE/s CATCH-UP CHG PRK
//! stopped    killed/0     -            1200    1534    335      -    never   1   0
//! stalled    stuck/2      w-4117        310     655    346    0.0    never   0   0
//! behind     backlog/1    w-4120        812    1301    490     20    never   0   0
//! caught up  steady/0     w-4102       1534    1533      0     25       0s   0   0
//!
//! stopped    killed/0   no live owner; checkpoint 1200, head 1534, lag 335
//! ```
//!
//! On a terminal the view redraws in place and shows as many partitions as fit; elsewhere each
//! refresh is a block of plain lines (every partition, every evidence line, untruncated),
//! starting with the header (`HH:MM:SS UTC · `), so that a log of it reads as a history.

use std::fmt::Write as _;

use super::report::{PartitionReport, Report};
use super::verdict::{Verdict, per_second, seconds};

/// Columns of the view (80 with the spaces between them).
const WIDTH: usize = 80;

/// The header line: the time of the refresh, the group, the count of each verdict (`behind`
/// for falling behind, as in the rows).
pub fn header(report: &Report, clock: &str) -> String {
    let attention: Vec<String> = Verdict::ALL
        .iter()
        .filter(|v| v.needs_attention())
        .filter_map(|&v| match report.count(v) {
            0 => None,
            n => Some(format!("{n} {}", short_label(v))),
        })
        .collect();
    let ok = report.count(Verdict::CaughtUp) + report.count(Verdict::KeepingUp);
    let mut counts = attention;
    counts.push(format!("{ok} ok"));
    // The clock first: cut to 80 columns, the line must still show that the view is live.
    let mut line = format!(
        "{clock} · {} · {} partitions: {}",
        report.group,
        report.partitions.len(),
        counts.join(", ")
    );
    if let Some(error) = &report.error {
        let _ = write!(line, " · last refresh failed: {error}");
    }
    line
}

/// The column titles.
pub fn titles() -> String {
    format!(
        "{:<10} {:<12} {:<9} {:>7} {:>7} {:>6} {:>6} {:>8} {:>3} {:>3}",
        "VERDICT",
        "PARTITION",
        "OWNER",
        "CHECKPT",
        "HEAD",
        "LAG",
        "RATE/s",
        "CATCH-UP",
        "CHG",
        "PRK"
    )
}

/// One partition's line; `fit` truncates the names to their columns (on a terminal).
pub fn row(p: &PartitionReport, fit: bool) -> String {
    let suffix = format!("/{}", p.partition);
    let owner = p.owner.clone().unwrap_or_else(|| "-".to_owned());
    // On a terminal the subscription's name is cut, never the partition's number.
    let (name, owner) = if fit {
        let room = 12usize.saturating_sub(suffix.len()).max(1);
        (
            format!("{}{suffix}", cut(&p.subscription, room)),
            cut(&owner, 9),
        )
    } else {
        (format!("{}{suffix}", p.subscription), owner)
    };
    format!(
        "{:<10} {:<12} {:<9} {:>7} {:>7} {:>6} {:>6} {:>8} {:>3} {:>3}",
        short_label(p.verdict),
        name,
        owner,
        compact(p.position),
        compact(p.head),
        compact(p.lag),
        p.rate.map_or_else(|| "-".to_owned(), compact_rate),
        catch_up(p),
        compact(Some(p.owner_changes)),
        compact(Some(p.parked as u64)),
    )
}

/// The evidence line of a partition that needs attention.
pub fn evidence(p: &PartitionReport, fit: bool) -> String {
    format!(
        "{:<10} {:<12} {}",
        short_label(p.verdict),
        name(p, fit),
        p.evidence
    )
}

/// `subscription/partition`; on a terminal (`fit`) in 12 columns, the subscription's name cut,
/// never the partition's number.
fn name(p: &PartitionReport, fit: bool) -> String {
    let suffix = format!("/{}", p.partition);
    if !fit {
        return format!("{}{suffix}", p.subscription);
    }
    let room = 12usize.saturating_sub(suffix.len()).max(1);
    format!("{}{suffix}", cut(&p.subscription, room))
}

/// The whole view: header, titles, rows, then the evidence of what needs attention. On a
/// terminal (`rows` is its height) lines are cut to 80 columns and the partitions to what fits;
/// `None`: every line, whole.
pub fn render(report: &Report, clock: &str, rows: Option<usize>) -> Vec<String> {
    let fit = rows.is_some();
    let mut lines = vec![header(report, clock), titles()];
    let attention: Vec<&PartitionReport> = report.attention().collect();
    // On a terminal: the evidence of at most 5 partitions, and a line saying how many more.
    let evidence_lines = if fit {
        attention.len().min(5)
    } else {
        attention.len()
    };
    let room = rows.map_or(usize::MAX, |height| {
        height
            .saturating_sub(lines.len() + 2 + evidence_lines + 1)
            .max(1)
    });
    let shown = report.partitions.len().min(room);
    lines.extend(report.partitions[..shown].iter().map(|p| row(p, fit)));
    if shown < report.partitions.len() {
        lines.push(format!(
            "… {} more partitions (sorted by attention; widen the window or --subscription)",
            report.partitions.len() - shown
        ));
    }
    if !attention.is_empty() {
        lines.push(String::new());
        lines.extend(attention[..evidence_lines].iter().map(|p| evidence(p, fit)));
        if evidence_lines < attention.len() {
            lines.push(format!("… and {} more", attention.len() - evidence_lines));
        }
    }
    if fit {
        for line in &mut lines {
            *line = cut(line, WIDTH);
        }
    }
    lines
}

fn short_label(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::FallingBehind => "behind",
        other => other.label(),
    }
}

fn catch_up(p: &PartitionReport) -> String {
    match (p.catch_up_s, p.verdict) {
        (Some(s), _) if s < 1.0 => "0s".to_owned(),
        (Some(s), _) if s < 60.0 => format!("{s:.0}s"),
        (Some(s), _) if s < 3600.0 => format!("{:.0}m", s / 60.0),
        (Some(s), _) if s < 360_000.0 => format!("{:.0}h", s / 3600.0),
        (Some(_), _) => "days".to_owned(),
        (None, Verdict::FallingBehind | Verdict::Stalled | Verdict::Stopped) => "never".to_owned(),
        (None, _) => "-".to_owned(),
    }
}

/// `1534`, `12.3k`, `4.56M`: at most 7 characters.
fn compact(value: Option<u64>) -> String {
    let Some(value) = value else {
        return "-".to_owned();
    };
    match value {
        0..1_000_000 => value.to_string(),
        1_000_000..1_000_000_000 => format!("{:.2}M", value as f64 / 1e6),
        1_000_000_000..1_000_000_000_000 => format!("{:.2}G", value as f64 / 1e9),
        _ => format!("{:.1e}", value as f64),
    }
}

fn compact_rate(rate: f64) -> String {
    if rate >= 100_000.0 {
        format!("{:.0}k", rate / 1000.0)
    } else {
        per_second(rate).trim_end_matches("/s").to_owned()
    }
}

/// `value` in at most `width` characters, `…` at the end when cut.
fn cut(value: &str, width: usize) -> String {
    if value.chars().count() <= width {
        return value.to_owned();
    }
    let mut cut: String = value.chars().take(width.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// `21:03:05 UTC` from milliseconds since the epoch.
pub fn clock(taken_at_ms: u64) -> String {
    let day_seconds = (taken_at_ms / 1000) % 86_400;
    format!(
        "{:02}:{:02}:{:02} UTC",
        day_seconds / 3600,
        day_seconds / 60 % 60,
        day_seconds % 60
    )
}

/// `every 2.0 s`, for the header's caller.
pub fn every(interval_s: f64) -> String {
    format!("every {}", seconds(interval_s))
}

#[cfg(test)]
mod tests;
