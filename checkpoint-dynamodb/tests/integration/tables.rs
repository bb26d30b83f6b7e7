//! The table: `create_table` is idempotent and refuses a table of the same name with another
//! key schema; on a table written by the previous version of the store (no groups' markers),
//! `create_table` or the first `groups` fills the markers in, once.

use std::collections::HashMap;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType,
    ScalarAttributeType,
};
use checkpoint_conformance::{error_chain, fresh_group};
use checkpoint_core::{CheckpointAdmin, CheckpointStore, Error, Operation};
use checkpoint_dynamodb::DynamoDbCheckpointStore;

use crate::support::items_read::ItemsRead;
use crate::support::{client_for, config_for, endpoint};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_table_is_idempotent_and_checks_the_key_schema() {
    let client = client_for(&endpoint());
    let table = format!("fresh-{}", fresh_group("table"));
    let store = DynamoDbCheckpointStore::new(client.clone())
        .with_table(&table)
        .unwrap();
    store.create_table().await.unwrap();
    store.create_table().await.unwrap();
    store.save("g", "s", 0, 1).await.unwrap();
    assert_eq!(store.load("g", "s", 0).await.unwrap(), Some(1));

    // A table of the same name with another key schema is refused, not silently used.
    let other = format!("other-{}", fresh_group("table"));
    client
        .create_table()
        .table_name(&other)
        .billing_mode(aws_sdk_dynamodb::types::BillingMode::PayPerRequest)
        .attribute_definitions(
            aws_sdk_dynamodb::types::AttributeDefinition::builder()
                .attribute_name("id")
                .attribute_type(aws_sdk_dynamodb::types::ScalarAttributeType::S)
                .build()
                .unwrap(),
        )
        .key_schema(
            aws_sdk_dynamodb::types::KeySchemaElement::builder()
                .attribute_name("id")
                .key_type(aws_sdk_dynamodb::types::KeyType::Hash)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    let error = DynamoDbCheckpointStore::new(client.clone())
        .with_table(&other)
        .unwrap()
        .create_table()
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            Error::Backend {
                operation: Operation::Migrate,
                retryable: false,
                ..
            }
        ),
        "{error:?}"
    );
    let chain = error_chain(&error);
    assert!(chain.contains("another key schema"), "{chain}");

    for name in [table, other] {
        client.delete_table().table_name(name).send().await.unwrap();
    }
}

fn s(value: &str) -> AttributeValue {
    AttributeValue::S(value.to_owned())
}

/// A table as the previous version of the store left it: the same key schema, created directly
/// (without `create_table`, which now writes the "markers complete" item), holding the items
/// the previous version wrote and no marker. Its groups with something to show: `live`,
/// `tombstone`.
async fn table_of_the_previous_version(client: &Client, groups: &OldGroups) -> String {
    let table = format!("previous-{}", fresh_group("table"));
    client
        .create_table()
        .table_name(&table)
        .billing_mode(BillingMode::PayPerRequest)
        .set_attribute_definitions(Some(
            ["group", "key"]
                .map(|name| {
                    AttributeDefinition::builder()
                        .attribute_name(name)
                        .attribute_type(ScalarAttributeType::S)
                        .build()
                        .unwrap()
                })
                .to_vec(),
        ))
        .set_key_schema(Some(vec![
            KeySchemaElement::builder()
                .attribute_name("group")
                .key_type(KeyType::Hash)
                .build()
                .unwrap(),
            KeySchemaElement::builder()
                .attribute_name("key")
                .key_type(KeyType::Range)
                .build()
                .unwrap(),
        ]))
        .send()
        .await
        .unwrap();
    let checkpoint = |group: &str, partition: u32, flag: Option<&str>| {
        let mut item = HashMap::from([
            ("group".to_owned(), s(group)),
            ("key".to_owned(), s(&format!("{partition:010}#s"))),
            ("subscription".to_owned(), s("s")),
            (
                "partition".to_owned(),
                AttributeValue::N(partition.to_string()),
            ),
            ("position".to_owned(), AttributeValue::N("7".to_owned())),
        ]);
        if let Some(flag) = flag {
            item.insert(flag.to_owned(), AttributeValue::Bool(true));
        }
        item
    };
    let items = [
        checkpoint(&groups.live, 0, None),
        checkpoint(&groups.live, 1, None),
        HashMap::from([
            ("group".to_owned(), s(&groups.tombstone)),
            ("key".to_owned(), s("retired#x")),
            ("subscription".to_owned(), s("x")),
        ]),
        checkpoint(&groups.retired, 0, Some("retired")),
        checkpoint(&groups.pending, 0, Some("pending")),
        HashMap::from([
            (
                "group".to_owned(),
                s(&format!("\u{0}leases\u{0}{}\u{0}t", groups.leased)),
            ),
            ("key".to_owned(), s("lease#0000000000")),
        ]),
    ];
    for item in items {
        put(client, &table, item).await;
    }
    table
}

