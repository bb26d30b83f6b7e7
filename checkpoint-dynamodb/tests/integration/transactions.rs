//! Advancing a checkpoint inside the caller's own `TransactWriteItems`.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem};
use checkpoint_conformance::fresh_group;
use checkpoint_core::{CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint};
use checkpoint_dynamodb::DynamoDbCheckpointStore;

use crate::support::store;

/// A read-model document, kept in the same table under a group of its own (any table would do).
fn read_model_key(group: &str, id: &str) -> HashMap<String, AttributeValue> {
    HashMap::from([
        (
            "group".to_owned(),
            AttributeValue::S(format!("{group}-read-model")),
        ),
        ("key".to_owned(), AttributeValue::S(id.to_owned())),
    ])
}

fn put_document(
    table: &str,
    group: &str,
    id: &str,
    total: u64,
    only_if_absent: bool,
) -> TransactWriteItem {
    let mut item = read_model_key(group, id);
    item.insert("total".to_owned(), AttributeValue::N(total.to_string()));
    let mut put = Put::builder().table_name(table).set_item(Some(item));
    if only_if_absent {
        put = put
            .condition_expression("attribute_not_exists(#k)")
            .expression_attribute_names("#k", "key");
    }
    TransactWriteItem::builder()
        .put(put.build().unwrap())
        .build()
}

async fn document(store: &DynamoDbCheckpointStore, group: &str, id: &str) -> Option<u64> {
    let item = store
        .client()
        .get_item()
        .table_name(store.table())
        .set_key(Some(read_model_key(group, id)))
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .item;
    item.map(|item| match item.get("total") {
        Some(AttributeValue::N(total)) => total.parse().unwrap(),
        other => panic!("document without a total: {other:?}"),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_model_and_checkpoint_commit_together_or_not_at_all() {
    let store = store().await;
    let group = fresh_group("transaction");
    let fingerprint = Fingerprint::from_bytes([7; 32]);
    assert_eq!(
        store
            .claim(&group, "projection", 3, fingerprint, 100)
            .await
            .unwrap(),
        100
    );

    // Commit: the document and the advance 100 → 150 together.
    store
        .client()
        .transact_write_items()
        .transact_items(put_document(store.table(), &group, "doc-1", 150, false))
        .transact_items(store.advance_in(&group, "projection", 3, 100, 150).unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(
        store.load(&group, "projection", 3).await.unwrap(),
        Some(150)
    );
    assert_eq!(document(&store, &group, "doc-1").await, Some(150));

    // A stale `from`: the whole transaction is cancelled, and the error says where it is.
    let error = store
        .client()
        .transact_write_items()
        .transact_items(put_document(store.table(), &group, "doc-2", 200, false))
        .transact_items(store.advance_in(&group, "projection", 3, 100, 200).unwrap())
        .send()
        .await
        .expect_err("a transaction with a stale advance must be cancelled");
    match DynamoDbCheckpointStore::moved_in_transaction(&error, 1, 100) {
        Some(Error::Moved {
            expected: 100,
            current: Some(150),
        }) => {}
        other => panic!("expected Moved to 150, got {other:?} from {error:?}"),
    }
    assert_eq!(
        document(&store, &group, "doc-2").await,
        None,
        "the read model write was cancelled too"
    );
    assert_eq!(
        store.load(&group, "projection", 3).await.unwrap(),
        Some(150)
    );
    // Asking about the other item's index finds no move there.
    assert!(DynamoDbCheckpointStore::moved_in_transaction(&error, 0, 100).is_none());
    assert!(DynamoDbCheckpointStore::moved_in_transaction(&error, 7, 100).is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn advance_of_an_absent_checkpoint_in_a_transaction_is_moved_from_nothing() {
    let store = store().await;
    let group = fresh_group("transaction-absent");
    let error = store
        .client()
        .transact_write_items()
        .transact_items(store.advance_in(&group, "never-claimed", 0, 0, 1).unwrap())
        .transact_items(put_document(store.table(), &group, "doc", 1, false))
        .send()
        .await
        .expect_err("advancing an absent checkpoint must cancel the transaction");
    match DynamoDbCheckpointStore::moved_in_transaction(&error, 0, 0) {
        Some(Error::Moved {
            expected: 0,
            current: None,
        }) => {}
        other => panic!("expected Moved from an absent checkpoint, got {other:?} from {error:?}"),
    }
    assert_eq!(document(&store, &group, "doc").await, None);
    assert_eq!(
        store.load(&group, "never-claimed", 0).await.unwrap(),
        None,
        "no item was created"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_cancelled_by_another_item_is_not_a_move() {
    let store = store().await;
    let group = fresh_group("transaction-other");
    store
        .claim(
            &group,
            "projection",
            0,
            Fingerprint::from_bytes([1; 32]),
            10,
        )
        .await
        .unwrap();
    store
        .client()
        .transact_write_items()
        .transact_items(put_document(store.table(), &group, "doc", 1, true))
        .send()
        .await
        .unwrap();
    // The document exists, so its own condition cancels the transaction; the advance was fine.
    let error = store
        .client()
        .transact_write_items()
        .transact_items(put_document(store.table(), &group, "doc", 2, true))
        .transact_items(store.advance_in(&group, "projection", 0, 10, 20).unwrap())
        .send()
        .await
        .expect_err("the read model's own condition must cancel the transaction");
    assert!(
        DynamoDbCheckpointStore::moved_in_transaction(&error, 1, 10).is_none(),
        "the checkpoint did not move: {error:?}"
    );
    assert_eq!(store.load(&group, "projection", 0).await.unwrap(), Some(10));
}
