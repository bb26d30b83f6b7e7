//! What the operations API does on DynamoDB beyond the kit's cases (`kit::admin` and
//! `dynalite::admin`): the create protocol's pending items (a write that crashed between its
//! steps), the race of a retire against zombies saving to new and existing partitions under
//! real per-item concurrency (dynalite), concurrent `start_at`s of one name, `groups` over
//! the pages of its markers and at size (it reads the markers, not the checkpoints), and the
//! items of leases, which are no group's.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::types::{AttributeValue, PutRequest, WriteRequest};
use checkpoint_conformance::fresh_group;
use checkpoint_conformance::round_trips::CountingProxy;
use checkpoint_core::{
    Checkpoint, CheckpointAdmin, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint,
};
use checkpoint_dynamodb::DynamoDbCheckpointStore;

use crate::support::items_read::ItemsRead;
use crate::support::{client_for, config_for, dynalite, endpoint_address, store};

fn s(value: &str) -> AttributeValue {
    AttributeValue::S(value.to_owned())
}

fn n(value: u64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

/// What step (a) of the create protocol leaves when its writer dies before (c): the whole item
/// with `pending = true`, written here directly.
async fn put_pending_item(
    store: &DynamoDbCheckpointStore,
    group: &str,
    subscription: &str,
    partition: u32,
    position: u64,
) {
    let item = HashMap::from([
        ("group".to_owned(), s(group)),
        (
            "key".to_owned(),
            s(&format!("{partition:010}#{subscription}")),
        ),
        ("subscription".to_owned(), s(subscription)),
        ("partition".to_owned(), n(u64::from(partition))),
        ("position".to_owned(), n(position)),
        ("pending".to_owned(), AttributeValue::Bool(true)),
    ]);
    store
        .client()
        .put_item()
        .table_name(store.table())
        .set_item(Some(item))
        .send()
        .await
        .expect("a pending item written directly");
}

/// Every item of a group as stored (sort key → item), on a consistent read.
async fn raw_items(
    store: &DynamoDbCheckpointStore,
    group: &str,
) -> HashMap<String, HashMap<String, AttributeValue>> {
    let mut items = HashMap::new();
    let mut start = None;
    loop {
        let page = store
            .client()
            .query()
            .table_name(store.table())
            .key_condition_expression("#g = :g")
            .expression_attribute_names("#g", "group")
            .expression_attribute_values(":g", s(group))
            .consistent_read(true)
            .set_exclusive_start_key(start.take())
            .send()
            .await
            .expect("a raw query");
        for item in page.items() {
            if let Some(AttributeValue::S(key)) = item.get("key") {
                items.insert(key.clone(), item.clone());
            }
        }
        match page.last_evaluated_key {
            Some(key) if !key.is_empty() => start = Some(key),
            _ => return items,
        }
    }
}

async fn crashed_create_is_finished_by_the_next_write(store: DynamoDbCheckpointStore) {
    let group = fresh_group("crashed-create");
    put_pending_item(&store, &group, "s", 0, 50).await;

    // A pending item is a save that has not returned: nothing shows it.
    assert_eq!(store.load(&group, "s", 0).await.unwrap(), None);
    assert!(store.list(&group).await.unwrap().is_empty());
    assert!(!store.groups().await.unwrap().contains(&group));
    // Nor can start_at take the name over under it.
    assert!(matches!(
        store.start_at(&group, "s", &[(1, 1)]).await,
        Err(Error::Exists { .. })
    ));
    assert!(matches!(
        store.advance(&group, "s", 0, 50, 60).await,
        Err(Error::Moved { current: None, .. })
    ));

    // The next save of the partition finishes the creation, then saves its own position: a
    // lower one leaves the crashed writer's.
    store.save(&group, "s", 0, 30).await.unwrap();
    assert_eq!(store.load(&group, "s", 0).await.unwrap(), Some(50));
    store.save(&group, "s", 0, 70).await.unwrap();
    assert_eq!(store.load(&group, "s", 0).await.unwrap(), Some(70));
    assert_eq!(
        store.list(&group).await.unwrap(),
        [Checkpoint::new("s", 0, 70)]
    );
    assert!(!raw_items(&store, &group).await[&format!("{:010}#s", 0)].contains_key("pending"));

    // A claim finishes one too, and adopts it.
    put_pending_item(&store, &group, "c", 3, 40).await;
    let fingerprint = Fingerprint::from_bytes([3; 32]);
    assert_eq!(
        store.claim(&group, "c", 3, fingerprint, 0).await.unwrap(),
        40
    );
    store.advance(&group, "c", 3, 40, 41).await.unwrap();

    // A pending item of a subscription retired since: the next write retires it, and it stays
    // hidden.
    put_pending_item(&store, &group, "r", 0, 5).await;
    store.retire(&group, "r").await.unwrap();
    store.save(&group, "r", 0, 9).await.unwrap();
    assert_eq!(store.load(&group, "r", 0).await.unwrap(), None);
    // The same when the tombstone came after the crash but the retire never saw the item (a
    // tombstone written directly stands for a retire that got no further).
    put_pending_item(&store, &group, "t", 0, 5).await;
    store
        .client()
        .put_item()
        .table_name(store.table())
        .item("group", s(&group))
        .item("key", s("retired#t"))
        .send()
        .await
        .unwrap();
    store.save(&group, "t", 0, 9).await.unwrap();
    assert_eq!(store.load(&group, "t", 0).await.unwrap(), None);
    let items = raw_items(&store, &group).await;
    assert!(items[&format!("{:010}#t", 0)].contains_key("retired"));
    assert!(matches!(
        store.claim(&group, "t", 0, fingerprint, 0).await,
        Err(Error::Retired { .. })
    ));

    // purge takes every trace of the retired ones, and the name starts again.
    store.purge(&group, "r").await.unwrap();
    store.purge(&group, "t").await.unwrap();
    let left: Vec<String> = raw_items(&store, &group).await.into_keys().collect();
    assert!(
        left.iter()
            .all(|key| !key.ends_with("#r") && !key.ends_with("#t")),
        "{left:?}"
    );
    store.start_at(&group, "t", &[(0, 1)]).await.unwrap();
    assert_eq!(store.load(&group, "t", 0).await.unwrap(), Some(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_create_is_finished_by_the_next_write() {
    crashed_create_is_finished_by_the_next_write(store().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_create_is_finished_by_the_next_write_on_dynalite() {
    crashed_create_is_finished_by_the_next_write(dynalite::store().await).await;
}

/// Zombies keep saving to the existing partitions 0..8 and to new ones (each save a partition
/// never saved) while the subscription is retired; once `retire` has returned, nothing of it
/// is ever visible again, and every item it left is marked retired. On dynalite, which runs
/// the requests at the same time with a lock per item only.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn zombies_saving_to_new_and_existing_partitions_never_outlive_a_retire() {
    let store = Arc::new(dynalite::store().await);
    for round in 0..12u32 {
        let group = fresh_group("zombie-race");
        let existing: Vec<Checkpoint> = (0..8).map(|p| Checkpoint::new("old", p, 1)).collect();
        store.save_all(&group, &existing).await.unwrap();
        store.save(&group, "live", 0, 1).await.unwrap();

        let retired = Arc::new(AtomicBool::new(false));
        let zombies: Vec<_> = (0..6u32)
            .map(|zombie| {
                let (store, group, retired) = (store.clone(), group.clone(), retired.clone());
                tokio::spawn(async move {
                    let mut saves_after = 0;
                    for i in 0..40u32 {
                        let new_partition = 1_000 + zombie * 100 + i;
                        let position = u64::from(i) + 2;
                        store.save(&group, "old", i % 8, position).await.unwrap();
                        store
                            .save(&group, "old", new_partition, position)
                            .await
                            .unwrap();
                        if retired.load(Ordering::SeqCst) {
                            saves_after += 1;
                            // Once retire has returned, no save brings anything back.
                            assert_eq!(
                                store.load(&group, "old", new_partition).await.unwrap(),
                                None,
                                "round {round}: a save after the retire is visible"
                            );
                            if saves_after > 5 {
                                break;
                            }
                        }
                    }
                })
            })
            .collect();
        tokio::time::sleep(std::time::Duration::from_millis(u64::from(round % 4) * 15)).await;
        store.retire(&group, "old").await.unwrap();
        retired.store(true, Ordering::SeqCst);
        let visible = |listed: Vec<Checkpoint>| {
            listed
                .into_iter()
                .filter(|c| c.subscription == "old")
                .collect::<Vec<_>>()
        };
        assert_eq!(visible(store.list(&group).await.unwrap()), []);
        for zombie in zombies {
            zombie.await.unwrap();
        }
        assert_eq!(
            visible(store.list(&group).await.unwrap()),
            [],
            "round {round}: a checkpoint of the retired subscription is visible"
        );
        assert_eq!(store.load(&group, "live", 0).await.unwrap(), Some(1));
        // Every item of "old" left in the table is retired (none pending: no writer crashed).
        for (key, item) in raw_items(&store, &group).await {
            if key.ends_with("#old") && key != "retired#old" {
                assert!(
                    item.contains_key("retired"),
                    "round {round}: {key} {item:?}"
                );
            }
        }
        store.purge(&group, "old").await.unwrap();
        let left = raw_items(&store, &group).await;
        assert_eq!(
            left.len(),
            1,
            "round {round}: only live's checkpoint: {left:?}"
        );
    }
}

/// Two `start_at`s of one name at the same moment: at most one succeeds, and a refused one
/// takes back what it created, so the name holds exactly the winner's positions, or nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_start_ats_of_one_name_leave_one_or_nothing() {
    let store = Arc::new(dynalite::store().await);
    let mut winners = 0;
    for round in 0..20u64 {
        let group = fresh_group("start-race");
        let attempt = |offset: u64| {
            let (store, group) = (store.clone(), group.clone());
            tokio::spawn(async move {
                let positions: Vec<(u32, u64)> = (0..16).map(|p| (p, offset + round)).collect();
                store.start_at(&group, "new", &positions).await
            })
        };
        let (first, second) = (attempt(100), attempt(200));
        let outcomes = [first.await.unwrap(), second.await.unwrap()];
        let won: Vec<u64> = outcomes
            .iter()
            .zip([100, 200])
            .filter(|(outcome, _)| outcome.is_ok())
            .map(|(_, offset)| offset)
            .collect();
        for outcome in &outcomes {
            assert!(
                matches!(outcome, Ok(()) | Err(Error::Exists { .. })),
                "{outcome:?}"
            );
        }
        let mut listed = store.list(&group).await.unwrap();
        listed.sort();
        match won[..] {
            [] => {
                assert_eq!(listed, []);
                assert!(raw_items(&store, &group).await.is_empty(), "round {round}");
            }
            [offset] => {
                winners += 1;
                let want: Vec<Checkpoint> = (0..16)
                    .map(|p| Checkpoint::new("new", p, offset + round))
                    .collect();
                assert_eq!(listed, want, "round {round}");
            }
            _ => panic!("round {round}: both start_ats succeeded"),
        }
    }
    eprintln!("20 races of two start_ats: {winners} with a winner, the rest with none");
}

/// `groups` follows every page of the markers' `Query` (the store's page size), then checks
/// each marked group with one `Query` of one item: it counts a group with only a tombstone,
/// and leaves out one whose only item is pending (written directly, so without a marker) and
/// one that `purge` emptied (its marker stays, and is filtered out).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_follows_every_page_of_the_markers() {
    let writer = store().await;
    let prefix = fresh_group("markers");
    let mut want = Vec::new();
    for g in 0..11 {
        let group = format!("{prefix}-{g:02}");
        let batch: Vec<Checkpoint> = (0..3).map(|p| Checkpoint::new("s", p, 1)).collect();
        writer.save_all(&group, &batch).await.unwrap();
        want.push(group);
    }
    let only_retired = format!("{prefix}-retired");
    writer.save(&only_retired, "s", 0, 1).await.unwrap();
    writer.retire(&only_retired, "s").await.unwrap();
    want.push(only_retired);
    let purged = format!("{prefix}-purged");
    writer.save(&purged, "s", 0, 1).await.unwrap();
    writer.retire(&purged, "s").await.unwrap();
    writer.purge(&purged, "s").await.unwrap();
    put_pending_item(&writer, &format!("{prefix}-pending"), "s", 0, 1).await;
    want.sort();

    let proxy = CountingProxy::start(endpoint_address()).await.unwrap();
    let paged = DynamoDbCheckpointStore::new(client_for(&format!("http://{}", proxy.local_addr())))
        .with_table(writer.table())
        .unwrap()
        .with_query_page_size(5)
        .unwrap();
    let groups = paged.groups().await.unwrap();
    let requests = proxy.round_trips();
    eprintln!("groups over 13 marked groups, 5 markers per page: {requests} requests");
    assert_eq!(groups, want, "the table is the test's own");
    assert_eq!(
        requests, 16,
        "3 pages of markers (\"markers complete\" and 13 groups, 5 per page), a Query of 1 item \
         per marked group"
    );
    assert_eq!(writer.groups().await.unwrap(), want, "one page of 1 MB");
}

/// `groups` shows a group whose last items are hidden (retired leftovers without a tombstone,
/// pending items) when a live checkpoint comes before them, reading more items on each page of
/// its check; a marked group with hidden items only is left out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_looks_past_hidden_items() {
    let store = store().await;
    let (behind, hidden) = (fresh_group("behind"), fresh_group("hidden"));
    store.save(&behind, "a", 0, 1).await.unwrap();
    store.save(&hidden, "z", 0, 1).await.unwrap();
    for partition in 1..=15 {
        put_pending_item(&store, &behind, "z", partition, 1).await;
    }
    put_pending_item(&store, &hidden, "z", 0, 1).await;
    let mut want = vec![behind.clone()];
    want.sort();
    assert_eq!(store.groups().await.unwrap(), want);
    store.save(&hidden, "y", 0, 1).await.unwrap();
    let mut want = vec![behind, hidden];
    want.sort();
    assert_eq!(store.groups().await.unwrap(), want);
}

/// `groups` over a table with many checkpoints in few groups reads the groups' markers and one
/// item per group, never the checkpoints: the same requests and the same items read over 10
/// groups of 1 checkpoint as over 10 groups of 501. The previous version's `Scan` of the whole
/// table is measured beside it, for the record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_reads_the_markers_not_the_checkpoints() {
    let writer = store().await;
    let prefix = fresh_group("few-groups");
    let groups: Vec<String> = (0..10).map(|g| format!("{prefix}-{g}")).collect();
    for group in &groups {
        writer.save(group, "s", 0, 1).await.unwrap();
    }
    let (reader, proxy, read) = counted_reader(writer.table()).await;
    let measure = || async {
        proxy.reset();
        read.reset();
        assert_eq!(reader.groups().await.unwrap(), groups);
        let groups_cost = (proxy.round_trips(), read.items());
        proxy.reset();
        read.reset();
        let pages = scan_as_the_previous_version(&reader).await;
        (groups_cost, (pages, read.items()))
    };
    let (few, scan_few) = measure().await;
    for group in &groups {
        put_checkpoints_directly(&writer, group, 1..=500).await;
    }
    let (many, scan_many) = measure().await;
    eprintln!(
        "groups of 10 groups: {} requests reading {} items over 10 checkpoints, {} requests \
         reading {} items over 5,010; the previous version's Scan: {} requests reading {} \
         items, then {} requests reading {} items",
        few.0, few.1, many.0, many.1, scan_few.0, scan_few.1, scan_many.0, scan_many.1
    );
    assert_eq!(few, many, "groups costs the same however many checkpoints");
    assert_eq!(
        many,
        (11, 21),
        "a page of markers (\"markers complete\" and 10 groups), a Query of 1 item per group"
    );
    assert!(scan_many.1 >= 5_010, "the Scan reads every checkpoint");
}

/// A store on `table` through a counting proxy and a client that counts the items its reads
/// read.
async fn counted_reader(table: &str) -> (DynamoDbCheckpointStore, CountingProxy, ItemsRead) {
    let proxy = CountingProxy::start(endpoint_address()).await.unwrap();
    let read = ItemsRead::default();
    let config = config_for(
        &format!("http://{}", proxy.local_addr()),
        RetryConfig::standard(),
    )
    .interceptor(read.clone())
    .build();
    let reader = DynamoDbCheckpointStore::new(aws_sdk_dynamodb::Client::from_conf(config))
        .with_table(table)
        .unwrap();
    (reader, proxy, read)
}

/// What `groups` sent before the markers: a consistent `Scan` of every item's keys and flags,
/// every page followed. Its pages.
async fn scan_as_the_previous_version(store: &DynamoDbCheckpointStore) -> u64 {
    let mut start = None;
    let mut pages = 0;
    loop {
        let page = store
            .client()
            .scan()
            .table_name(store.table())
            .projection_expression("#g, #k, #ret, #pend")
            .expression_attribute_names("#g", "group")
            .expression_attribute_names("#k", "key")
            .expression_attribute_names("#ret", "retired")
            .expression_attribute_names("#pend", "pending")
            .consistent_read(true)
            .set_exclusive_start_key(start.take())
            .send()
            .await
            .expect("a raw scan");
        pages += 1;
        match page.last_evaluated_key {
            Some(key) if !key.is_empty() => start = Some(key),
            _ => return pages,
        }
    }
}

/// Live checkpoints of subscription `s` written directly, 25 to a `BatchWriteItem`, as any
/// version of the store lays them out (no marker: the group's first was written by the store).
pub(crate) async fn put_checkpoints_directly(
    store: &DynamoDbCheckpointStore,
    group: &str,
    partitions: std::ops::RangeInclusive<u32>,
) {
    let requests: Vec<WriteRequest> = partitions
        .map(|partition| {
            let item = HashMap::from([
                ("group".to_owned(), s(group)),
                ("key".to_owned(), s(&format!("{partition:010}#s"))),
                ("subscription".to_owned(), s("s")),
                ("partition".to_owned(), n(u64::from(partition))),
                ("position".to_owned(), n(1)),
            ]);
            let put = PutRequest::builder().set_item(Some(item)).build().unwrap();
            WriteRequest::builder().put_request(put).build()
        })
        .collect();
    for chunk in requests.chunks(25) {
        let mut unprocessed = HashMap::from([(store.table().to_owned(), chunk.to_vec())]);
        while !unprocessed.is_empty() {
            let written = store
                .client()
                .batch_write_item()
                .set_request_items(Some(unprocessed))
                .send()
                .await
                .expect("a raw batch write");
            unprocessed = written.unprocessed_items.unwrap_or_default();
            unprocessed.retain(|_, left| !left.is_empty());
        }
    }
}

/// The items of a subscription's leases, under a partition key with a NUL, are no group's:
/// `groups` and `list` never show them (a group with only leases is not listed), and `purge`
/// of a retired subscription deletes them, and only them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_items_are_no_groups_and_purge_deletes_them() {
    use checkpoint_core::LeaseStore;
    let long = std::time::Duration::from_secs(60);
    let store = store().await;
    let (saved, leased_only) = (fresh_group("saved"), fresh_group("leased-only"));
    store.save(&saved, "s", 0, 5).await.unwrap();
    store
        .acquire(&saved, "t", "a", &[0, 1], long)
        .await
        .unwrap();
    store
        .acquire(&leased_only, "t", "a", &[0], long)
        .await
        .unwrap();
    assert_eq!(store.groups().await.unwrap(), vec![saved.clone()]);
    assert_eq!(store.list(&saved).await.unwrap().len(), 1);
    let lease_key = |group: &str| format!("\u{0}leases\u{0}{group}\u{0}t");
    let mut keys: Vec<String> = raw_items(&store, &lease_key(&saved))
        .await
        .into_keys()
        .collect();
    keys.sort();
    assert_eq!(keys, ["lease#0000000000", "lease#0000000001", "owner#a"]);

    store.retire(&saved, "t").await.unwrap();
    store.purge(&saved, "t").await.unwrap();
    assert!(raw_items(&store, &lease_key(&saved)).await.is_empty());
    assert_eq!(raw_items(&store, &lease_key(&leased_only)).await.len(), 2);
    assert_eq!(
        store.list(&saved).await.unwrap().len(),
        1,
        "another subscription's checkpoint"
    );
    assert_eq!(store.groups().await.unwrap(), vec![saved]);
}
