//! The lease handover example as a test: worker processes killed, frozen, stopped gracefully
//! and joined by new ones, on SQLite always, on PostgreSQL, MySQL and Redis when their features
//! are on; and the same with every checkpoint write slowed to 700 ms (`--write-delay-ms`), on
//! SQLite and Redis: a slow store must cost no live worker its leases (issue 29: the renew
//! waited behind a handover's final write). Each case runs the built example binary and reads
//! its `key=value` summary.
//!
//! A case whose feature is on needs its server: it fails, naming the variable, when the
//! variable is unset. `scripts/test.sh` runs the PostgreSQL, MySQL and Redis cases with
//! `--features all` and the servers' variables set.
//!
//! The cases run in parallel (each in its own group, its own files), as many at once as the
//! test harness runs threads (2 on 2 cores): the workers mostly wait on their handlers' sleeps.
//! Each case takes 12-14 s, 15-18 s with slow writes; all five with `--features all` took
//! 43-46 s on 2 cores, every lease kept (no loss that no step caused) in 8 runs of 8.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

// The checkpoint command's monitor (check, status --watch, serve) on the operator fleet.
#[path = "processes/operators.rs"]
mod operators;

// The Kafka exactly-once cases: beside this file, by path (`tests/*.rs` is a binary each).
#[cfg(feature = "source-kafka")]
#[path = "processes/kafka_exactly_once.rs"]
mod kafka_exactly_once;

// The subscription metrics example scraped, and the Grafana dashboard checked against it.
#[cfg(feature = "metrics")]
#[path = "processes/subscription_metrics.rs"]
mod subscription_metrics;

/// The checkpoint write delay of the slow cases: about three times a renew interval, as in
/// issue 29 (where every live worker lost its leases).
const SLOW_WRITES_MS: u64 = 700;

