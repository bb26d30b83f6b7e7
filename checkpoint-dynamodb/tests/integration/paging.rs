//! `list` follows every page of its `Query`.

use checkpoint_conformance::fresh_group;
use checkpoint_conformance::round_trips::CountingProxy;
use checkpoint_core::{Checkpoint, CheckpointStore};
use checkpoint_dynamodb::DynamoDbCheckpointStore;

use crate::support::{client_for, endpoint_address, store};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_follows_every_page() {
    let writer = store().await;
    let group = fresh_group("pages");
    // 250 checkpoints with 7 per page: 35 full pages and one of 5.
    let batch: Vec<Checkpoint> = (0..250u32)
        .map(|i| Checkpoint::new(format!("subscription-{}", i % 3), i, u64::from(i) * 11))
        .collect();
    writer.save_all(&group, &batch).await.unwrap();
    // A neighbour group whose name extends this one must not leak into its pages.
    writer
        .save(&format!("{group}x"), "subscription-0", 0, 1)
        .await
        .unwrap();

    let proxy = CountingProxy::start(endpoint_address()).await.unwrap();
    let paged = DynamoDbCheckpointStore::new(client_for(&format!("http://{}", proxy.local_addr())))
        .with_table(writer.table())
        .unwrap()
        .with_query_page_size(7)
        .unwrap();
    let mut listed = paged.list(&group).await.unwrap();
    let pages = proxy.round_trips();
    eprintln!("list of 250 checkpoints, 7 per page: {pages} Query requests");
    assert!(pages > 1, "more than one page must have been followed");
    assert_eq!(
        pages, 36,
        "one Query per page of 7 (35 full pages and one of 5)"
    );

    listed.sort();
    let mut want = batch.clone();
    want.sort();
    assert_eq!(listed, want);

    // The same list without a page size (pages of 1 MB) is one request and the same answer.
    let mut unpaged = writer.list(&group).await.unwrap();
    unpaged.sort();
    assert_eq!(unpaged, want);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_boundaries_of_every_size_lose_nothing() {
    let writer = store().await;
    let group = fresh_group("page-sizes");
    let batch: Vec<Checkpoint> = (0..12u32)
        .map(|i| Checkpoint::new("s#with#hashes", i, u64::from(i)))
        .collect();
    writer.save_all(&group, &batch).await.unwrap();
    for page_size in [1, 2, 3, 4, 5, 6, 11, 12, 13] {
        let mut listed = writer
            .clone()
            .with_query_page_size(page_size)
            .unwrap()
            .list(&group)
            .await
            .unwrap();
        listed.sort();
        assert_eq!(listed, batch, "page size {page_size}");
    }
}
