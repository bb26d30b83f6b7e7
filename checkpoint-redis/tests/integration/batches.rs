//! `save_all` in chunks: the smallest and largest chunk sizes, and invalid ones refused; on the
//! single server and on the cluster. On the single server, `save_all` of 10,000 timed against
//! sequential saves.

use std::time::Instant;

use checkpoint_conformance::fresh_group;
use checkpoint_core::{Checkpoint, CheckpointStore};
use checkpoint_redis::RedisCheckpointStore;

use crate::support::{Conn, single_store};

crate::on_single_and_cluster!(save_all_at_the_smallest_and_largest_chunks);

async fn save_all_at_the_smallest_and_largest_chunks<C: Conn>(store: &RedisCheckpointStore<C>) {
    let largest = checkpoint_redis::MAX_SAVE_ALL_CHUNK;
    for chunk in [1, 7, largest] {
        let chunked = store
            .clone()
            .with_save_all_chunk(chunk)
            .expect("a valid chunk size");
        let group = fresh_group("redis-chunks");
        // Every entry is new (one HSET of 2 × chunk values) and then every entry moves.
        let count = if chunk == largest {
            largest
        } else {
            3 * chunk + 1
        };
        for offset in [1, 2] {
            let batch: Vec<Checkpoint> = (0..count)
                .map(|i| Checkpoint::new("s", i as u32, (1 << 60) + i as u64 + offset))
                .collect();
            chunked.save_all(&group, &batch).await.expect("save_all");
            let mut listed = store.list(&group).await.expect("list");
            listed.sort();
            assert_eq!(listed, batch, "chunk {chunk}");
        }
    }
    for invalid in [0, largest + 1] {
        let error = store
            .clone()
            .with_save_all_chunk(invalid)
            .expect_err("an invalid chunk size");
        assert!(error.invalid_input().is_some(), "{invalid}: {error:?}");
    }
}

/// Measures save_all of 10,000 against 10,000 sequential saves (printed, not asserted), and
/// checks that both stored everything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timing_save_all_against_sequential_saves() {
    let store = single_store().await;
    let batch: Vec<Checkpoint> = (0..10_000u32)
        .map(|i| Checkpoint::new(format!("s{}", i % 10), i, u64::from(i) + 1))
        .collect();
    let bulk = fresh_group("redis-timing-bulk");
    let started = Instant::now();
    store.save_all(&bulk, &batch).await.expect("save_all");
    let bulk_time = started.elapsed();
    let one_by_one = fresh_group("redis-timing-single");
    let started = Instant::now();
    for checkpoint in &batch {
        store
            .save(
                &one_by_one,
                &checkpoint.subscription,
                checkpoint.partition,
                checkpoint.position,
            )
            .await
            .expect("save");
    }
    let sequential_time = started.elapsed();
    eprintln!(
        "10,000 checkpoints: save_all {bulk_time:?}, 10,000 sequential saves {sequential_time:?}"
    );
    for group in [&bulk, &one_by_one] {
        let mut listed = store.list(group).await.expect("list");
        listed.sort();
        let mut expected = batch.clone();
        expected.sort();
        assert_eq!(listed, expected);
    }
}
