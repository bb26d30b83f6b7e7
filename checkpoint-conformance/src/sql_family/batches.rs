//! `save_all` of the SQL family under concurrency.

use std::collections::HashMap;
use std::time::Instant;

use checkpoint_core::{Checkpoint, CheckpointStore};
use checkpoint_sql::Engine;

use super::SqlServer;
use crate::fresh_group;

const KEYS: u32 = 500;

/// Worker `worker`'s batch: every key, at a position whose highest worker varies by key,
/// reversed for odd workers, then every third key again at 0 (the highest of each key must
/// win inside a batch).
fn batch_of(worker: u64) -> Vec<Checkpoint> {
    let mut batch: Vec<Checkpoint> = (0..KEYS)
        .map(|key| {
            let position = (u64::from(key) * 7919 + worker * 104_729) % 1_000_003;
            Checkpoint::new(format!("s{}", key % 5), key, position)
        })
        .collect();
    if worker % 2 == 1 {
        batch.reverse();
    }
    batch.extend(
        (0..KEYS)
            .step_by(3)
            .map(|key| Checkpoint::new(format!("s{}", key % 5), key, 0)),
    );
    batch
}

/// Eight batches over the same keys, in different orders, at the same time, five rounds
/// each (later rounds resend the same batch: idempotent): none fails (SQLite's write lock
/// serialises them under the busy timeout; PostgreSQL and MySQL lock rows in key order, and
/// MySQL runs a deadlock's victim again) and every key ends at its maximum.
///
/// # Panics
///
/// When the store does not keep the clause, like a failed test.
#[allow(clippy::expect_used, clippy::panic)]
pub async fn eight_concurrent_overlapping_batches_all_succeed_and_keep_the_maximum<E: Engine>(
    server: &impl SqlServer<E>,
) {
    let store = server.store().await;
    let group = fresh_group("batch-concurrent");
    let mut expected: HashMap<(String, u32), u64> = HashMap::new();
    let mut tasks = Vec::new();
    let started = Instant::now();
    for worker in 0..8u64 {
        let batch = batch_of(worker);
        for checkpoint in &batch {
            let entry = expected
                .entry((checkpoint.subscription.clone(), checkpoint.partition))
                .or_insert(0);
            *entry = (*entry).max(checkpoint.position);
        }
        let (store, group) = (store.clone(), group.clone());
        tasks.push(tokio::spawn(async move {
            for round in 0..5 {
                store
                    .save_all(&group, &batch)
                    .await
                    .unwrap_or_else(|error| panic!("worker {worker} round {round}: {error:?}"));
            }
        }));
    }
    for task in tasks {
        task.await.expect("a worker panicked");
    }
    eprintln!(
        "8 concurrent overlapping batches of {KEYS} keys, 5 rounds: {:?}",
        started.elapsed()
    );
    let stored: HashMap<(String, u32), u64> = store
        .list(&group)
        .await
        .expect("list")
        .into_iter()
        .map(|checkpoint| {
            (
                (checkpoint.subscription, checkpoint.partition),
                checkpoint.position,
            )
        })
        .collect();
    assert_eq!(stored, expected);
}
