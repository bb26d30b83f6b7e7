//! The lease handover example as a test: worker processes killed, frozen, stopped gracefully
//! and joined by new ones, on SQLite always, on PostgreSQL and Redis when their features are
//! on. Each case runs the built example binary and reads its `key=value` summary.
//!
//! A case whose feature is on needs its server: it fails, naming the variable, when the
//! variable is unset. `scripts/test.sh` runs the PostgreSQL and Redis cases with
//! `--features all` and the servers' variables set.
//!
//! The cases run in parallel (each in its own group, its own files): the workers mostly wait
//! on their handlers' sleeps, and three runs at once on 2 cores were measured to keep every
//! lease (no loss that no step caused), in about the time of one.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// Runs the example on `store` (`None`: its own SQLite file) and checks its summary.
fn run_example(store: Option<&str>) {
    let dir = std::env::temp_dir().join(format!(
        "checkpoint-processes-{}-{}",
        std::process::id(),
        store.map_or("sqlite", |s| s.split(':').next().unwrap_or("store"))
    ));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let summary_path = dir.join("summary.txt");
    let mut command = Command::new(env!("CARGO_BIN_EXE_lease_handover"));
    command.arg("--summary").arg(&summary_path);
    match store {
        Some(store) => command.args(["--store", store]),
        None => command.arg("--store").arg(format!(
            "sqlite:{}",
            dir.join("checkpoints.sqlite3").display()
        )),
    };
    let output = command.output().expect("the lease_handover example runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    // Shown by cargo for a failing test, and with --nocapture.
    println!("{stdout}");
    eprintln!("{stderr}");
    assert!(
        output.status.success(),
        "the example failed ({}): {stderr}",
        output.status
    );
    let summary = read_summary(&summary_path);
    check(&summary);
    let _ = std::fs::remove_dir_all(&dir);
}

fn read_summary(path: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|error| {
        panic!(
            "the example wrote no summary at {}: {error}",
            path.display()
        )
    });
    text.lines()
        .filter_map(|line| line.split_once('='))
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .collect()
}

fn number(summary: &BTreeMap<String, String>, key: &str) -> u64 {
    summary
        .get(key)
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(|| panic!("the summary has no number {key}: {summary:?}"))
}

/// All entries completed, none skipped, nothing redone after a graceful stop, no zombie act,
/// every checkpoint at the end of its log; the redos after the kill and the freeze printed.
fn check(summary: &BTreeMap<String, String>) {
    let entries = number(summary, "entries");
    assert!(entries > 0, "{summary:?}");
    assert_eq!(
        number(summary, "completed"),
        entries,
        "every entry completed: {summary:?}"
    );
    assert_eq!(
        number(summary, "missing"),
        0,
        "no entry skipped: {summary:?}"
    );
    assert_eq!(
        number(summary, "outside"),
        0,
        "no position outside the log: {summary:?}"
    );
    assert_eq!(
        number(summary, "redone_graceful"),
        0,
        "nothing redone after a graceful stop: {summary:?}"
    );
    assert_eq!(
        number(summary, "zombie_acts"),
        0,
        "the frozen worker did not act on its old leases: {summary:?}"
    );
    assert_eq!(
        number(summary, "checkpoints_at_end"),
        number(summary, "partitions"),
        "every stored checkpoint at the end of its log: {summary:?}"
    );
    assert_eq!(number(summary, "violations"), 0, "{summary:?}");
    // Counted, not asserted: how many depends on where the kill and the freeze fall between
    // two checkpoint writes (0 when right after one).
    let (killed, frozen) = (
        number(summary, "redone_killed"),
        number(summary, "redone_frozen"),
    );
    let completions = number(summary, "completions");
    assert_eq!(
        completions,
        entries + killed + frozen,
        "every extra completion is a redo counted: {summary:?}"
    );
    println!(
        "{}: {entries} entries, redone after the kill {killed}, after the freeze {frozen}, after graceful stops 0; {} s",
        summary.get("store").map_or("?", String::as_str),
        summary.get("seconds").map_or("?", String::as_str),
    );
}

/// The server's URL from `variable`; a case whose feature is on fails without it.
#[cfg(any(feature = "postgres", feature = "redis"))]
fn server(variable: &str, feature: &str) -> String {
    std::env::var(variable).unwrap_or_else(|_| {
        panic!(
            "{variable} is not set: the `{feature}` feature is on, so this case needs its server \
             (scripts/test.sh sets it; or run without --features {feature})"
        )
    })
}

#[test]
fn on_sqlite() {
    run_example(None);
}

#[cfg(feature = "postgres")]
#[test]
fn on_postgres() {
    run_example(Some(&server("DATABASE_URL", "postgres")));
}

#[cfg(feature = "redis")]
#[test]
fn on_redis() {
    run_example(Some(&server("REDIS_URL", "redis")));
}
