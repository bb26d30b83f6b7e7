use super::*;
use crate::monitor::report::Requests;

fn partition(subscription: &str, partition: u32, verdict: Verdict, lag: u64) -> PartitionReport {
    PartitionReport {
        subscription: subscription.to_owned(),
        partition,
        owner: Some("worker-with-a-long-name".to_owned()),
        epoch: Some(2),
        position: Some(1_200),
        head: Some(1_199 + lag),
        lag: Some(lag),
        parked: 1,
        rate: Some(12.5),
        catch_up_s: None,
        owner_changes: 3,
        verdict,
        evidence: format!("evidence of {subscription}/{partition}"),
    }
}

fn report() -> Report {
    Report {
        group: "orders".to_owned(),
        taken_at_ms: 1_765_000_000_000 + 3_723_000,
        interval_s: 2.0,
        window_samples: 10,
        refreshes: 3,
        requests: Requests {
            store: 3,
            source: 1,
        },
        partitions: vec![
            partition("a-subscription-with-a-long-name", 2, Verdict::Stalled, 346),
            partition("b", 0, Verdict::FallingBehind, 12_345_678),
            partition("c", 1, Verdict::CaughtUp, 0),
        ],
        ..Report::default()
    }
}

#[test]
fn on_a_terminal_every_line_fits_80_columns() {
    let report = report();
    let lines = render(&report, &clock(report.taken_at_ms), Some(24));
    for line in &lines {
        assert!(line.chars().count() <= 80, "{line:?}");
    }
    assert_eq!(
        lines[0],
        "06:48:43 UTC · orders · 3 partitions: 1 stalled, 1 behind, 1 ok"
    );
    let stalled: Vec<&str> = lines[2].split_whitespace().collect();
    assert_eq!(
        stalled,
        [
            "stalled",
            "a-subscri…/2",
            "worker-w…",
            "1200",
            "1545",
            "346",
            "12",
            "never",
            "3",
            "1"
        ]
    );
    assert!(lines[3].contains("12.35M"), "{}", lines[3]);
    // The evidence of the two that need attention, after a blank line.
    assert_eq!(lines[5], "");
    assert!(
        lines[6].starts_with("stalled    a-subscri…/2 evidence of a-subscription-with-a-long-"),
        "{}",
        lines[6]
    );
    assert_eq!(lines.len(), 8);
}

#[test]
fn off_a_terminal_nothing_is_cut() {
    let report = report();
    let lines = render(&report, "t", None);
    assert!(lines[2].contains("a-subscription-with-a-long-name/2"));
    assert!(lines[2].contains("worker-with-a-long-name"));
}

#[test]
fn a_short_terminal_shows_what_fits_and_says_how_many_more() {
    let mut report = report();
    report.partitions = (0..40)
        .map(|i| partition("s", i, Verdict::CaughtUp, 0))
        .collect();
    let lines = render(&report, "t", Some(12));
    assert!(lines.len() <= 12, "{lines:#?}");
    let more = lines.last().unwrap();
    let shown = lines.iter().filter(|l| l.starts_with("caught up")).count();
    assert_eq!(
        *more,
        format!(
            "… {} more partitions (sorted by attention; widen the window or --subscription)",
            40 - shown
        )
        .chars()
        .take(80)
        .collect::<String>()
    );
}

#[test]
fn the_clock_is_utc() {
    assert_eq!(clock(3_723_000), "01:02:03 UTC");
}
