//! A fleet for the operator's tools to look at: four subscriptions of one group, each in its
//! own process, over a log that keeps growing, each in a state an operator must tell apart.
//! Run it in one terminal and `checkpoint status operators --watch` (the command it prints)
//! in another.
//!
//! ```text
//! cargo run -p checkpoint-examples --bin operator_fleet                  # SQLite files in a temporary directory
//! cargo run -p checkpoint-examples --bin operator_fleet -- --dir /tmp/ops --seconds 120
//! cargo run -p checkpoint-examples --features postgres,source-postgres --bin operator_fleet -- \
//!     --store postgres://postgres@127.0.0.1:5432/test --source postgres://postgres@127.0.0.1:5432/test
//! ```
//!
//! The supervisor (the default mode) creates a log of 4 partitions (SQLite: `log.sqlite3` in
//! `--dir`, the store in `store.sqlite3` beside it, two files so that the writers and the
//! children's checkpoints and leases do not queue for one write lock; PostgreSQL: the table
//! `operator_fleet_events`), appends 20 entries a second to each partition until it stops,
//! and starts one child process per subscription of the group (`--group`, default
//! `operators`), each the same binary with `--child NAME`, leases of 2 s:
//!
//! | subscription | its handler | what `checkpoint status --watch` and `check` say |
//! | --- | --- | --- |
//! | `steady` | returns at once | caught up (or keeping up) on every partition |
//! | `backlog` | 100 ms per entry, one at a time: 10 a second of the 20 | falling behind everywhere |
//! | `stuck` | returns at once, but never on partition 2 from its 40th entry | `stuck/2` stalled, the others fine |
//! | `killed` | returns at once; SIGKILLed after 4 s | stopped everywhere once its leases expire |
//!
//! The writers append in bursts (26 entries to each partition every 1.3 s, a transaction each),
//! so that a handler that keeps up is seen caught up (lag 0) in most samples: soon after each
//! burst it has handled everything and its checkpoint is written (every 200 ms). A steady trickle would
//! leave a lag of a few entries in every sample, and noise in it could read as a growing lag
//! (falling behind: lag above 0 in every sample of the window, and growing). The period is no
//! divisor of the monitor's 1 or 2 s, so successive samples fall at different points of it:
//! 5 samples 1 s apart fall 0, 0.08, 0.31, 0.54 and 0.77 of a period after a burst, and all of
//! them see a lag only when handling a burst and writing its checkpoint takes over 1 s. (With
//! 700 ms bursts, first tried, the latest sample falls 0.86 of a period after one: 0.6 s was
//! enough, and on a machine loaded by two busy loops `steady` was once seen behind.)
//!
//! Once the scenario stands (the killed process's leases expired, every other subscription
//! holding its 4 partitions, `stuck` stuck), and 3 s later, the supervisor prints `ready` on a
//! line of its own. It runs until SIGTERM or Ctrl-C (or `--seconds N`), then kills its children
//! and exits 0. A child whose supervisor is gone (its stdin closes) exits too.

mod child;
mod supervisor;
mod writer;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const PARTITIONS: u32 = 4;
/// Short, so that the killed process's partitions are seen stopped 2 s after the kill.
const LEASE: Duration = Duration::from_secs(2);
/// The subscriptions, each in a process of its own.
const SUBSCRIPTIONS: [&str; 4] = ["steady", "backlog", "stuck", "killed"];
/// The partition `stuck` stops on, and the entry (its number in the partition, from 0) from
/// which its handler never returns: the 40th, at position 40 in an SQLite log (positions from 1,
/// dense), further in a PostgreSQL one (sparse positions).
const STUCK_PARTITION: u32 = 2;
const STUCK_AT: u64 = 39;

/// What `--help` prints.
const USAGE: &str =
    "usage: operator_fleet [--dir DIR] [--store URL --source URL] [--group NAME] [--seconds N]
  --dir DIR        where the SQLite store and log go (default: a new temporary directory)
  --store, --source  postgres://… for both (features postgres,source-postgres) instead of SQLite
  --group NAME     the group (default operators)
  --seconds N      stop after N seconds (default: at SIGTERM or Ctrl-C)";

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    // Flags and their values alternate; anything else is a typo, not a default.
    let known = [
        "--dir",
        "--store",
        "--source",
        "--group",
        "--seconds",
        "--child",
        "--log",
    ];
    if let Some(unknown) = args
        .iter()
        .step_by(2)
        .find(|a| !known.contains(&a.as_str()))
    {
        eprintln!("operator_fleet: unknown argument {unknown:?}\n{USAGE}");
        return ExitCode::from(2);
    }
    let value_of = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let result = match value_of("--child") {
        Some(name) => match ["--store", "--source", "--log", "--group"].map(value_of) {
            [Some(store), Some(source), Some(log), Some(group)] => {
                child::run(child::ChildArgs {
                    name,
                    store,
                    source,
                    log,
                    group,
                })
                .await
            }
            _ => Err("--child needs --store, --source, --log and --group".into()),
        },
        None => match value_of("--seconds").map(|s| s.parse::<u64>()) {
            Some(Err(error)) => Err(format!("--seconds: {error}").into()),
            seconds => {
                supervisor::run(supervisor::Options {
                    dir: value_of("--dir").map(PathBuf::from),
                    store: value_of("--store"),
                    source: value_of("--source"),
                    group: value_of("--group").unwrap_or_else(|| "operators".to_owned()),
                    run_for: seconds.and_then(Result::ok).map(Duration::from_secs),
                })
                .await
            }
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("operator_fleet failed: {error}");
            ExitCode::FAILURE
        }
    }
}
