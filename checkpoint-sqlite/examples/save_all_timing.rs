//! Measures `save_all` of 10,000 checkpoints against 10,000 sequential `save` calls, on a
//! fresh database file with the default settings (WAL, `synchronous = FULL`).
//!
//! ```text
//! cargo run -p checkpoint-sqlite --release --example save_all_timing
//! ```
//!
//! Pass `normal` as the argument to measure with `synchronous = NORMAL` instead.

use std::time::Instant;

use checkpoint_core::{Checkpoint, CheckpointStore, Error};
use checkpoint_sqlite::SqliteCheckpointStore;
use sqlx::sqlite::SqliteSynchronous;

const COUNT: u32 = 10_000;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Error> {
    let normal = std::env::args().nth(1).as_deref() == Some("normal");
    let path = std::env::temp_dir().join(format!(
        "checkpoint-sqlite-timing-{}.db",
        std::process::id()
    ));
    let mut options = SqliteCheckpointStore::connect_options(&path);
    if normal {
        options = options.synchronous(SqliteSynchronous::Normal);
    }
    let store = SqliteCheckpointStore::open_with(options).await?;
    store.migrate().await?;

    let batch: Vec<Checkpoint> = (0..COUNT)
        .map(|partition| Checkpoint::new("orders", partition, u64::from(partition) + 1))
        .collect();
    // Warm up: the first statement prepares and caches it.
    store.save_all("warm-up", &batch[..10]).await?;
    store.save("warm-up", "s", 0, 1).await?;

    let started = Instant::now();
    store.save_all("batch", &batch).await?;
    let batched = started.elapsed();

    let started = Instant::now();
    for checkpoint in &batch {
        store
            .save(
                "single",
                &checkpoint.subscription,
                checkpoint.partition,
                checkpoint.position,
            )
            .await?;
    }
    let single = started.elapsed();

    assert_eq!(store.list("batch").await?.len(), COUNT as usize);
    assert_eq!(store.list("single").await?.len(), COUNT as usize);
    println!(
        "synchronous = {}: save_all of {COUNT}: {batched:?}; {COUNT} sequential saves: {single:?} ({:?} each)",
        if normal { "NORMAL" } else { "FULL" },
        single / COUNT,
    );
    store.pool().close().await;
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    Ok(())
}
