//! The subscriptions' tables: one per row, every pair's figure beside its target, with a
//! verdict computed from the measurement (printed, never asserted).

use std::fmt::Write as _;

/// One measured figure of a subscriptions' row.
#[derive(Debug, Clone)]
pub(crate) struct Figure {
    /// The row (one table each).
    pub row: &'static str,
    /// Source → store.
    pub pair: &'static str,
    /// What ran, and with which settings.
    pub setting: String,
    /// What this run measured.
    pub measured: String,
    /// The target, in words (empty: only reported).
    pub target: String,
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
            "### {row}\n\n| source → store | run and settings | measured | target | |\n\
             | --- | --- | --- | --- | --- |\n"
        );
        for figure in figures.iter().filter(|figure| figure.row == row) {
            let verdict = match figure.met {
                Some(true) => "met",
                Some(false) => "**missed**",
                None => "reported",
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {verdict} |",
                figure.pair, figure.setting, figure.measured, figure.target
            );
        }
        out.push('\n');
    }
    out
}
