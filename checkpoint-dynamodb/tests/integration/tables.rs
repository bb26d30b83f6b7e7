//! The table: `create_table` is idempotent and refuses a table of the same name with another
//! key schema.

use checkpoint_conformance::{error_chain, fresh_group};
use checkpoint_core::{CheckpointStore, Error, Operation};
use checkpoint_dynamodb::DynamoDbCheckpointStore;

use crate::support::{client_for, endpoint};

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
