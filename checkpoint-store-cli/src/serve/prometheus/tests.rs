use super::*;
use crate::monitor::Requests;

fn partition(subscription: &str, partition: u32, verdict: Verdict) -> PartitionReport {
    PartitionReport {
        subscription: subscription.to_owned(),
        partition,
        owner: None,
        epoch: None,
        position: None,
        head: None,
        lag: None,
        parked: 0,
        rate: None,
        catch_up_s: None,
        owner_changes: 0,
        verdict,
        evidence: String::new(),
    }
}

fn report() -> Report {
    let mut stalled = partition("invoices", 2, Verdict::Stalled);
    stalled.owner = Some("worker-a".to_owned());
    stalled.epoch = Some(3);
    stalled.position = Some(1200);
    stalled.head = Some(1234);
    stalled.lag = Some(35);
    stalled.parked = 1;
    stalled.rate = Some(0.0);
    stalled.owner_changes = 2;
    Report {
        group: "billing".to_owned(),
        taken_at_ms: 1_765_000_000_250,
        refreshes: 21,
        requests: Requests {
            store: 3,
            source: 1,
        },
        partitions: vec![stalled, partition("invoices", 0, Verdict::CaughtUp)],
        ..Report::default()
    }
}

fn lines_of<'a>(text: &'a str, metric: &str) -> Vec<&'a str> {
    let prefix = format!("checkpoint_monitor_{metric}{{");
    text.lines().filter(|l| l.starts_with(&prefix)).collect()
}

#[test]
fn known_values_are_samples_and_unknown_ones_are_left_out() {
    let text = render(&report());
    let p2 = r#"group="billing",subscription="invoices",partition="2""#;
    let p0 = r#"group="billing",subscription="invoices",partition="0""#;
    for (metric, expected) in [
        ("partition_position", vec![format!("{{{p2}}} 1200")]),
        ("partition_head", vec![format!("{{{p2}}} 1234")]),
        ("partition_lag", vec![format!("{{{p2}}} 35")]),
        ("partition_rate", vec![format!("{{{p2}}} 0")]),
        ("partition_catch_up_seconds", vec![]),
        (
            "partition_parked",
            vec![format!("{{{p2}}} 1"), format!("{{{p0}}} 0")],
        ),
        (
            "partition_owner_changes",
            vec![format!("{{{p2}}} 2"), format!("{{{p0}}} 0")],
        ),
        (
            "partition_owner_info",
            vec![format!("{{{p2},owner=\"worker-a\"}} 1")],
        ),
    ] {
        let expected: Vec<String> = expected
            .iter()
            .map(|rest| format!("checkpoint_monitor_{metric}{rest}"))
            .collect();
        assert_eq!(lines_of(&text, metric), expected, "{text}");
    }
    for (metric, value) in [
        ("refreshes_total", "21"),
        ("last_refresh_timestamp_seconds", "1765000000.25"),
        ("refresh_failed", "0"),
        ("store_requests_per_refresh", "3"),
        ("source_requests_per_refresh", "1"),
    ] {
        let line = format!("checkpoint_monitor_{metric}{{group=\"billing\"}} {value}");
        assert_eq!(lines_of(&text, metric), [line.as_str()], "{text}");
    }
}

#[test]
fn each_partition_has_one_verdict_at_1_and_the_others_at_0() {
    let text = render(&report());
    let lines = lines_of(&text, "partition_verdict");
    assert_eq!(lines.len(), 2 * Verdict::ALL.len(), "{text}");
    let ones: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.ends_with(" 1"))
        .collect();
    assert_eq!(
        ones,
        [
            r#"checkpoint_monitor_partition_verdict{group="billing",subscription="invoices",partition="2",verdict="stalled"} 1"#,
            r#"checkpoint_monitor_partition_verdict{group="billing",subscription="invoices",partition="0",verdict="caught_up"} 1"#,
        ],
        "{text}"
    );
    assert!(lines.iter().all(|l| l.ends_with(" 0") || l.ends_with(" 1")));
    let counts = lines_of(&text, "partitions");
    assert_eq!(counts.len(), Verdict::ALL.len(), "{text}");
    assert!(
        counts.contains(&r#"checkpoint_monitor_partitions{group="billing",verdict="stalled"} 1"#)
    );
    assert!(
        counts.contains(&r#"checkpoint_monitor_partitions{group="billing",verdict="stopped"} 0"#)
    );
}

#[test]
fn label_values_are_escaped() {
    let mut report = report();
    report.group = "a\\b\"c\nd".to_owned();
    report.partitions[0].owner = Some("w\"1\\\n".to_owned());
    let text = render(&report);
    assert!(
        text.contains(r#"checkpoint_monitor_refresh_failed{group="a\\b\"c\nd"} 0"#),
        "{text}"
    );
    assert!(text.contains(r#",owner="w\"1\\\n"} 1"#), "{text}");
    // Every sample is one line: a raw line feed would have split one.
    for line in text.lines() {
        assert!(
            line.starts_with("# HELP ") || line.starts_with("# TYPE ") || line.starts_with(PREFIX),
            "{line:?}"
        );
    }
}

#[test]
fn every_family_has_help_and_type_before_its_samples_and_once() {
    let mut report = report();
    report.error = Some("the store timed out".to_owned());
    let text = render(&report);
    let mut seen = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("name and type");
            assert!(["gauge", "counter"].contains(&kind), "{line}");
            assert!(!seen.contains(&name.to_owned()), "{name} twice");
            seen.push(name.to_owned());
            current = name.to_owned();
        } else if let Some(rest) = line.strip_prefix("# HELP ") {
            let name = rest.split(' ').next().expect("a name");
            assert!(
                !seen.contains(&name.to_owned()),
                "HELP of {name} after its TYPE"
            );
        } else {
            assert!(
                line.starts_with(&format!("{current}{{")),
                "{line} outside {current}"
            );
        }
    }
    assert_eq!(seen.len(), 15, "{seen:?}");
    assert!(text.contains("checkpoint_monitor_refresh_failed{group=\"billing\"} 1"));
    assert!(text.contains("# TYPE checkpoint_monitor_refreshes_total counter"));
}

#[test]
fn numbers_are_written_as_the_format_reads_them() {
    assert_eq!(number(f64::NAN), "NaN");
    assert_eq!(number(f64::INFINITY), "+Inf");
    assert_eq!(number(f64::NEG_INFINITY), "-Inf");
    assert_eq!(number(0.5), "0.5");
    assert_eq!(number(1e21), "1000000000000000000000");
}
