//! `list` follows the `HSCAN` cursor over every step of a large group, on the single server
//! and on the cluster.

use checkpoint_conformance::fresh_group;
use checkpoint_core::{Checkpoint, CheckpointStore};
use checkpoint_redis::RedisCheckpointStore;

use crate::support::Conn;

crate::on_single_and_cluster!(list_follows_the_scan_cursor_over_a_large_group);

async fn list_follows_the_scan_cursor_over_a_large_group<C: Conn>(store: &RedisCheckpointStore<C>) {
    // More fields than one HGETALL reads (LIST_HGETALL_MAX), many HSCAN steps
    // (LIST_SCAN_COUNT each) of a real hash table.
    let group = fresh_group("redis-scan");
    let count = checkpoint_redis::LIST_HGETALL_MAX + 7;
    let batch: Vec<Checkpoint> = (0..count)
        .map(|i| Checkpoint::new(format!("s{}", i % 13), i as u32, i as u64 * 3))
        .collect();
    store.save_all(&group, &batch).await.expect("save_all");
    let mut listed = store.list(&group).await.expect("list");
    listed.sort();
    let mut expected = batch;
    expected.sort();
    assert_eq!(listed.len(), count);
    assert_eq!(listed, expected);
}
