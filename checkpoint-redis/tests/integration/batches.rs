//! `save_all` in chunks: the smallest and largest chunk sizes, and invalid ones refused; on the
//! single server and on the cluster.

use checkpoint_conformance::fresh_group;
use checkpoint_core::{Checkpoint, CheckpointStore};
use checkpoint_redis::RedisCheckpointStore;

use crate::support::Conn;

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
