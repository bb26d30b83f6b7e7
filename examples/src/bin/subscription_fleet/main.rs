//! Subscriptions end to end, in processes, on a real log and a real store: child processes
//! each run a `checkpoint_subscription::Subscription` over one log while writers append to
//! it, and are killed, frozen and stopped gracefully. At the end every committed entry was
//! handled, none skipped; the poison ones were parked, never handled; and only the partitions
//! a kill or a freeze hit had entries handled twice (on SQLite, see below for a freeze inside
//! a write).
//!
//! ```text
//! cargo run -p checkpoint-examples --bin subscription_fleet            # store and log in one SQLite file
//! cargo run -p checkpoint-examples --bin subscription_fleet -- --freeze-in-write-ms 3500   # frozen inside a write
//! cargo run -p checkpoint-examples --features postgres,source-postgres --bin subscription_fleet -- \
//!     --store postgres://postgres@127.0.0.1:5432/test --source postgres://postgres@127.0.0.1:5432/test
//! cargo run -p checkpoint-examples --features redis,source-nats --bin subscription_fleet -- \
//!     --store redis://127.0.0.1:6379 --source nats://127.0.0.1:4222 --summary /tmp/summary.txt
//! cargo run -p checkpoint-examples --features postgres,source-kafka --bin subscription_fleet -- \
//!     --store postgres://postgres@127.0.0.1:5432/test --source kafka://127.0.0.1:9092
//! ```
//!
//! One binary, two modes. The supervisor (the default) creates a log of 6 partitions and
//! appends about 3,000 entries over 10 s with several writers (16 on PostgreSQL, each holding
//! its transaction open 0-20 ms after inserting, so that commits land out of position order).
//! Each payload carries a unique id; one in 200 is poison. The children (`--child`) run a
//! subscription (leases of 2 s; three runs per entry with pauses of 5-20 ms; poison entries
//! parked in the store) whose handler appends `id pid` to the child's own file and fails on
//! poison ids. SIGTERM makes a child call `shutdown()` and exit 0.
//!
//! While the writers append: four children start; one is killed (SIGKILL); one is frozen
//! (SIGSTOP) until the others took its partitions, then woken (SIGCONT); one is stopped
//! (SIGTERM); two more start. Then every child is stopped, and one last child runs until every
//! partition's checkpoint is past its last committed entry.
//!
//! The verdict, printed and written as `key=value` lines (`--summary PATH`): every committed
//! non-poison id handled at least once (`missing=0`); poison ids never (`poison_handled=0`);
//! the store's parked entries are exactly the poison ones, by partition and position, as the
//! log returns them; entries handled twice only in partitions whose owner was killed or
//! frozen (`handled_twice_elsewhere=0`: a redo after a graceful handover breaks it); every
//! child but the killed one exited gracefully, and no child that no step hit lost a lease.
//!
//! On SQLite, store and log share one file and its one write lock. The SIGSTOP may catch the
//! child inside a write (a checkpoint, a renew): it then holds the lock through the freeze,
//! every other process's writes wait (the writers' too), nobody can renew or take a lease,
//! and once the freeze passes the slack (`slack_ms`, 1,578 ms: the children's 2 s lease's
//! safe duration, 1,978 ms, less their renew interval, 400 ms) every child loses its leases
//! and its entries handled since its last stored checkpoint are handled again, in partitions
//! the freeze did not hold too (checkpoint-sqlite's crate doc, "Many processes on one file",
//! says why). The supervisor probes the lock during the freeze (`BEGIN IMMEDIATE`, busy
//! timeout 0, every 50 ms); when every probe found it held for 3.5 s it wakes the child, and
//! the summary says `frozen_in_write=1` (with `freeze_probes`, `freeze_probes_locked` and the
//! writers' longest stall, `writers_longest_stall_ms`). Only then are redos outside the
//! faulted partitions accepted, and only those first handled by a child that lost a lease,
//! before the lock's release or within a lease after it (`handled_twice_by_frozen_lock`);
//! any other is `handled_twice_unexplained`, a broken promise, as is any lease lost by an
//! unhit child without that evidence. On the other stores `frozen_in_write` is always 0.
//!
//! `--freeze-in-write-ms N` (SQLite only) makes it happen on purpose: instead of the kill and
//! the child's freeze, a process of its own (`--lock-holder FILE`) takes the write lock
//! (`BEGIN IMMEDIATE` and an insert), is SIGSTOPped for N ms while the fleet runs, then
//! SIGCONTed, and commits. 3500: every child loses its leases and redoes what it had not
//! checkpointed; 500, within the slack: no lease lost, nothing handled twice.

mod child;
mod evidence;
mod fleet;
mod leases;
mod lock;
mod payload;
mod readback;
mod steps;
mod store;
mod supervisor;
mod verdict;
mod writers;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const SUBSCRIPTION: &str = "fleet";
const PARTITIONS: u32 = 6;
/// Entries the writers append in all, over `WRITE_FOR`.
const ENTRIES: u64 = 3_000;
const WRITE_FOR: Duration = Duration::from_secs(10);
/// Short, so that a takeover after a kill or a freeze takes about two seconds.
const LEASE: Duration = Duration::from_secs(2);
/// How long the `--lock-holder` process waits for the write lock before it takes it.
const LOCK_HOLDER_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The longest freeze of a process holding the store file's write lock that costs no child
/// its leases: a child's last renew that went through before the lock was taken was sent at
/// most one renew interval (`LEASE / DEFAULT_RENEWS_PER_LEASE`, 400 ms: the children keep
/// the worker's default cadence) before it, and the child treats its leases as held until
/// `holder_deadline`, `safe_duration(LEASE)` (1.978 s) after that send. So 1.578 s, less
/// the time a renew takes to get the lock once it is free.
fn slack() -> Duration {
    checkpoint_core::lease::safe_duration(LEASE)
        .saturating_sub(LEASE / checkpoint_worker::DEFAULT_RENEWS_PER_LEASE)
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value_of = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let result = if let Some(file) = value_of("--lock-holder") {
        lock::hold(std::path::Path::new(&file)).await
    } else if args.iter().any(|a| a == "--child") {
        let flags = [
            "--store",
            "--source",
            "--log",
            "--group",
            "--id",
            "--handled",
        ];
        match flags.map(value_of) {
            [
                Some(store),
                Some(source),
                Some(log),
                Some(group),
                Some(id),
                Some(handled),
            ] => {
                let handled = PathBuf::from(handled);
                child::run(child::ChildArgs {
                    store,
                    source,
                    log,
                    group,
                    id,
                    handled,
                })
                .await
            }
            _ => Err(format!("--child needs {}", flags.join(", ")).into()),
        }
    } else {
        match value_of("--freeze-in-write-ms").map(|ms| ms.parse::<u64>()) {
            Some(Err(error)) => Err(format!("--freeze-in-write-ms: {error}").into()),
            freeze => {
                supervisor::run(supervisor::Options {
                    store: value_of("--store"),
                    source: value_of("--source"),
                    summary: value_of("--summary").map(PathBuf::from),
                    freeze_in_write: freeze.and_then(Result::ok).map(Duration::from_millis),
                })
                .await
            }
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("subscription_fleet failed: {error}");
            ExitCode::FAILURE
        }
    }
}
