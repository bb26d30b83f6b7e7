//! The source cases, each a public async function over a [`SourceLog`],
//! one file per family; [`source_tests!`](crate::source_tests) makes a named test of each.

use std::time::Duration;

use crate::Failure;

mod concurrency;
mod growth;
mod head;
mod inputs;
mod reads;
mod waking;

pub use concurrency::*;
pub use growth::*;
pub use head::*;
pub use inputs::*;
pub use reads::*;
pub use waking::*;

use super::SourceLog;

/// Sleeps `millis` milliseconds (nothing for 0).
async fn pause(millis: u64) {
    if millis > 0 {
        tokio::time::sleep(Duration::from_millis(millis)).await;
    }
}

/// A payload as text: the kit writes text.
fn text(payload: &[u8]) -> String {
    String::from_utf8_lossy(payload).into_owned()
}

/// The failure, with the seed that replays its run.
fn seeded(failure: Failure, seed: u64) -> Failure {
    Failure::new(format!(
        "{}\n(CHECKPOINT_SEED={seed} replays this run's random choices)",
        failure.message()
    ))
}

/// Appends `payload` to `partition` in a transaction of its own and commits it.
async fn commit_one<L: SourceLog>(log: &L, partition: u32, payload: &str) -> Result<(), Failure> {
    let mut tx = log.begin().await?;
    tx.append(partition, "kit", payload.as_bytes()).await?;
    tx.commit().await?;
    Ok(())
}

/// Appends `payload` to `partition` in a transaction of its own and rolls it back, where the
/// log can (a log that cannot gets nothing).
async fn roll_back_one<L: SourceLog>(
    log: &L,
    partition: u32,
    payload: &str,
) -> Result<(), Failure> {
    if log.rolls_back() {
        let mut tx = log.begin().await?;
        tx.append(partition, "kit", payload.as_bytes()).await?;
        tx.rollback().await?;
    }
    Ok(())
}
