//! The operations API on Redis, beyond the kit's cases (`kit::*::admin`): `groups` over more
//! than one `SCAN` page and every master of a cluster, names that are glob patterns or hold
//! `:` (the operator's scripts find a subscription's fields with `HSCAN … MATCH`), the race of
//! zombie saves against a retire, the replica acknowledgement of the operator's writes, a
//! large `start_at`, and the round trips.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use checkpoint_conformance::fresh_group;
use checkpoint_core::{
    Checkpoint, CheckpointAdmin, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint,
};
use checkpoint_redis::{GROUPS_SCAN_COUNT, RedisCheckpointStore, ReplicaAckError};
use tokio::task::JoinSet;

use crate::on_single_and_cluster;
use crate::support::{Conn, cluster_urls, counted_store};

/// The same store under a key prefix of its own, so that `groups` sees only this test's.
fn own_prefix<C: Conn>(store: &RedisCheckpointStore<C>, label: &str) -> RedisCheckpointStore<C> {
    store
        .clone()
        .with_key_prefix(fresh_group(label))
        .expect("a valid prefix")
}

/// Subscription names that are glob patterns, or end like another name after a `:`.
const TRICKY: &[&str] = &[
    "b", "x:b", "0:b", ":", "a*", "ab", "a?", "[a]", "a\\", "*", "a]", "😀", "%7D", "}{",
];

