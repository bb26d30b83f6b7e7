//! The page at `/`: one self-contained HTML file (inline CSS and script, no external resource)
//! that reads `/api/fleet` every interval and draws the partitions, their verdicts and each
//! subscription's lag over time.
//!
//! What tests and scripts can rely on: `#group`, `#verdict-counts` (a `.count` per verdict
//! with `data-verdict`), `#last-refresh`, `#error` (hidden unless the last refresh failed or
//! the server cannot be reached), `#partitions` with a `tr.partition` per partition
//! (`data-subscription`, `data-partition`, `data-verdict`; cells `td.verdict`,
//! `td.subscription`, `td.partition`, `td.owner`, `td.position`, `td.head`, `td.lag`,
//! `td.rate`, `td.catch-up`, `td.owner-changes`, `td.parked`, `td.evidence`), and
//! `svg.lag-plot` per subscription (`data-subscription`) with a `polyline` per partition
//! (`data-partition`).

/// The page.
pub const PAGE: &str = include_str!("page.html");

#[cfg(test)]
mod tests {
    use super::PAGE;

    #[test]
    fn the_page_loads_nothing_from_elsewhere_and_never_writes_html_from_data() {
        for external in ["src=\"http", "href=\"http", "@import", "url(", "innerHTML"] {
            assert!(!PAGE.contains(external), "{external}");
        }
        assert!(PAGE.contains("fetch(\"api/fleet\""));
    }
}
