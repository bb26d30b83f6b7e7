//! The workers' tables: one per row, every backend's figure beside its target and the anchors
//! (what other systems take by default), with a verdict computed from the measurement.

use std::fmt::Write as _;
use std::time::Duration;

/// One measured figure of a workers' row.
#[derive(Debug, Clone)]
pub(crate) struct Figure {
    /// The row (one table each): `Failover`, `Graceful handover`, …
    pub row: &'static str,
    /// Backend name.
    pub backend: &'static str,
    /// The fleet and the settings it ran with.
    pub setting: String,
    /// What this run measured.
    pub measured: String,
    /// The target, in words.
    pub target: String,
    /// What other systems take, printed beside ours.
    pub anchor: &'static str,
    /// Met, missed, or only reported (`None`).
    pub met: Option<bool>,
}

/// The tables, one per row in the order the rows first appear.
pub(crate) fn tables(figures: &[Figure]) -> String {
    let mut rows: Vec<&str> = Vec::new();
    for figure in figures {
        if !rows.contains(&figure.row) {
            rows.push(figure.row);
        }
    }
    let mut out = String::new();
    for row in rows {
        let _ = write!(
            out,
            "### {row}\n\n| backend | fleet and settings | measured | target | anchors | |\n\
             | --- | --- | --- | --- | --- | --- |\n"
        );
        for figure in figures.iter().filter(|figure| figure.row == row) {
            let verdict = match figure.met {
                Some(true) => "met",
                Some(false) => "**missed**",
                None => "reported",
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {verdict} |",
                figure.backend, figure.setting, figure.measured, figure.target, figure.anchor
            );
        }
        out.push('\n');
    }
    out
}

/// A duration in milliseconds, as the workers' tables print them.
pub(crate) fn ms(value: Duration) -> String {
    format!("{:.0} ms", value.as_secs_f64() * 1e3)
}
