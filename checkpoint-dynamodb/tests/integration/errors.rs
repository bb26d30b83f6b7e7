//! Failures: they keep their source, say honestly whether a retry may help, and time out.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use checkpoint_conformance::{error_chain, fresh_group};
use checkpoint_core::{
    CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint, Operation, UnexpectedValue,
};
use checkpoint_dynamodb::DynamoDbCheckpointStore;

use crate::support::{TABLE, client_for, client_without_retries, endpoint, store};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_server_is_a_retryable_backend_error_with_its_source() {
    // A port nothing listens on: bind one, learn its number, close it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let store =
        DynamoDbCheckpointStore::new(client_without_retries(&format!("http://127.0.0.1:{port}")))
            .with_table(TABLE)
            .unwrap();
    let error = store.save("g", "s", 0, 1).await.unwrap_err();
    match &error {
        Error::Backend {
            backend: "dynamodb",
            operation: Operation::Save,
            retryable: true,
            ..
        } => {}
        other => panic!("expected a retryable backend error, got {other:?}"),
    }
    assert!(
        std::error::Error::source(&error).is_some(),
        "the SDK error is kept as the source"
    );
    eprintln!("unreachable: {}", error_chain(&error));
    let error = store
        .save_all("g", &[checkpoint_core::Checkpoint::new("s", 0, 1)])
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            Error::Backend {
                operation: Operation::SaveAll,
                retryable: true,
                ..
            }
        ),
        "{error:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_table_is_a_permanent_error() {
    let store = DynamoDbCheckpointStore::new(client_for(&endpoint()))
        .with_table(&format!("missing-{}", fresh_group("t")))
        .unwrap();
    for error in [
        store.load("g", "s", 0).await.unwrap_err(),
        store.list("g").await.unwrap_err(),
        store.save("g", "s", 0, 1).await.unwrap_err(),
        store
            .claim("g", "s", 0, Fingerprint::from_bytes([0; 32]), 0)
            .await
            .unwrap_err(),
    ] {
        assert!(
            matches!(
                error,
                Error::Backend {
                    retryable: false,
                    ..
                }
            ),
            "{error:?}"
        );
        let chain = error_chain(&error);
        assert!(
            chain.contains("ResourceNotFound"),
            "the chain names the service error: {chain}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_times_out() {
    // Accepts connections and never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let store = DynamoDbCheckpointStore::new(client_for(&format!("http://{address}")))
        .with_table(TABLE)
        .unwrap()
        .with_timeout(Duration::from_millis(300))
        .unwrap();
    let started = std::time::Instant::now();
    let error = store.load("g", "s", 0).await.unwrap_err();
    assert!(
        matches!(
            error,
            Error::Timeout {
                backend: "dynamodb",
                operation: Operation::Load,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error.is_retryable());
    assert!(started.elapsed() < Duration::from_secs(10));
    let error = store.advance("g", "s", 0, 1, 2).await.unwrap_err();
    assert!(
        matches!(
            error,
            Error::Timeout {
                operation: Operation::Advance,
                ..
            }
        ),
        "{error:?}"
    );
    silent.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_item_the_store_did_not_write_is_a_permanent_error() {
    let store = store().await;
    let group = fresh_group("malformed");
    // A position stored as a string, under a valid key of partition 0, subscription "s", and
    // one above i64::MAX (a number no store writes; Redis refuses it too) for subscription "big".
    for (subscription, position) in [
        ("s", AttributeValue::S("12".to_owned())),
        ("big", AttributeValue::N("9223372036854775808".to_owned())),
    ] {
        store
            .client()
            .put_item()
            .table_name(store.table())
            .set_item(Some(HashMap::from([
                ("group".to_owned(), AttributeValue::S(group.clone())),
                (
                    "key".to_owned(),
                    AttributeValue::S(format!("0000000000#{subscription}")),
                ),
                ("position".to_owned(), position),
            ])))
            .send()
            .await
            .unwrap();
    }
    for error in [
        store.load(&group, "s", 0).await.unwrap_err(),
        store.load(&group, "big", 0).await.unwrap_err(),
        store.list(&group).await.unwrap_err(),
    ] {
        assert!(
            matches!(
                error,
                Error::Backend {
                    retryable: false,
                    ..
                }
            ),
            "{error:?}"
        );
        let unexpected = std::error::Error::source(&error)
            .and_then(|source| source.downcast_ref::<UnexpectedValue>())
            .unwrap_or_else(|| panic!("an UnexpectedValue source: {}", error_chain(&error)));
        assert_eq!(unexpected.field, "position", "{unexpected}");
    }
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debug_output_shows_no_client_configuration() {
    let store = DynamoDbCheckpointStore::new(client_for(&endpoint()))
        .with_table(TABLE)
        .unwrap();
    let debug = format!("{store:?}");
    assert!(debug.contains(TABLE));
    assert!(
        !debug.contains("test"),
        "no credentials or endpoint details: {debug}"
    );
}
