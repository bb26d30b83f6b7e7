//! Lease handover between worker processes: several processes own one subscription's
//! partitions through `checkpoint-worker`, and are killed, frozen, stopped gracefully and
//! joined by new ones while they work. At the end, every entry was completed, none was
//! skipped, and only the killed and the frozen worker's entries were done twice.
//!
//! ```text
//! cargo run -p checkpoint-examples --bin lease_handover                 # SQLite in a temp folder
//! cargo run -p checkpoint-examples --features redis --bin lease_handover -- --store redis://127.0.0.1:6379
//! cargo run -p checkpoint-examples --bin lease_handover -- --summary /tmp/summary.txt   # key=value lines
//! cargo run -p checkpoint-examples --bin lease_handover -- --write-delay-ms 700           # slow checkpoint writes
//! cargo run -p checkpoint-examples --bin lease_handover -- --lease-ms 5000               # longer leases
//! ```
//!
//! One binary, two modes. The supervisor (the default) starts worker processes by running
//! itself again with `worker`, each with its own worker id. A synthetic log of 8 partitions of
//! sparse entries is derived the same way in every process. Each worker process runs a
//! `checkpoint_worker::Worker` with a short lease, dispatches each assigned partition's entries
//! in log order to handlers that finish out of order after a small random delay (checking
//! `is_held()` before each dispatch), and appends one line per completed entry to a shared
//! completion log (partition, position, worker, epoch), with `O_APPEND`, one write per line.
//!
//! The scenario, with the lease table (owner and epoch per partition, live workers) printed by
//! the supervisor from its own store client after each step:
//!
//! 1. four workers start and balance: two partitions each;
//! 2. one is killed (SIGKILL): its partitions are taken over once its lease expires;
//! 3. one is frozen (SIGSTOP) until the others took its partitions, then woken up (SIGCONT):
//!    a zombie, which finds out that its leases are gone before it acts, and joins again (on
//!    SQLite, a worker frozen inside a write keeps the file's one write lock and nobody could
//!    take over: the supervisor probes the lock, and then wakes it at once, within the lease's
//!    slack, and freezes it again; `subscription_fleet --freeze-in-write-ms` shows that case);
//! 4. one is stopped gracefully (SIGTERM: the process calls `worker.shutdown().await`): its
//!    partitions are drained and handed over, nothing is redone;
//! 5. two more start and get their share by handover;
//! 6. once every checkpoint is at the end of its log, every worker is stopped gracefully.
//!
//! The verdict: every entry of the log is in the completion log at least once, no other
//! position is; entries completed more than once are charged to the stop that ended the lease
//! of their first completion (killed, frozen, graceful; graceful must be 0); the frozen worker
//! completed nothing under its old leases after it was woken up; no worker that was neither
//! killed nor frozen lost a lease (each worker process logs every `Stop::Lost` it gets and its
//! `stats()` at exit); every stored checkpoint is at the end of its log. Any violation exits
//! non-zero and says which.
//!
//! `--write-delay-ms N` slows every checkpoint write of the worker processes by `N` ms (their
//! committers' periodic writes and the final writes of their handovers; lease requests go at
//! the store's pace): a loaded store must cost no live worker its leases and redo nothing
//! after a graceful stop.
//!
//! `--lease-ms N` sets the lease (default 1,500 ms; renewed every sixth of it). A store whose
//! requests stall longer than the lease (an emulator on a loaded host: moto stalled every
//! worker's renewals for more than 1.5 s at once in two CI runs) costs live workers their
//! leases, which is the contract's safe answer but breaks this run's "no other lease lost":
//! give such a store a lease its stalls fit in.

mod completions;
mod fleet;
mod ownership;
mod slow;
mod supervisor;
mod synthetic;
mod verdict;
mod worker;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const SUBSCRIPTION: &str = "invoices";
/// Short, so that a takeover after a kill or a freeze takes about two seconds.
const DEFAULT_LEASE: Duration = Duration::from_millis(1_500);

/// A sixth of the lease: several tries before the local deadline, and (with the default lease)
/// a handover or a join is seen within a quarter of a second.
fn renew_interval(lease: Duration) -> Duration {
    lease / 6
}
/// The handlers take at most 30 ms: a drain never comes near this.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value_of = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let write_delay = match value_of("--write-delay-ms").map(|ms| ms.parse::<u64>()) {
        None => Duration::ZERO,
        Some(Ok(ms)) => Duration::from_millis(ms),
        Some(Err(error)) => {
            eprintln!("lease_handover: --write-delay-ms takes milliseconds: {error}");
            return ExitCode::FAILURE;
        }
    };
    let lease = match value_of("--lease-ms").map(|ms| ms.parse::<u64>()) {
        None => DEFAULT_LEASE,
        Some(Ok(ms)) if ms >= 600 => Duration::from_millis(ms),
        Some(Ok(ms)) => {
            eprintln!("lease_handover: --lease-ms takes at least 600 ms, not {ms}");
            return ExitCode::FAILURE;
        }
        Some(Err(error)) => {
            eprintln!("lease_handover: --lease-ms takes milliseconds: {error}");
            return ExitCode::FAILURE;
        }
    };
    let result = if args.first().map(String::as_str) == Some("worker") {
        match (
            value_of("--store"),
            value_of("--group"),
            value_of("--worker-id"),
            value_of("--completions"),
        ) {
            (Some(store), Some(group), Some(worker_id), Some(completions)) => {
                let completions = PathBuf::from(completions);
                worker::run(worker::WorkerArgs {
                    store,
                    group,
                    worker_id,
                    completions,
                    write_delay,
                    lease,
                })
                .await
            }
            _ => Err("worker needs --store, --group, --worker-id and --completions".into()),
        }
    } else {
        let options = supervisor::Options {
            store: value_of("--store"),
            summary: value_of("--summary").map(PathBuf::from),
            write_delay,
            lease,
        };
        supervisor::run(options).await
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("lease_handover failed: {error}");
            ExitCode::FAILURE
        }
    }
}
