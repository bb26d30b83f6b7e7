//! Lease handover: two owners of one partition, and the old one keeps saving late and lower.
//!
//! ```text
//! cargo run -p checkpoint-examples --bin lease_handover                 # SQLite in a temp folder
//! cargo run -p checkpoint-examples --features redis --bin lease_handover -- --store redis://127.0.0.1:6379
//! ```
//!
//! Owner A holds the lease on partition 0 and saves its progress. It stalls (a long GC pause,
//! a network partition), its lease expires, and owner B takes over from the saved checkpoint.
//! Then A wakes up, still believing it owns the partition, and delivers its late saves. They
//! are all behind what B has completed, so the store ignores them: the checkpoint never moves
//! back, without any fencing token.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use checkpoint_core::CheckpointStore;
use checkpoint_examples::open_store;
use tokio::sync::Notify;

const SUBSCRIPTION: &str = "invoices";
const PARTITION: u32 = 0;

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

type BoxError = Box<dyn std::error::Error + Send + Sync>;

async fn stored(store: &dyn CheckpointStore, group: &str) -> Result<String, BoxError> {
    Ok(match store.load(group, SUBSCRIPTION, PARTITION).await? {
        Some(position) => position.to_string(),
        None => "nothing".to_owned(),
    })
}

async fn run(store_spec: &str) -> Result<(), BoxError> {
    let store = open_store(store_spec).await?;
    let group = format!("lease-{}", std::process::id());
    println!("store: {store_spec}; checkpoint ({group}, {SUBSCRIPTION}, partition {PARTITION})\n");

    let lease_expired = Arc::new(Notify::new());
    let b_done = Arc::new(Notify::new());

    // Owner A: completes 0..=350 and saves every 100; its save of 400 and 450 are still in
    // flight when it stalls.
    let a = {
        let (store, group) = (Arc::clone(&store), group.clone());
        let (lease_expired, b_done) = (Arc::clone(&lease_expired), Arc::clone(&b_done));
        tokio::spawn(async move {
            for position in [100, 200, 300] {
                store
                    .save(&group, SUBSCRIPTION, PARTITION, position)
                    .await?;
                println!(
                    "A saves {position:>4}  → stored {}",
                    stored(&*store, &group).await?
                );
            }
            println!("A stalls (a long pause); its lease expires");
            lease_expired.notify_one();
            b_done.notified().await;
            println!(
                "A wakes up, still thinks it owns the partition, and delivers its late saves:"
            );
            for position in [400, 450] {
                store
                    .save(&group, SUBSCRIPTION, PARTITION, position)
                    .await?;
                println!(
                    "A saves {position:>4}  → stored {} (A is a zombie: ignored)",
                    stored(&*store, &group).await?
                );
            }
            Ok::<_, BoxError>(())
        })
    };

    // Owner B: takes the lease, resumes from the checkpoint, completes up to 900.
    let b = {
        let (store, group) = (Arc::clone(&store), group.clone());
        tokio::spawn(async move {
            lease_expired.notified().await;
            let resume = store
                .load(&group, SUBSCRIPTION, PARTITION)
                .await?
                .unwrap_or(0);
            println!("B takes the lease and resumes at {resume}");
            for position in [500, 700, 900] {
                tokio::time::sleep(Duration::from_millis(10)).await;
                store
                    .save(&group, SUBSCRIPTION, PARTITION, position)
                    .await?;
                println!(
                    "B saves {position:>4}  → stored {}",
                    stored(&*store, &group).await?
                );
            }
            b_done.notify_one();
            Ok::<_, BoxError>(())
        })
    };

    a.await??;
    b.await??;
    let last = store.load(&group, SUBSCRIPTION, PARTITION).await?;
    println!("\nfinal checkpoint: {last:?}");
    if last != Some(900) {
        return Err(format!("the checkpoint moved back: {last:?}, expected Some(900)").into());
    }
    println!("the zombie's late, lower saves never moved it back.");
    Ok(())
}