/// More groups than one `SCAN` page holds, with tricky names, some with only a retired
/// subscription, beside keys of the caller's under the same prefix (never groups): `groups`
/// returns exactly the store's, sorted, once each. On a cluster they are spread over every
/// master, so this also shows that `groups` visits each.
async fn groups_pages_over_many_groups<C: Conn>(store: &RedisCheckpointStore<C>) {
    let store = own_prefix(store, "redis-admin-groups");
    let count = GROUPS_SCAN_COUNT + 200;
    let mut expected: BTreeSet<String> = (0..count).map(|i| format!("g{i:05}")).collect();
    expected.extend(
        [
            "a}b{c",
            "%7D",
            "%25",
            "{",
            "}",
            "a:b",
            "😀{}",
            ":retired",
            "x}:retired",
            "*",
            "[a]",
        ]
        .map(str::to_owned),
    );
    let groups: Vec<String> = expected.iter().cloned().collect();
    let mut tasks = JoinSet::new();
    for (worker, chunk) in groups.chunks(groups.len().div_ceil(8)).enumerate() {
        let store = store.clone();
        let chunk = chunk.to_vec();
        tasks.spawn(async move {
            for (i, group) in chunk.iter().enumerate() {
                if (worker + i) % 5 == 0 {
                    // Only a retired subscription: still a group.
                    store.retire(group, "old").await.expect("retire");
                } else {
                    store.save(group, "s", 0, 1).await.expect("save");
                }
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.expect("a writer");
    }
    // A group whose only checkpoint was retired and purged is gone.
    store.save("gone", "s", 0, 1).await.expect("save");
    store.retire("gone", "s").await.expect("retire");
    store.purge("gone", "s").await.expect("purge");
    // Keys of the caller's under the prefix, shaped almost like the store's.
    let mut connection = store.connection();
    for key in [
        format!("{}:view", store.group_key("g00001").expect("key")),
        format!("{}x", store.group_key("foreign").expect("key")),
        format!("{}:{{%41}}", store.key_prefix()),
        format!("{}:plain", store.key_prefix()),
    ] {
        let () = redis::cmd("SET")
            .arg(&key)
            .arg("v")
            .query_async(&mut connection)
            .await
            .expect("SET of a key of the caller's");
    }

    let found = store.groups().await.expect("groups");
    let expected: Vec<String> = expected.into_iter().collect();
    assert_eq!(found.len(), expected.len());
    assert_eq!(found, expected);
}

/// Each master of the cluster holds keys of the groups above: `groups` did not just ask one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_groups_come_from_every_master() {
    let store = own_prefix(
        &crate::support::cluster_store().await,
        "redis-admin-masters",
    );
    let groups: Vec<String> = (0..64).map(|i| format!("m{i}")).collect();
    for group in &groups {
        store.save(group, "s", 0, 1).await.expect("save");
    }
    let pattern = format!("{}:*", store.key_prefix());
    let mut masters_with_keys = 0;
    for url in cluster_urls() {
        let mut node = redis::Client::open(url.as_str())
            .expect("a node URL")
            .get_multiplexed_async_connection()
            .await
            .expect("connecting to a node");
        let role: Vec<redis::Value> = redis::cmd("ROLE")
            .query_async(&mut node)
            .await
            .expect("ROLE");
        if !matches!(role.first(), Some(redis::Value::BulkString(r)) if r == b"master") {
            continue;
        }
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(&pattern)
            .query_async(&mut node)
            .await
            .expect("KEYS");
        if !keys.is_empty() {
            masters_with_keys += 1;
        }
    }
    assert!(
        masters_with_keys >= 2,
        "the groups landed on {masters_with_keys} master(s)"
    );
    assert_eq!(store.groups().await.expect("groups"), {
        let mut sorted = groups;
        sorted.sort();
        sorted
    });
}

/// Retiring one name deletes its checkpoints only, whatever the other names look like to
/// `HSCAN … MATCH`; start_at and purge see exactly that name too.
async fn tricky_names_are_retired_alone<C: Conn>(store: &RedisCheckpointStore<C>) {
    let group = format!("{}{{a}}:*", fresh_group("redis-admin-names"));
    let batch: Vec<Checkpoint> = TRICKY
        .iter()
        .flat_map(|s| (0..3).map(move |p| Checkpoint::new(*s, p, u64::from(p) + 10)))
        .collect();
    store.save_all(&group, &batch).await.expect("save_all");
    let mut live: BTreeSet<&str> = TRICKY.iter().copied().collect();
    for &name in TRICKY {
        store.retire(&group, name).await.expect("retire");
        live.remove(name);
        let mut listed: Vec<(String, u32, u64)> = store
            .list(&group)
            .await
            .expect("list")
            .into_iter()
            .map(|c| (c.subscription, c.partition, c.position))
            .collect();
        listed.sort();
        let mut expected: Vec<(String, u32, u64)> = live
            .iter()
            .flat_map(|s| (0..3).map(move |p| ((*s).to_owned(), p, u64::from(p) + 10)))
            .collect();
        expected.sort();
        assert_eq!(listed, expected, "after retiring {name:?}");
        for other in &live {
            assert!(
                matches!(
                    store.start_at(&group, other, &[(9, 1)]).await,
                    Err(Error::Exists { .. })
                ),
                "{other:?} still exists after retiring {name:?}"
            );
            assert!(
                matches!(
                    store.purge(&group, other).await,
                    Err(Error::NotRetired { .. })
                ),
                "{other:?} is live after retiring {name:?}"
            );
        }
    }
    let mut retired: Vec<String> = TRICKY.iter().map(|s| (*s).to_owned()).collect();
    retired.sort();
    assert_eq!(store.retired(&group).await.expect("retired"), retired);
    assert!(store.groups().await.expect("groups").contains(&group));
    for &name in TRICKY {
        store.purge(&group, name).await.expect("purge");
    }
    assert_eq!(
        store.retired(&group).await.expect("retired"),
        Vec::<String>::new()
    );
    assert!(!store.groups().await.expect("groups").contains(&group));
}

/// Zombie writers (saves to partitions that exist and to new ones, batches, claims) run
/// flat out while the subscription is retired: once `retire` has returned, nothing under the
/// name is ever visible again, however long they keep going.
async fn zombie_writes_racing_a_retire_leave_nothing<C: Conn>(store: &RedisCheckpointStore<C>) {
    for round in 0..10u64 {
        let group = fresh_group("redis-admin-zombies");
        store
            .save_all(
                &group,
                &(0..8)
                    .map(|p| Checkpoint::new("z", p, 1))
                    .collect::<Vec<_>>(),
            )
            .await
            .expect("the subscription before its retire");
        store.save(&group, "other", 0, 1).await.expect("another");
        let stop = Arc::new(AtomicBool::new(false));
        let mut zombies = JoinSet::new();
        for worker in 0..4u32 {
            let (store, group, stop) = (store.clone(), group.clone(), stop.clone());
            zombies.spawn(async move {
                let mut i = 0u32;
                let mut refused_claims = 0u32;
                while !stop.load(Ordering::Relaxed) {
                    i += 1;
                    let position = u64::from(i) + 1;
                    let new_partition = 1_000 + worker * 100_000 + i;
                    match i % 4 {
                        0 => store
                            .save(&group, "z", i % 8, position)
                            .await
                            .expect("save"),
                        1 => store
                            .save(&group, "z", new_partition, position)
                            .await
                            .expect("save to a new partition"),
                        2 => store
                            .save_all(
                                &group,
                                &[
                                    Checkpoint::new("z", i % 8, position),
                                    Checkpoint::new("z", new_partition, position),
                                ],
                            )
                            .await
                            .expect("save_all"),
                        _ => match store
                            .claim(
                                &group,
                                "z",
                                new_partition,
                                Fingerprint::from_bytes([1; 32]),
                                0,
                            )
                            .await
                        {
                            Ok(_) => {}
                            Err(Error::Retired { .. }) => refused_claims += 1,
                            Err(other) => panic!("claim: {other:?}"),
                        },
                    }
                }
                refused_claims
            });
        }
        tokio::time::sleep(Duration::from_millis(20 + 10 * round)).await;
        store.retire(&group, "z").await.expect("retire");
        let gone = |store: RedisCheckpointStore<C>, group: String| async move {
            let listed = store.list(&group).await.expect("list");
            assert!(
                listed.iter().all(|c| c.subscription != "z"),
                "round {round}: a checkpoint of the retired name is visible: {listed:?}"
            );
            for partition in 0..8 {
                assert_eq!(
                    store.load(&group, "z", partition).await.expect("load"),
                    None
                );
            }
        };
        gone(store.clone(), group.clone()).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        stop.store(true, Ordering::Relaxed);
        let mut refused_claims = 0;
        while let Some(done) = zombies.join_next().await {
            refused_claims += done.expect("a zombie");
        }
        gone(store.clone(), group.clone()).await;
        assert!(
            refused_claims > 0,
            "round {round}: no claim met the tombstone"
        );
        assert_eq!(store.load(&group, "other", 0).await.expect("load"), Some(1));
        assert_eq!(
            store.retired(&group).await.expect("retired"),
            vec!["z".to_owned()]
        );
    }
}

/// `start_at` with more partitions than one `HSET` of the script takes, and its refusals:
/// all of them written, or none.
async fn start_at_of_many_partitions_is_all_or_nothing<C: Conn>(store: &RedisCheckpointStore<C>) {
    let group = fresh_group("redis-admin-start");
    let positions: Vec<(u32, u64)> = (0..5_000u32).map(|p| (p * 7, u64::from(p) << 40)).collect();
    store
        .start_at(&group, "s", &positions)
        .await
        .expect("start_at");
    let mut listed: Vec<(u32, u64)> = store
        .list(&group)
        .await
        .expect("list")
        .into_iter()
        .map(|c| (c.partition, c.position))
        .collect();
    listed.sort();
    assert_eq!(listed, positions);
    store.save(&group, "t", 3, 1).await.expect("save");
    let refused = store.start_at(&group, "t", &positions).await;
    assert!(matches!(refused, Err(Error::Exists { .. })), "{refused:?}");
    assert_eq!(
        store.list(&group).await.expect("list").len(),
        positions.len() + 1
    );
    store.retire(&group, "u").await.expect("retire");
    let refused = store.start_at(&group, "u", &positions).await;
    assert!(matches!(refused, Err(Error::Retired { .. })), "{refused:?}");
    assert_eq!(
        store.list(&group).await.expect("list").len(),
        positions.len() + 1
    );
}

/// The operator's writes wait for replicas like every write: the test servers have none, so
/// asking for one fails with a retryable [`ReplicaAckError`], the write applied; asking for
/// none succeeds.
async fn operator_writes_wait_for_replicas<C: Conn>(store: &RedisCheckpointStore<C>) {
    let group = fresh_group("redis-admin-wait");
    let none = store.clone().with_replica_ack(0, Duration::from_millis(50));
    let one = store.clone().with_replica_ack(1, Duration::from_millis(50));
    let expect_unacknowledged = |what: &str, result: Result<(), Error>| {
        let error = result.expect_err(what);
        assert!(error.is_retryable(), "{what}: {error:?}");
        let source = std::error::Error::source(&error).expect("a source");
        let ack = source
            .downcast_ref::<ReplicaAckError>()
            .unwrap_or_else(|| panic!("{what}: expected a ReplicaAckError, got {error:?}"));
        assert_eq!((ack.requested, ack.acknowledged), (1, 0), "{what}");
    };
    expect_unacknowledged("start_at", one.start_at(&group, "a", &[(0, 5)]).await);
    assert_eq!(store.load(&group, "a", 0).await.expect("load"), Some(5));
    expect_unacknowledged("retire", one.retire(&group, "a").await);
    assert_eq!(
        store.retired(&group).await.expect("retired"),
        vec!["a".to_owned()]
    );
    expect_unacknowledged("purge", one.purge(&group, "a").await);
    assert_eq!(
        store.retired(&group).await.expect("retired"),
        Vec::<String>::new()
    );
    // Refusals write nothing and wait for nothing.
    store.save(&group, "b", 0, 1).await.expect("save");
    let refused = one.start_at(&group, "b", &[(0, 5)]).await;
    assert!(matches!(refused, Err(Error::Exists { .. })), "{refused:?}");
    let refused = one.purge(&group, "b").await;
    assert!(
        matches!(refused, Err(Error::NotRetired { .. })),
        "{refused:?}"
    );
    none.start_at(&group, "c", &[(0, 1)])
        .await
        .expect("start_at with WAIT 0");
    none.retire(&group, "c").await.expect("retire with WAIT 0");
    none.purge(&group, "c").await.expect("purge with WAIT 0");
}

on_single_and_cluster! {
    groups_pages_over_many_groups
    tricky_names_are_retired_alone
    zombie_writes_racing_a_retire_leave_nothing
    start_at_of_many_partitions_is_all_or_nothing
    operator_writes_wait_for_replicas
}

/// One round trip per operation of the API but `groups` (one per `SCAN` page), counted on the
/// wire; and a save under a retired name, ignored by its own script, is still one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_round_trips() {
    let (store, proxy) = counted_store().await;
    let group = fresh_group("redis-admin-round-trips");
    // Warm-up: every script once, so the server has it cached (EVALSHA hits).
    store
        .start_at(&group, "warm", &[(0, 1)])
        .await
        .expect("start_at");
    store.retire(&group, "warm").await.expect("retire");
    store.purge(&group, "warm").await.expect("purge");
    store.save(&group, "warm", 0, 1).await.expect("save");
    store
        .save_all(&group, &[Checkpoint::new("warm", 1, 1)])
        .await
        .expect("save_all");
    store
        .claim(&group, "warm", 2, Fingerprint::from_bytes([3; 32]), 0)
        .await
        .expect("claim");

    let mut measured = Vec::new();
    macro_rules! count {
        ($name:literal, $operation:expr) => {{
            proxy.reset();
            let _ = $operation.await;
            let round_trips = proxy.round_trips();
            measured.push(($name, round_trips));
            assert_eq!(round_trips, 1, "round trips of {}", $name);
        }};
    }
    count!("start_at", store.start_at(&group, "s", &[(0, 5), (1, 6)]));
    count!("start_at (exists)", store.start_at(&group, "s", &[(0, 5)]));
    count!("save", store.save(&group, "s", 0, 7));
    count!("retire", store.retire(&group, "s"));
    count!("save (retired)", store.save(&group, "s", 0, 8));
    count!(
        "save_all (retired)",
        store.save_all(&group, &[Checkpoint::new("s", 2, 1)])
    );
    count!(
        "claim (retired)",
        store.claim(&group, "s", 0, Fingerprint::from_bytes([3; 32]), 0)
    );
    count!("retired", store.retired(&group));
    count!("purge", store.purge(&group, "s"));
    eprintln!("round trips per operation: {measured:?}");
    let listed = store.list(&group).await.expect("list");
    assert!(
        listed.iter().all(|c| c.subscription == "warm"),
        "{listed:?}"
    );
}