/// Runs the example on `store` (`None`: its own SQLite file), its workers' checkpoint writes
/// slowed by `write_delay_ms`, and checks its summary. `case` names its files.
fn run_example(case: &str, store: Option<&str>, write_delay_ms: u64) {
    let dir = std::env::temp_dir().join(format!(
        "checkpoint-processes-{}-{case}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let summary_path = dir.join("summary.txt");
    let mut command = Command::new(env!("CARGO_BIN_EXE_lease_handover"));
    command.arg("--summary").arg(&summary_path);
    command.args(["--write-delay-ms", &write_delay_ms.to_string()]);
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
    check(&summary, write_delay_ms);
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
/// no lease lost but the killed and the frozen worker's, every checkpoint at the end of its
/// log; the redos after the kill and the freeze printed.
fn check(summary: &BTreeMap<String, String>, write_delay_ms: u64) {
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
    check_losses(summary, write_delay_ms);
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
        "{}, writes slowed by {write_delay_ms} ms: {entries} entries, redone after the kill {killed}, after the freeze {frozen}, after graceful stops 0; no other loss; {} lease requests failed; {} s",
        summary.get("store").map_or("?", String::as_str),
        number(summary, "lease_failures"),
        summary.get("seconds").map_or("?", String::as_str),
    );
}

/// No lease lost but the killed and the frozen worker's, by the losses the workers logged and
/// by their stats at exit; the write delay applied as asked.
fn check_losses(summary: &BTreeMap<String, String>, write_delay_ms: u64) {
    // Every worker logs each loss its partitions' tasks see, and its stats as it exits: the
    // killed one never exits, the five others do (so the count at exit is not vacuous).
    assert_eq!(
        number(summary, "workers_exited"),
        5,
        "every worker but the killed one exited gracefully and logged its stats: {summary:?}"
    );
    assert_eq!(
        (
            number(summary, "lost_unfaulted"),
            number(summary, "lost_unfaulted_at_exit"),
            number(summary, "redone_lost"),
        ),
        (0, 0, 0),
        "no lease lost by a worker no step killed or froze ({}): {summary:?}",
        summary.get("lost_detail").map_or("", String::as_str)
    );
    // The delay was applied: the example echoes it, and the workers counted the writes it
    // slowed (none without it).
    assert_eq!(
        number(summary, "write_delay_ms"),
        write_delay_ms,
        "{summary:?}"
    );
    assert_eq!(
        number(summary, "slowed_writes") > 0,
        write_delay_ms > 0,
        "writes slowed only when asked: {summary:?}"
    );
}

/// The server's URL from `variable`; a case whose feature is on fails without it.
#[cfg(any(feature = "postgres", feature = "mysql", feature = "redis"))]
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
    run_example("sqlite", None, 0);
}

#[cfg(feature = "postgres")]
#[test]
fn on_postgres() {
    run_example("postgres", Some(&server("DATABASE_URL", "postgres")), 0);
}

#[cfg(feature = "mysql")]
#[test]
fn on_mysql() {
    run_example("mysql", Some(&server("MYSQL_URL", "mysql")), 0);
}

#[cfg(feature = "redis")]
#[test]
fn on_redis() {
    run_example("redis", Some(&server("REDIS_URL", "redis")), 0);
}

#[test]
fn on_sqlite_with_slow_checkpoint_writes() {
    run_example("sqlite-slow", None, SLOW_WRITES_MS);
}

#[cfg(feature = "redis")]
#[test]
fn on_redis_with_slow_checkpoint_writes() {
    run_example(
        "redis-slow",
        Some(&server("REDIS_URL", "redis")),
        SLOW_WRITES_MS,
    );
}

// The subscription fleet (`subscription_fleet`): child processes each running a
// `checkpoint_subscription::Subscription` over one log while the example's writers append to
// it, killed, frozen, stopped gracefully and joined by new ones; one in 200 entries poison
// (parked). On SQLite (store and log in one file) always; on PostgreSQL (store and log, 16
// writers committing out of position order) with `postgres` and `source-postgres`; on Redis
// with a NATS JetStream log with `redis` and `source-nats`. Each case takes 10-12 s.
//
// On SQLite, two more cases freeze a process inside a write transaction on purpose
// (`--freeze-in-write-ms`: it holds the file's one write lock, SIGSTOPped), instead of the
// kill and the child's freeze: past the lease, every child loses its leases and redoes what it
// had not checkpointed (checkpoint-sqlite's crate doc, "Many processes on one file"); within
// the slack between a renew and the holder's deadline, nobody loses anything.

/// The freeze past the lease: the 3.5 s of issue 41 (leases of 2 s).
const FROZEN_IN_WRITE_LONG_MS: u64 = 3_500;

/// The freeze within the slack: under a third of it. The slack is `safe_duration(2 s)` (1,978
/// ms) less the renew interval (2 s / 5 = 400 ms), 1,578 ms (the example reports it as
/// `slack_ms`): a freeze that ends sooner finds every holder's deadline still ahead, and its
/// blocked renew goes through.
const FROZEN_IN_WRITE_SHORT_MS: u64 = 500;

/// Runs the fleet on `store` and `source` (`None`: both in one SQLite file of the case's
/// own), with a process frozen inside a write for `freeze_in_write_ms` if given, checks its
/// summary and returns it.
fn run_fleet(
    case: &str,
    store_and_source: Option<(&str, &str)>,
    freeze_in_write_ms: Option<u64>,
) -> BTreeMap<String, String> {
    let dir = std::env::temp_dir().join(format!(
        "checkpoint-processes-{}-{case}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let file = format!("sqlite:{}", dir.join("fleet.sqlite3").display());
    let (store, source) = store_and_source.unwrap_or((&file, &file));
    let summary_path = dir.join("summary.txt");
    let mut command = Command::new(env!("CARGO_BIN_EXE_subscription_fleet"));
    command.args(["--store", store, "--source", source]);
    command.arg("--summary").arg(&summary_path);
    if let Some(ms) = freeze_in_write_ms {
        command.args(["--freeze-in-write-ms", &ms.to_string()]);
    }
    let output = command
        .output()
        .expect("the subscription_fleet example runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{}", String::from_utf8_lossy(&output.stdout));
    eprintln!("{stderr}");
    assert!(
        output.status.success(),
        "the example failed ({}): {stderr}",
        output.status
    );
    let summary = read_summary(&summary_path);
    check_fleet(&summary);
    let _ = std::fs::remove_dir_all(&dir);
    summary
}

/// Every committed entry handled, none skipped; poison ones never handled and parked exactly
/// (by partition and position, as the log returns them); redone only in the partitions a
/// kill or a freeze hit, and never by children that no step hit alone; every child but the
/// killed one exited gracefully; no lease lost by a child no step hit. The one exception is
/// SQLite's, and only with the evidence that a frozen process held the file's write lock
/// through its freeze: see `check_frozen_in_write`.
fn check_fleet(summary: &BTreeMap<String, String>) {
    let figure = |key: &str| number(summary, key);
    let entries = figure("entries");
    assert!(entries >= 2_000, "{summary:?}");
    assert_eq!(figure("committed"), entries, "{summary:?}");
    assert_eq!(figure("log_differs"), 0, "the log as written: {summary:?}");
    let poison = figure("poison");
    assert!(poison > 0, "some entries are poison: {summary:?}");
    assert_eq!(figure("missing"), 0, "no entry skipped: {summary:?}");
    assert_eq!(figure("handled_ids"), entries - poison, "{summary:?}");
    assert_eq!(figure("poison_handled"), 0, "{summary:?}");
    assert_eq!(figure("unknown_handled"), 0, "{summary:?}");
    assert_eq!(
        figure("parked"),
        poison,
        "parked: the poison entries: {summary:?}"
    );
    assert_eq!(
        (figure("parked_unexpected"), figure("parked_missing")),
        (0, 0),
        "parked at the poison entries' positions: {summary:?}"
    );
    assert_eq!(
        figure("handled_twice_unexplained"),
        0,
        "no redo that neither a kill, a freeze nor a frozen write lock explains: {summary:?}"
    );
    if figure("frozen_in_write") == 0 {
        assert_eq!(
            (
                figure("handled_twice_elsewhere"),
                figure("handled_twice_by_unhit_children"),
                figure("handled_twice_by_frozen_lock"),
                figure("losses_unfaulted"),
            ),
            (0, 0, 0, 0),
            "redone only where a kill or a freeze hit, never after a graceful handover; no lease lost by a child no step hit: {summary:?}"
        );
    } else {
        check_frozen_in_write(summary);
    }
    assert!(
        figure("handled_lines") - figure("handled_ids") >= figure("handled_twice"),
        "a line per run, one more at least per entry handled twice: {summary:?}"
    );
    assert_eq!(
        figure("children_exited") + figure("children_killed"),
        figure("children_started"),
        "every child but the killed one exited gracefully: {summary:?}"
    );
    assert_eq!(figure("violations"), 0, "{summary:?}");
    // Printed, not asserted: how long a fleet takes is the host's speed (10 to 12 s on a quiet
    // 2-core machine), and a bound here would fail a correct run on a loaded one.
    let seconds = summary.get("seconds").map_or("?", String::as_str);
    println!(
        "{} + {}: {entries} entries ({} committed out of position order), {poison} poison and parked, {} handled twice ({} where a kill or a freeze hit, {} behind a process frozen inside a write), steps while writing: {}; frozen in a write: {} ({} of {} probes found the lock held), writers' longest stall {} ms, leases lost by unhit children {}; {seconds} s",
        summary.get("store").map_or("?", String::as_str),
        summary.get("source").map_or("?", String::as_str),
        figure("committed_out_of_order"),
        figure("handled_twice"),
        figure("handled_twice_faulted"),
        figure("handled_twice_by_frozen_lock"),
        figure("steps_while_writing"),
        figure("frozen_in_write"),
        figure("freeze_probes_locked"),
        figure("freeze_probes"),
        figure("writers_longest_stall_ms"),
        figure("losses_unfaulted"),
    );
}

/// A process frozen inside a write transaction held SQLite's write lock: accepted only on an
/// SQLite store, with the evidence (every probe of the lock during the freeze refused, the
/// writers stalled for the freeze), and every redo outside the faults explained by it (first
/// handled by a child that lost a lease, before the lock's release or within a lease after).
fn check_frozen_in_write(summary: &BTreeMap<String, String>) {
    let figure = |key: &str| number(summary, key);
    assert!(
        summary
            .get("store")
            .is_some_and(|store| store.starts_with("sqlite:")),
        "a frozen write lock is SQLite's alone: {summary:?}"
    );
    assert!(
        figure("freeze_probes") >= 5 && figure("freeze_probes_locked") == figure("freeze_probes"),
        "every probe during the freeze found the write lock held: {summary:?}"
    );
    // The lock was held from before the SIGSTOP to after the SIGCONT: no writer committed
    // meanwhile (100 ms for the signals and the scheduler).
    assert!(
        figure("writers_longest_stall_ms") + 100 >= figure("freeze_ms"),
        "the writers stalled through the freeze: {summary:?}"
    );
    assert_eq!(
        figure("handled_twice_by_frozen_lock") + figure("handled_twice_faulted"),
        figure("handled_twice"),
        "every redo explained by a fault or by the frozen lock: {summary:?}"
    );
}

/// The fleet with a process frozen inside a write for `freeze_ms` instead of the kill and the
/// child's freeze: the evidence that it held the lock, the writers stalled through it.
fn run_frozen_in_write(case: &str, freeze_ms: u64) -> BTreeMap<String, String> {
    let summary = run_fleet(case, None, Some(freeze_ms));
    let figure = |key: &str| number(&summary, key);
    assert_eq!(
        figure("frozen_in_write"),
        1,
        "the frozen process held the write lock: {summary:?}"
    );
    assert!(
        figure("freeze_ms") >= freeze_ms,
        "frozen as long as asked: {summary:?}"
    );
    assert_eq!(
        (figure("children_killed"), figure("faulted_partitions")),
        (0, 0),
        "no child killed or frozen: {summary:?}"
    );
    println!(
        "frozen inside a write for {} ms (lease {} ms, slack {} ms): writers stalled {} ms; leases lost by {} children ({} partitions); {} entries redone",
        figure("freeze_ms"),
        figure("lease_ms"),
        figure("slack_ms"),
        figure("writers_longest_stall_ms"),
        figure("children_lost_unfaulted"),
        figure("losses_unfaulted"),
        figure("handled_twice"),
    );
    summary
}

#[test]
fn subscription_on_sqlite() {
    run_fleet("fleet-sqlite", None, None);
}

/// A process frozen inside a write past the lease: nothing lost or skipped, but every child
/// (none of them faulted) loses its leases, and what it handled since its last stored
/// checkpoint is redone: the documented cost of sharing one SQLite file.
#[test]
fn subscription_on_sqlite_frozen_in_write_past_the_lease() {
    let summary = run_frozen_in_write("fleet-sqlite-frozen-long", FROZEN_IN_WRITE_LONG_MS);
    let figure = |key: &str| number(&summary, key);
    assert!(
        figure("freeze_ms") > figure("lease_ms"),
        "frozen past the lease: {summary:?}"
    );
    assert_eq!(
        figure("children_lost_unfaulted"),
        4,
        "every child running through the freeze lost its leases (its renews waited on the lock): {summary:?}"
    );
    assert!(
        figure("losses_unfaulted") >= figure("partitions"),
        "every partition (all held at the freeze) was lost: {summary:?}"
    );
}

/// A process frozen inside a write within the slack: the promise holds, no lease lost and
/// nothing redone anywhere.
#[test]
fn subscription_on_sqlite_frozen_in_write_within_the_slack() {
    let summary = run_frozen_in_write("fleet-sqlite-frozen-short", FROZEN_IN_WRITE_SHORT_MS);
    let figure = |key: &str| number(&summary, key);
    assert!(
        figure("freeze_ms") < figure("slack_ms"),
        "frozen within the slack: {summary:?}"
    );
    assert_eq!(
        (
            figure("losses_unfaulted"),
            figure("handled_twice"),
            figure("handled_lines"),
        ),
        (0, 0, figure("handled_ids")),
        "no lease lost, nothing redone, each entry handled once: {summary:?}"
    );
}

#[cfg(all(feature = "postgres", feature = "source-postgres"))]
#[test]
fn subscription_on_postgres() {
    let url = server("DATABASE_URL", "postgres");
    let summary = run_fleet("fleet-postgres", Some((&url, &url)), None);
    assert!(
        number(&summary, "committed_out_of_order") > 0,
        "16 writers holding their transactions open commit out of position order: {summary:?}"
    );
}

#[cfg(all(feature = "redis", feature = "source-nats"))]
#[test]
fn subscription_on_nats_and_redis() {
    let store = server("REDIS_URL", "redis");
    let source = server("NATS_URL", "source-nats");
    run_fleet("fleet-nats-redis", Some((&store, &source)), None);
}

// The fleet on a Kafka topic, checkpoints in PostgreSQL (in a file of its own: this one is long).
#[cfg(all(feature = "source-kafka", feature = "postgres"))]
#[path = "processes/fleet_kafka.rs"]
mod fleet_kafka;
