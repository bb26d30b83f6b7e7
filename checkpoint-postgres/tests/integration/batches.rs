//! save_all: one statement whatever the batch holds, and no deadlock between concurrent
//! batches over the same keys.

use std::collections::BTreeMap;
use std::time::Instant;

use checkpoint_conformance::fresh_group;
use checkpoint_core::{Checkpoint, CheckpointStore};

use crate::support::{self, SplitMix64};

/// The position of every key of a group, as the store lists it.
type Positions = BTreeMap<(String, u32), u64>;

/// Folds `batch` into `expected`: each key at the highest position saved for it.
fn keep_highest(expected: &mut Positions, batch: &[Checkpoint]) {
    for checkpoint in batch {
        let entry = expected
            .entry((checkpoint.subscription.clone(), checkpoint.partition))
            .or_insert(0);
        *entry = checkpoint.position.max(*entry);
    }
}

/// Every checkpoint of `group`, listed, by key.
async fn positions(store: &impl CheckpointStore, group: &str) -> Positions {
    store
        .list(group)
        .await
        .unwrap()
        .into_iter()
        .map(|c| ((c.subscription, c.partition), c.position))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_batch_with_repeated_keys_in_any_order_is_saved() {
    let store = support::store().await;
    let group = fresh_group("large-batch");
    let mut random = SplitMix64(7);
    let mut batch: Vec<Checkpoint> = (0..25_000u32)
        .map(|i| {
            Checkpoint::new(
                format!("sub-{}", i % 37),
                i % 271, // 37 × 271 = 10,027 keys, most repeated
                random.below(1_000_000),
            )
        })
        .collect();
    random.shuffle(&mut batch);
    let mut expected = Positions::new();
    keep_highest(&mut expected, &batch);
    store.save_all(&group, &batch).await.unwrap();
    assert_eq!(positions(&store, &group).await, expected);
}

/// 8 batches of 2,000 overlapping keys in shuffled orders, all at once, several rounds: none
/// fails (a deadlock would abort one of them), and every key ends at the highest position any
/// batch saved for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_overlapping_batches_never_deadlock() {
    let store = support::store().await;
    let group = fresh_group("concurrent-batches");
    let keys: Vec<(String, u32)> = (0..2_000u32)
        .map(|i| (format!("sub-{}", i % 50), i / 50))
        .collect();
    let mut expected = Positions::new();
    for round in 0..5u64 {
        let mut tasks = Vec::new();
        for worker in 0..8u64 {
            let mut random = SplitMix64(round * 100 + worker);
            let mut batch: Vec<Checkpoint> = keys
                .iter()
                .map(|(subscription, partition)| {
                    Checkpoint::new(subscription.clone(), *partition, random.below(10_000))
                })
                .collect();
            random.shuffle(&mut batch);
            keep_highest(&mut expected, &batch);
            let store = store.clone();
            let group = group.clone();
            tasks.push(tokio::spawn(
                async move { store.save_all(&group, &batch).await },
            ));
        }
        for task in tasks {
            task.await.unwrap().unwrap_or_else(|error| {
                panic!("a concurrent batch failed in round {round}: {error:?}")
            });
        }
    }
    assert_eq!(positions(&store, &group).await, expected);
}

/// Not a pass/fail figure: prints how long one `save_all` of 10,000 takes against 10,000
/// sequential `save`s on the same server (run with `--nocapture` to see it). It asserts only
/// that both end in the same state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timing_save_all_against_sequential_saves() {
    let store = support::store().await;
    let batch: Vec<Checkpoint> = (0..10_000u32)
        .map(|i| Checkpoint::new(format!("sub-{}", i % 100), i / 100, u64::from(i)))
        .collect();
    // Warm up the statements on the pool's connection.
    let warm = fresh_group("timing-warm");
    store.save(&warm, "s", 0, 1).await.unwrap();
    store.save_all(&warm, &batch[..10]).await.unwrap();

    let batched = fresh_group("timing-batch");
    let started = Instant::now();
    store.save_all(&batched, &batch).await.unwrap();
    let batch_time = started.elapsed();

    let sequential = fresh_group("timing-sequential");
    let started = Instant::now();
    for checkpoint in &batch {
        store
            .save(
                &sequential,
                &checkpoint.subscription,
                checkpoint.partition,
                checkpoint.position,
            )
            .await
            .unwrap();
    }
    let sequential_time = started.elapsed();
    println!(
        "save_all of 10,000: {batch_time:?}; 10,000 sequential saves: {sequential_time:?} \
         ({:.0}x)",
        sequential_time.as_secs_f64() / batch_time.as_secs_f64()
    );
    let mut a = store.list(&batched).await.unwrap();
    let mut b = store.list(&sequential).await.unwrap();
    a.sort();
    b.sort();
    assert_eq!(a, b);
    assert_eq!(a.len(), 10_000);
}
