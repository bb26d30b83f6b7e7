//! Lease handover on real leases: who owns a partition, what happens when the owner stalls,
//! and a graceful handover that waits for nothing.
//!
//! ```text
//! cargo run -p checkpoint-examples --bin lease_handover                 # SQLite in a temp folder
//! cargo run -p checkpoint-examples --features redis --bin lease_handover -- --store redis://127.0.0.1:6379
//! ```
//!
//! Worker A acquires the lease on partition 0 and saves its progress. It stalls (a long GC
//! pause, a network partition), stops renewing, and its lease expires on the store's clock.
//! Worker B then acquires it, under a higher epoch, and resumes from the saved checkpoint. A
//! wakes up: its renew is refused (`NotHeld`), but saves it had in flight still arrive late.
//! They are behind what B has completed, so the store ignores them: the checkpoint never moves
//! back. A sink of your own can also refuse them by their older epoch, the fencing token.
//! Finally B hands the partition to C gracefully: it writes its last checkpoint and releases
//! the lease, and C acquires it at once, without waiting for an expiry.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use checkpoint_core::lease::holder_deadline;
use checkpoint_core::{CheckpointStore, Error};
use checkpoint_examples::{ExampleStore, open_store};

const SUBSCRIPTION: &str = "invoices";
const PARTITION: u32 = 0;
/// Short, so that the example sees an expiry in about a second.
const LEASE: Duration = Duration::from_millis(800);

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let store_spec = args
        .iter()
        .position(|a| a == "--store")
        .and_then(|i| args.get(i + 1).cloned())
        .unwrap_or_else(|| {
            let path = std::env::temp_dir()
                .join(format!("checkpoint-lease-{}.sqlite3", std::process::id()));
            format!("sqlite:{}", path.display())
        });
    match run(&store_spec).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("lease_handover failed: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn stored(store: &dyn CheckpointStore, group: &str) -> Result<String, BoxError> {
    Ok(match store.load(group, SUBSCRIPTION, PARTITION).await? {
        Some(position) => position.to_string(),
        None => "nothing".to_owned(),
    })
}

/// `owner` acquires the partition, retrying until the current holder's lease expired or was
/// released; its epoch and how long it waited.
async fn acquire(
    store: &dyn ExampleStore,
    group: &str,
    owner: &str,
) -> Result<(u64, Duration), BoxError> {
    let start = Instant::now();
    loop {
        let acquired = store
            .acquire(group, SUBSCRIPTION, owner, &[PARTITION], LEASE)
            .await?;
        if let Some(lease) = acquired.granted.first() {
            return Ok((lease.epoch, start.elapsed()));
        }
        if start.elapsed() > LEASE * 20 {
            return Err(format!("{owner} never got the lease").into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn run(store_spec: &str) -> Result<(), BoxError> {
    let store = open_store(store_spec).await?;
    let store = &*store;
    let group = format!("lease-{}", std::process::id());
    println!(
        "store: {store_spec}; lease of ({group}, {SUBSCRIPTION}, partition {PARTITION}), {LEASE:?} at a time\n"
    );
    let (epoch_a, deadline_a) = a_works_then_stalls(store, &group).await?;
    let epoch_b = b_takes_over(store, &group, deadline_a).await?;
    a_wakes_up(store, &group, epoch_a, epoch_b).await?;
    let epoch_c = b_hands_over_to_c(store, &group).await?;

    let last = store.load(&group, SUBSCRIPTION, PARTITION).await?;
    if last != Some(900) || !(epoch_a < epoch_b && epoch_b < epoch_c) {
        return Err(format!(
            "unexpected end: checkpoint {last:?}, epochs {epoch_a}, {epoch_b}, {epoch_c}"
        )
        .into());
    }
    println!(
        "\nfinal checkpoint: 900; epochs {epoch_a} < {epoch_b} < {epoch_c}: the zombie's late saves never moved it back."
    );
    Ok(())
}

/// A acquires, saves and renews, then stalls: its epoch and its local deadline.
async fn a_works_then_stalls(
    store: &dyn ExampleStore,
    group: &str,
) -> Result<(u64, Instant), BoxError> {
    let sent = Instant::now();
    let (epoch_a, _) = acquire(store, group, "worker-a").await?;
    let mut deadline_a = holder_deadline(sent, LEASE);
    println!("A acquires the lease: epoch {epoch_a}");
    for position in [100, 200, 300] {
        store.save(group, SUBSCRIPTION, PARTITION, position).await?;
        let sent = Instant::now();
        store.renew(group, SUBSCRIPTION, "worker-a", LEASE).await?;
        deadline_a = holder_deadline(sent, LEASE);
        println!(
            "A saves {position:>4}  → stored {}, and renews",
            stored(store, group).await?
        );
    }
    println!("A stalls (a long pause) with saves of 400 and 450 in flight; it stops renewing");
    Ok((epoch_a, deadline_a))
}

/// B acquires once A's lease expired, resumes from the checkpoint and saves: its epoch.
async fn b_takes_over(
    store: &dyn ExampleStore,
    group: &str,
    deadline_a: Instant,
) -> Result<u64, BoxError> {
    let (epoch_b, waited) = acquire(store, group, "worker-b").await?;
    let after_deadline = Instant::now().saturating_duration_since(deadline_a);
    println!(
        "B acquires the lease after {waited:.1?} of trying, {after_deadline:.1?} after A's local deadline: epoch {epoch_b}"
    );
    let resume = store
        .load(group, SUBSCRIPTION, PARTITION)
        .await?
        .unwrap_or(0);
    println!("B resumes at {resume}");
    for position in [500, 700, 900] {
        store.save(group, SUBSCRIPTION, PARTITION, position).await?;
        println!(
            "B saves {position:>4}  → stored {}",
            stored(store, group).await?
        );
    }
    Ok(epoch_b)
}

/// A's renew is refused, and its late saves change nothing.
async fn a_wakes_up(
    store: &dyn ExampleStore,
    group: &str,
    epoch_a: u64,
    epoch_b: u64,
) -> Result<(), BoxError> {
    println!("A wakes up and renews:");
    match store.renew(group, SUBSCRIPTION, "worker-a", LEASE).await {
        Err(Error::NotHeld { .. }) => println!("  refused (NotHeld): A knows it lost the lease"),
        other => return Err(format!("A's renew after B took over: {other:?}").into()),
    }
    for position in [400, 450] {
        store.save(group, SUBSCRIPTION, PARTITION, position).await?;
        println!(
            "A's late save of {position} arrives → stored {} (ignored; a sink fencing by epoch would refuse epoch {epoch_a} < {epoch_b} too)",
            stored(store, group).await?
        );
    }
    Ok(())
}

/// B releases after its last checkpoint, and C acquires at once: C's epoch.
async fn b_hands_over_to_c(store: &dyn ExampleStore, group: &str) -> Result<u64, BoxError> {
    let released = store
        .release(group, SUBSCRIPTION, "worker-b", &[PARTITION])
        .await?;
    println!(
        "\nB hands over gracefully: its last checkpoint is written, then it releases {:?}",
        released.released
    );
    let (epoch_c, waited) = acquire(store, group, "worker-c").await?;
    println!(
        "C acquires the lease after {waited:.1?} (no expiry to wait for): epoch {epoch_c}, resumes at {}",
        stored(store, group).await?
    );
    Ok(epoch_c)
}
