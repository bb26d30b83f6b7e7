//! The Kafka exactly-once example (`kafka_exactly_once`) as a test: subscription processes
//! with a transactional handler project a Kafka topic into a read model in the checkpoint
//! store's database while a producer appends and the supervisor SIGKILLs a child every
//! 1-1.5 s (at least 5 times); the read model must be the topic exactly once (every record a
//! row with `n = 1` and its payload, nothing else), every checkpoint at its partition's end.
//! On SQLite with `source-kafka`, on PostgreSQL and MySQL with their features too. Each case
//! took 11-14 s alone on 2 cores (3,000 records produced over 10 s), 17-26 s two at a time on a
//! tansu broker (its appends slow down under the load, and the producer with them; the
//! supervisor kills on until the producer is done, 8-19 kills per run).
//!
//! `KAFKA_URL` names the brokers (`eval "$(bash scripts/services/kafka.sh up)"`); a case whose
//! features are on fails without it, and fails when the broker does not answer (the example
//! cannot create its topic), as the other servers' cases do.

use std::collections::BTreeMap;
use std::process::Command;

use super::{number, read_summary};

/// `KAFKA_URL`; with the `source-kafka` feature on, a Kafka case fails without it.
fn kafka_url() -> String {
    std::env::var("KAFKA_URL").unwrap_or_else(|_| {
        panic!(
            "KAFKA_URL is not set: the `source-kafka` feature is on, so this case needs a broker \
             (eval \"$(bash scripts/services/kafka.sh up)\"; or run without --features source-kafka)"
        )
    })
}

/// Runs the example on `store` (`None`: an SQLite file of the case's own) and the broker of
/// `KAFKA_URL`, checks its summary and returns it.
fn run_kafka(case: &str, store: Option<&str>) -> BTreeMap<String, String> {
    let source = kafka_url();
    let dir = std::env::temp_dir().join(format!(
        "checkpoint-processes-{}-{case}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let file = format!("sqlite:{}", dir.join("rows.sqlite3").display());
    let summary_path = dir.join("summary.txt");
    let output = Command::new(env!("CARGO_BIN_EXE_kafka_exactly_once"))
        .args(["--store", store.unwrap_or(&file), "--source", &source])
        .arg("--summary")
        .arg(&summary_path)
        .output()
        .expect("the kafka_exactly_once example runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{}", String::from_utf8_lossy(&output.stdout));
    eprintln!("{stderr}");
    assert!(
        output.status.success(),
        "the example failed ({}): {stderr}",
        output.status
    );
    let summary = read_summary(&summary_path);
    check(&summary);
    let _ = std::fs::remove_dir_all(&dir);
    summary
}

/// The topic as produced; the read model the topic exactly once; every checkpoint at its end;
/// the kills happened, most of them to children that were projecting; every child not killed
/// stopped gracefully.
fn check(summary: &BTreeMap<String, String>) {
    let figure = |key: &str| number(summary, key);
    let produced = figure("produced");
    assert!(produced >= 1_000, "{summary:?}");
    assert_eq!(
        figure("topic"),
        produced,
        "the topic as produced: {summary:?}"
    );
    assert_eq!(figure("topic_differs"), 0, "{summary:?}");
    assert_eq!(figure("rows"), produced, "a row per record: {summary:?}");
    assert_eq!(
        (
            figure("duplicates"),
            figure("missing"),
            figure("extra"),
            figure("wrong_payload"),
        ),
        (0, 0, 0, 0),
        "every record exactly once, with its payload, nothing else: {summary:?}"
    );
    assert_eq!(
        figure("checkpoints_at_end"),
        figure("partitions"),
        "every checkpoint at its partition's end: {summary:?}"
    );
    let kills = figure("kills");
    assert!(kills >= 5, "at least 5 SIGKILLs: {summary:?}");
    // Picked among the children that committed rows since the kill before: with 3 children
    // over 4 partitions, a kill misses only when every child was between two takeovers.
    assert!(
        figure("kills_while_projecting") >= 3,
        "most kills hit a child that was projecting: {summary:?}"
    );
    assert_eq!(
        figure("children_exited") + kills,
        figure("children_started"),
        "every child not killed stopped gracefully: {summary:?}"
    );
    assert_eq!(
        summary.get("ok").map(String::as_str),
        Some("1"),
        "{summary:?}"
    );
    println!(
        "{}: {produced} records, {kills} kills ({} while projecting), {} rows, 0 duplicates, 0 missing; {} s",
        summary.get("store").map_or("?", String::as_str),
        figure("kills_while_projecting"),
        figure("rows"),
        summary.get("elapsed").map_or("?", String::as_str),
    );
}

#[test]
fn kafka_exactly_once_on_sqlite() {
    let summary = run_kafka("kafka-sqlite", None);
    assert_eq!(summary.get("store").map(String::as_str), Some("sqlite"));
}

#[cfg(feature = "postgres")]
#[test]
fn kafka_exactly_once_on_postgres() {
    let url = super::server("DATABASE_URL", "postgres");
    let summary = run_kafka("kafka-postgres", Some(&url));
    assert_eq!(summary.get("store").map(String::as_str), Some("postgres"));
}

#[cfg(feature = "mysql")]
#[test]
fn kafka_exactly_once_on_mysql() {
    let url = super::server("MYSQL_URL", "mysql");
    let summary = run_kafka("kafka-mysql", Some(&url));
    assert_eq!(summary.get("store").map(String::as_str), Some("mysql"));
}
