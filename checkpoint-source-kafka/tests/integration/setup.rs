//! What the source checks before it reads, and the errors that say what to do.

use std::time::Duration;

use checkpoint_core::source::{Source, SourceError};
use checkpoint_source_kafka::{KafkaSource, KafkaSourceConfig};

use crate::support::{bootstrap, config, create, unique_topic};

#[tokio::test]
async fn a_missing_topic_is_a_setup_error_that_says_how_to_create_it() {
    let config = config("missing", 3);
    let error = KafkaSource::connect(config.clone())
        .await
        .expect_err("the topic does not exist");
    let SourceError::Setup { message, .. } = &error else {
        panic!("expected Setup, got {error:?}");
    };
    assert!(message.contains(config.topic()), "{message}");
    assert!(message.contains("--partitions 3"), "{message}");
    // Asking did not create it (auto-creation is refused by the request).
    let again = KafkaSource::connect(config)
        .await
        .expect_err("still missing");
    assert!(matches!(again, SourceError::Setup { .. }), "{again:?}");
}

#[tokio::test]
async fn a_topic_with_fewer_partitions_than_expected_is_refused() {
    let small = create(config("fewer", 2)).await;
    let expecting_more = KafkaSourceConfig::new(bootstrap(), small.config().topic(), 4)
        .expect("a valid configuration");
    let error = KafkaSource::connect(expecting_more)
        .await
        .expect_err("2 partitions where 4 are expected");
    let SourceError::Setup { message, .. } = &error else {
        panic!("expected Setup, got {error:?}");
    };
    assert!(
        message.contains("has 2 partitions where 4 were expected"),
        "{message}"
    );
}

#[tokio::test]
async fn a_topic_with_more_partitions_than_expected_grew_and_all_are_read() {
    let large = create(config("more", 5)).await;
    let expecting_fewer = KafkaSourceConfig::new(bootstrap(), large.config().topic(), 3)
        .expect("a valid configuration");
    let source = KafkaSource::connect(expecting_fewer)
        .await
        .expect("a topic that grew");
    assert_eq!(source.partitions(), 5);
    let position = source
        .append(4, None, b"in the fifth".to_vec())
        .await
        .expect("appended");
    let page = source.read(4, 0, 10).await.expect("read");
    assert_eq!(
        page.entries.iter().map(|e| e.position).collect::<Vec<_>>(),
        [position]
    );
    assert_eq!(source.discover_partitions().await.expect("asked"), 5);
}

#[tokio::test]
async fn a_broker_that_does_not_answer_is_a_retryable_error_within_the_timeout() {
    // A port nothing listens on.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let address = listener.local_addr().expect("its address");
    drop(listener);
    let config = KafkaSourceConfig::new([address.to_string()], unique_topic("absent"), 1)
        .expect("a valid configuration")
        .with_timeout(Duration::from_millis(300));
    let error = KafkaSource::connect(config)
        .await
        .expect_err("nothing listens");
    assert!(error.is_retryable(), "{error:?}");
    assert!(
        error.to_string().contains("kafka source connect"),
        "{error}"
    );
}
