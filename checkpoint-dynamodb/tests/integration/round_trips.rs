//! Requests per operation, counted on the wire with a proxy in front of the server.
//!
//! The normal save (a checkpoint that exists moving forward, or a save that is behind) is one
//! request; only the first write of a checkpoint takes the create protocol's four (the refused
//! update, the pending put, the tombstone read, the update that makes it visible), and one
//! more, the group's marker, when this store instance has not written that marker yet.
//!
//! The emulator closes the connection after each response, so every request is also a new
//! connection; the proxy counts request→response exchanges either way.

use checkpoint_conformance::fresh_group;
use std::time::Duration;

use checkpoint_core::{
    Checkpoint, CheckpointAdmin, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint,
    LeaseStore,
};

use crate::support::counted_store;

fn fingerprint(byte: u8) -> Fingerprint {
    Fingerprint::from_bytes([byte; 32])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_single_operation_is_one_request() {
    let (store, proxy) = counted_store().await;
    let group = fresh_group("round-trips");

    let count = |what: &str, want: u64| {
        let got = proxy.round_trips();
        assert_eq!(got, want, "requests for {what}");
        eprintln!("{what}: {got} request(s)");
        proxy.reset();
    };

    store.save(&group, "s", 0, 10).await.unwrap();
    count(
        "save of a new key in a group new to this instance (the create protocol: update \
         refused, pending put, tombstone read and the group's marker at once, update that makes \
         it visible)",
        5,
    );
    store.save(&group, "s", 0, 20).await.unwrap();
    count("save ahead", 1);
    store.save(&group, "s", 0, 5).await.unwrap();
    count("save behind (condition fails, not an error)", 1);
    assert_eq!(store.load(&group, "s", 0).await.unwrap(), Some(20));
    count("load", 1);
    assert_eq!(store.load(&group, "s", 1).await.unwrap(), None);
    count("load of an absent key", 1);
    assert_eq!(store.list(&group).await.unwrap().len(), 1);
    count("list of a one-page group", 1);

    assert_eq!(
        store
            .claim(&group, "x", 0, fingerprint(1), 100)
            .await
            .unwrap(),
        100
    );
    count(
        "claim creating the checkpoint (the create protocol, its last update returning the item; \
         the group's marker written already by this instance)",
        4,
    );
    assert_eq!(
        store
            .claim(&group, "x", 0, fingerprint(1), 7)
            .await
            .unwrap(),
        100
    );
    count("claim of an existing checkpoint", 1);
    assert!(matches!(
        store.claim(&group, "x", 0, fingerprint(2), 7).await,
        Err(Error::QueryChanged { .. })
    ));
    count("claim refused with QueryChanged", 1);
    store.advance(&group, "x", 0, 100, 150).await.unwrap();
    count("advance", 1);
    match store.advance(&group, "x", 0, 100, 200).await {
        Err(Error::Moved {
            expected: 100,
            current: Some(150),
        }) => {}
        other => panic!("expected Moved to 150, got {other:?}"),
    }
    count(
        "advance refused with Moved (current position in the same response)",
        1,
    );
    match store.advance(&group, "absent", 0, 1, 2).await {
        Err(Error::Moved {
            expected: 1,
            current: None,
        }) => {}
        other => panic!("expected Moved from an absent checkpoint, got {other:?}"),
    }
    count(
        "advance of an absent checkpoint (no old item in the reply: a consistent read says so)",
        2,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn save_all_is_one_request_per_distinct_key() {
    let (store, proxy) = counted_store().await;
    let group = fresh_group("round-trips-batch");
    // The 60 keys exist first (each created once, with the create protocol's four requests).
    let seed: Vec<Checkpoint> = (0..60u32)
        .map(|i| Checkpoint::new(format!("s{}", i % 4), i, 0))
        .collect();
    store.save_all(&group, &seed).await.unwrap();
    assert_eq!(
        proxy.round_trips(),
        241,
        "four requests per new key, and the group's marker once"
    );
    proxy.reset();
    // 60 distinct keys, 15 of them repeated with a lower and a higher position.
    let mut batch: Vec<Checkpoint> = (0..60u32)
        .map(|i| Checkpoint::new(format!("s{}", i % 4), i, u64::from(i) + 10))
        .collect();
    for i in 0..15u32 {
        batch.push(Checkpoint::new(format!("s{}", i % 4), i, 1));
        batch.push(Checkpoint::new(format!("s{}", i % 4), i, 1_000));
    }
    store.save_all(&group, &batch).await.unwrap();
    let requests = proxy.round_trips();
    eprintln!(
        "save_all of {} entries, 60 distinct keys: {requests} requests",
        batch.len()
    );
    assert_eq!(requests, 60, "one UpdateItem per distinct key");
    proxy.reset();

    let listed = store.list(&group).await.unwrap();
    assert_eq!(listed.len(), 60);
    for checkpoint in listed {
        let want = if checkpoint.partition < 15 {
            1_000
        } else {
            u64::from(checkpoint.partition) + 10
        };
        assert_eq!(checkpoint.position, want, "{checkpoint:?}");
    }

    proxy.reset();
    store.save_all(&group, &[]).await.unwrap();
    assert_eq!(proxy.round_trips(), 0, "an empty batch sends nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operations_and_retired_saves_cost_what_the_crate_doc_says() {
    let (store, proxy) = counted_store().await;
    let group = fresh_group("round-trips-admin");
    let count = |what: &str, want: u64| {
        let got = proxy.round_trips();
        assert_eq!(got, want, "requests for {what}");
        eprintln!("{what}: {got} request(s)");
        proxy.reset();
    };

    store
        .start_at(&group, "old", &[(0, 10), (1, 20), (2, 30)])
        .await
        .unwrap();
    count(
        "start_at of 3 partitions in a group new to this instance (a Query, 3 pending puts, a \
         second Query and the group's marker at once, 3 updates)",
        9,
    );
    store.save(&group, "old", 0, 11).await.unwrap();
    count("save ahead of a checkpoint start_at created", 1);
    assert_eq!(
        store.groups().await.unwrap(),
        vec![group.clone()],
        "the table is the test's own"
    );
    count(
        "groups of a table with one group (a Query of the markers, a Query of 1 item of the \
         group)",
        2,
    );

    store.retire(&group, "old").await.unwrap();
    count(
        "retire of 3 checkpoints (the tombstone put, a Query, 3 updates; the group's marker \
         written already by this instance)",
        5,
    );
    store.save(&group, "old", 1, 99).await.unwrap();
    count(
        "a zombie's save on a retired checkpoint (refused, the old item says retired)",
        1,
    );
    store.save(&group, "old", 7, 99).await.unwrap();
    count(
        "a zombie's save on a partition never saved (refused, pending put, the tombstone read, \
         the item marked retired)",
        4,
    );
    assert_eq!(store.load(&group, "old", 7).await.unwrap(), None);
    proxy.reset();
    assert_eq!(store.retired(&group).await.unwrap(), vec!["old".to_owned()]);
    count("retired of a group", 1);

    store.purge(&group, "old").await.unwrap();
    count(
        "purge of 4 retired items and no lease (a Query, 4 deletes, the Query of the \
         subscription's leases, the tombstone delete)",
        7,
    );
    assert!(store.list(&group).await.unwrap().is_empty());
    proxy.reset();
    store.start_at(&group, "new", &[(0, 1)]).await.unwrap();
    count(
        "start_at of 1 partition in a group whose marker this instance wrote (a Query, a \
         pending put, a second Query, an update)",
        4,
    );

    let other = fresh_group("round-trips-admin-retire");
    store.retire(&other, "never-saved").await.unwrap();
    count(
        "retire of a name with no checkpoint in a group new to this instance (the group's \
         marker, then the tombstone put, a Query)",
        3,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_adopting_a_saved_checkpoint_is_one_request() {
    let (store, proxy) = counted_store().await;
    let group = fresh_group("round-trips-adopt");
    store.save(&group, "s", 0, 10).await.unwrap();
    proxy.reset();
    assert_eq!(
        store
            .claim(&group, "s", 0, fingerprint(1), 0)
            .await
            .unwrap(),
        10
    );
    assert_eq!(
        proxy.round_trips(),
        1,
        "a claim of a monotonic checkpoint sets its fingerprint in its one UpdateItem"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_without_the_item_cost_one_consistent_read_more() {
    use aws_sdk_dynamodb::config::retry::RetryConfig;

    use crate::support::config_for;
    use crate::support::without_returned_items::WithoutReturnedItems;

    let (store, proxy) = counted_store().await;
    let config = config_for(
        &format!("http://{}", proxy.local_addr()),
        RetryConfig::standard(),
    )
    .interceptor(WithoutReturnedItems)
    .build();
    let store = checkpoint_dynamodb::DynamoDbCheckpointStore::new(
        aws_sdk_dynamodb::Client::from_conf(config),
    )
    .with_table(store.table())
    .unwrap();
    let group = fresh_group("round-trips-without-items");
    store
        .claim(&group, "x", 0, fingerprint(1), 100)
        .await
        .unwrap();
    store.advance(&group, "x", 0, 100, 150).await.unwrap();
    proxy.reset();

    let count = |what: &str, want: u64| {
        let got = proxy.round_trips();
        assert_eq!(got, want, "requests for {what}");
        eprintln!("{what}: {got} request(s)");
        proxy.reset();
    };
    assert_eq!(
        store
            .claim(&group, "x", 0, fingerprint(1), 7)
            .await
            .unwrap(),
        150
    );
    count(
        "claim whose reply lacks the item (the claim, a consistent read)",
        2,
    );
    match store.advance(&group, "x", 0, 100, 200).await {
        Err(Error::Moved {
            expected: 100,
            current: Some(150),
        }) => {}
        other => panic!("expected Moved to 150, got {other:?}"),
    }
    count(
        "advance refused without the old item (the advance, a consistent read)",
        2,
    );
}

/// A lease that does not expire during the test.
const LONG: Duration = Duration::from_secs(60);

/// Every lease operation's requests, as the crate doc states them: DynamoDB has no request that
/// reads a subscription's leases and writes them under one condition, so the lease operations
/// are a few requests each, sent at once where they do not depend on each other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_operations_cost_what_the_crate_doc_says() {
    let (store, proxy) = counted_store().await;
    let group = fresh_group("round-trips-leases");
    let count = |what: &str, want: u64| {
        let got = proxy.round_trips();
        assert_eq!(got, want, "requests for {what}");
        eprintln!("{what}: {got} request(s)");
        proxy.reset();
    };
    let acquired = store
        .acquire(&group, "s", "a", &[0, 1, 2], LONG)
        .await
        .unwrap();
    assert_eq!(acquired.granted.len(), 3);
    count(
        "acquire of 3 new partitions by a new owner (tombstone GetItem, Query, heartbeat \
         UpdateItem, a PutItem each)",
        6,
    );
    store
        .acquire(&group, "s", "a", &[0, 1, 2], LONG)
        .await
        .unwrap();
    count(
        "acquire of 3 partitions the owner holds (GetItem, Query, UpdateItem)",
        3,
    );
    store.release(&group, "s", "a", &[1, 2]).await.unwrap();
    count("release of 2 partitions (an UpdateItem each)", 2);
    assert_eq!(store.renew(&group, "s", "a", LONG).await.unwrap().len(), 1);
    count(
        "renew of an owner holding 1 lease (UpdateItem, GetItem, Query)",
        3,
    );
    store
        .request_handover(&group, "s", "b", &[0, 5])
        .await
        .unwrap();
    count(
        "request_handover of 1 held and 1 free partition (Query, an UpdateItem)",
        2,
    );
    assert_eq!(store.leases(&group, "s").await.unwrap().leases.len(), 1);
    count("leases (a Query)", 1);
    assert_eq!(store.leave(&group, "s", "a").await.unwrap(), vec![0]);
    count("leave (heartbeat UpdateItem, Query)", 2);
}

/// A renew costs the same three requests whatever the number of leases.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renew_of_100_leases_is_three_requests() {
    let (store, proxy) = counted_store().await;
    let group = fresh_group("round-trips-renew");
    let all: Vec<u32> = (0..100).collect();
    let acquired = store.acquire(&group, "s", "a", &all, LONG).await.unwrap();
    assert_eq!(acquired.granted.len(), 100);
    proxy.reset();
    assert_eq!(
        store.renew(&group, "s", "a", LONG).await.unwrap().len(),
        100
    );
    assert_eq!(
        proxy.round_trips(),
        3,
        "renew of 100 leases: UpdateItem, GetItem, Query"
    );
}

/// Taking over from a dead owner: the first acquire only observes its heartbeat; one sent at
/// least the owner's duration later ends the heartbeat (an `UpdateItem` conditioned on it being
/// unchanged) and grants the lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_takeover_is_one_heartbeat_update_and_one_grant_more() {
    let (store, proxy) = counted_store().await;
    let group = fresh_group("round-trips-takeover");
    let short = Duration::from_millis(300);
    let other = crate::support::store_on(store.table());
    other
        .acquire(&group, "s", "dead", &[0, 1], short)
        .await
        .unwrap();
    proxy.reset();
    let first = store.acquire(&group, "s", "b", &[0], LONG).await.unwrap();
    assert_eq!(first.refused, vec![0]);
    proxy.reset();
    tokio::time::sleep(short).await;
    let second = store
        .acquire(&group, "s", "b", &[0, 1], LONG)
        .await
        .unwrap();
    assert_eq!(second.granted.len(), 2, "{second:?}");
    assert_eq!(
        proxy.round_trips(),
        6,
        "takeover of 2 leases of one dead owner: GetItem, Query, heartbeat UpdateItem, the dead \
         owner's heartbeat UpdateItem, an UpdateItem per lease"
    );
}

/// Every parked-entry operation is one request, as the crate doc's "Parked entries" says; a
/// refused `retry_parked` or `unpark` too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parked_operations_are_one_request_each() {
    use checkpoint_core::parked::{ParkedEntry, ParkedStore};

    let (store, proxy) = counted_store().await;
    let group = fresh_group("round-trips-parked");
    let count = |what: &str, want: u64| {
        let got = proxy.round_trips();
        assert_eq!(got, want, "requests for {what}");
        eprintln!("{what}: {got} request(s)");
        proxy.reset();
    };
    proxy.reset();
    assert!(store.parked(&group).await.unwrap().is_empty());
    count("parked of an empty group (a Query)", 1);
    store
        .park(&group, &ParkedEntry::new("s", 3, 41, "no such customer", 5))
        .await
        .unwrap();
    count("park (a PutItem)", 1);
    assert!(store.retry_parked(&group, "s", 3, 41).await.unwrap());
    count("retry_parked (an UpdateItem)", 1);
    assert!(!store.retry_parked(&group, "s", 3, 42).await.unwrap());
    count(
        "retry_parked of an entry not parked (a refused UpdateItem)",
        1,
    );
    let parked = store.parked(&group).await.unwrap();
    assert!(parked[0].retry_requested, "{parked:?}");
    count("parked of a one-page group (a Query)", 1);
    assert!(store.unpark(&group, "s", 3, 41).await.unwrap());
    count("unpark (a DeleteItem)", 1);
    assert!(!store.unpark(&group, "s", 3, 41).await.unwrap());
    count("unpark of an entry not parked (a refused DeleteItem)", 1);
}