async fn put(client: &Client, table: &str, item: HashMap<String, AttributeValue>) {
    client
        .put_item()
        .table_name(table)
        .set_item(Some(item))
        .send()
        .await
        .unwrap();
}

/// The groups of a table of the previous version.
struct OldGroups {
    live: String,
    tombstone: String,
    retired: String,
    pending: String,
    leased: String,
}

impl OldGroups {
    fn new() -> Self {
        let base = fresh_group("previous");
        let name = |suffix: &str| format!("{base}-{suffix}");
        Self {
            live: name("live"),
            tombstone: name("tombstone"),
            retired: name("retired"),
            pending: name("pending"),
            leased: name("leased"),
        }
    }

    /// What `groups` must answer: the groups with a live checkpoint or a tombstone.
    fn shown(&self) -> Vec<String> {
        let mut shown = vec![self.live.clone(), self.tombstone.clone()];
        shown.sort();
        shown
    }
}

/// A store on `table` whose client counts the `Scan` requests it sends.
fn counted_store_on(table: &str) -> (DynamoDbCheckpointStore, ItemsRead) {
    let read = ItemsRead::default();
    let config = config_for(&endpoint(), RetryConfig::standard())
        .interceptor(read.clone())
        .build();
    let store = DynamoDbCheckpointStore::new(Client::from_conf(config))
        .with_table(table)
        .unwrap();
    (store, read)
}

/// On a table written by the previous version (no markers), the first `groups` fills the
/// markers in with one `Scan` and answers as the previous version did; later calls, other
/// store instances and `create_table` never scan again. A group an old writer creates after
/// that (a mixed-version deployment) is not listed until `fill_in_group_markers` runs again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_groups_fills_in_the_markers_of_a_previous_table() {
    let client = client_for(&endpoint());
    let old = OldGroups::new();
    let table = table_of_the_previous_version(&client, &old).await;
    let (store, read) = counted_store_on(&table);
    assert_eq!(store.groups().await.unwrap(), old.shown());
    assert_eq!(read.scans(), 1, "one Scan page fills the markers in");
    read.reset();
    assert_eq!(store.groups().await.unwrap(), old.shown());
    let (other, other_read) = counted_store_on(&table);
    assert_eq!(other.groups().await.unwrap(), old.shown());
    other.create_table().await.unwrap();
    assert_eq!((read.scans(), other_read.scans()), (0, 0), "never again");

    // An old writer's first checkpoint of a new group: no marker, so not listed...
    let late = format!("{}-late", old.live);
    put(
        &client,
        &table,
        HashMap::from([
            ("group".to_owned(), s(&late)),
            ("key".to_owned(), s("0000000000#s")),
            ("position".to_owned(), AttributeValue::N("1".to_owned())),
        ]),
    )
    .await;
    assert_eq!(store.groups().await.unwrap(), old.shown());
    // ...until the markers are filled in again (or this version writes a first checkpoint,
    // a start_at or a retire in it).
    store.fill_in_group_markers().await.unwrap();
    let mut want = old.shown();
    want.push(late);
    want.sort();
    assert_eq!(other.groups().await.unwrap(), want);
    client
        .delete_table()
        .table_name(&table)
        .send()
        .await
        .unwrap();
}

/// `create_table` on a table written by the previous version fills the markers in (once: a
/// second call only reads the "markers complete" item), and `groups` then never scans.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_table_fills_in_the_markers_of_a_previous_table() {
    let client = client_for(&endpoint());
    let old = OldGroups::new();
    let table = table_of_the_previous_version(&client, &old).await;
    let (store, read) = counted_store_on(&table);
    store.create_table().await.unwrap();
    assert_eq!(read.scans(), 1, "one Scan page fills the markers in");
    store.create_table().await.unwrap();
    assert_eq!(read.scans(), 1, "idempotent: no second Scan");
    read.reset();
    assert_eq!(store.groups().await.unwrap(), old.shown());
    assert_eq!(read.scans(), 0);
    // The groups a new writer creates are listed as always.
    let new = format!("{}-new", old.live);
    store.save(&new, "s", 0, 1).await.unwrap();
    let mut want = old.shown();
    want.push(new);
    want.sort();
    assert_eq!(store.groups().await.unwrap(), want);
    client
        .delete_table()
        .table_name(&table)
        .send()
        .await
        .unwrap();
}
