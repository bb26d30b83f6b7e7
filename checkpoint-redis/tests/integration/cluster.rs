//! Checks that only mean something on a cluster.

use checkpoint_conformance::fresh_group;
use checkpoint_core::{CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint};
use checkpoint_redis::{HashWrite, RedisClusterCheckpointStore};

use crate::support::cluster_store;

/// The node (by address) that serves `key`'s slot, asked of the cluster itself.
async fn slot_of(store: &RedisClusterCheckpointStore, key: &str) -> i64 {
    let mut connection = store.connection().clone();
    redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(key)
        .query_async(&mut connection)
        .await
        .expect("CLUSTER KEYSLOT")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_spread_over_slots_and_each_group_keeps_one_slot() {
    let store = cluster_store().await;
    let mut slots = std::collections::BTreeSet::new();
    for i in 0..32 {
        let group = format!(
            "{}{}",
            fresh_group("redis-slots"),
            ["", "}", "{", "{a}"][i % 4]
        );
        let key = store.group_key(&group).expect("a valid group");
        let tag = store.hash_tag(&group).expect("a valid group");
        let slot = slot_of(&store, &key).await;
        assert_eq!(slot, slot_of(&store, &format!("my-read-model:{tag}")).await);
        slots.insert(slot);
        store.save(&group, "s", 0, i as u64).await.expect("save");
        assert_eq!(
            store.load(&group, "s", 0).await.expect("load"),
            Some(i as u64)
        );
    }
    assert!(slots.len() > 1, "32 groups all in one slot: {slots:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn advance_in_a_key_of_another_slot_is_refused_and_changes_nothing() {
    let store = cluster_store().await;
    let group = fresh_group("redis-crossslot");
    store
        .claim(&group, "p", 0, Fingerprint::from_bytes([5; 32]), 1)
        .await
        .expect("claim");
    let own_slot = slot_of(&store, &store.group_key(&group).expect("a valid group")).await;
    let mut foreign = None;
    for i in 0..64 {
        let key = format!("test-foreign-{group}-{i}");
        if slot_of(&store, &key).await != own_slot {
            foreign = Some(key);
            break;
        }
    }
    let foreign = foreign.expect("a key in another slot");
    let error = store
        .advance_in(&group, "p", 0, 1, 2, &[HashWrite::new(&foreign, "f", "v")])
        .await
        .expect_err("a cross-slot write must be refused");
    match &error {
        Error::Backend {
            retryable: false, ..
        } => {}
        other => panic!("expected a non-retryable backend error, got {other:?}"),
    }
    let chain = checkpoint_conformance::error_chain(&error);
    assert!(chain.to_lowercase().contains("crossslot"), "{chain}");
    assert_eq!(store.load(&group, "p", 0).await.expect("load"), Some(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replica_ack_on_a_cluster_without_replicas() {
    use std::time::Duration;

    use checkpoint_redis::ReplicaAckError;

    let store = cluster_store().await;
    let group = fresh_group("redis-cluster-wait");
    // The test cluster has no replicas: asking for none succeeds, asking for one fails.
    let none = store.clone().with_replica_ack(0, Duration::from_millis(50));
    none.save(&group, "s", 0, 1)
        .await
        .expect("save with WAIT 0");
    let one = store.clone().with_replica_ack(1, Duration::from_millis(50));
    let error = one
        .save(&group, "s", 0, 2)
        .await
        .expect_err("no replica can acknowledge");
    let source = std::error::Error::source(&error).expect("a source");
    let ack = source
        .downcast_ref::<ReplicaAckError>()
        .unwrap_or_else(|| panic!("expected a ReplicaAckError, got {error:?}"));
    assert_eq!((ack.requested, ack.acknowledged), (1, 0));
    assert_eq!(store.load(&group, "s", 0).await.expect("load"), Some(2));
}
