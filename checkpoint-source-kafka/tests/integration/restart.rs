//! A broker killed and started again: reads, waits and appends fail with retryable errors
//! while it is away and go on after, nothing acknowledged lost.

use std::sync::Arc;
use std::time::Duration;

use checkpoint_core::source::Source;
use checkpoint_source_kafka::{KafkaSource, KafkaSourceConfig};

use crate::broker::Broker;
use crate::support::{create, unique_topic};

#[tokio::test]
async fn the_source_goes_on_after_the_broker_is_killed_and_restarted() {
    let mut broker = Broker::start("restart").await;
    let config = KafkaSourceConfig::new([broker.address()], unique_topic("restart"), 2)
        .expect("a valid configuration")
        .with_timeout(Duration::from_secs(2));
    let source = create(config).await;
    let mut acknowledged = Vec::new();
    for i in 0..20 {
        acknowledged.push(
            source
                .append(i % 2, None, format!("before {i}"))
                .await
                .expect("appended"),
        );
    }
    broker.kill().await;
    let away = source
        .read(0, 0, 100)
        .await
        .expect_err("the broker is away");
    assert!(away.is_retryable(), "{away:?}");
    let append_away = source
        .append(0, None, b"lost?".to_vec())
        .await
        .expect_err("away");
    assert!(append_away.is_retryable(), "{append_away:?}");
    broker.restart().await;
    for i in 20..40 {
        let offset = source
            .append(i % 2, None, format!("after {i}"))
            .await
            .expect("appended");
        acknowledged.push(offset);
    }
    for partition in 0..2 {
        let expected: Vec<String> = (0..40u32)
            .filter(|i| i % 2 == partition)
            .map(|i| {
                if i < 20 {
                    format!("before {i}")
                } else {
                    format!("after {i}")
                }
            })
            .collect();
        assert_eq!(
            read_all(&source, partition).await,
            expected,
            "partition {partition}: every acknowledged record, in order"
        );
    }
    // A wait that was pending when the broker went away resolves once a record arrives
    // after the restart.
    let source = Arc::new(source);
    let next = source
        .head(1)
        .await
        .expect("head")
        .map_or(0, |head| head + 1);
    let waiting = Arc::clone(&source);
    let wait = tokio::spawn(async move {
        tokio::time::timeout(Duration::from_secs(30), waiting.wait(1, next)).await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    broker.restart().await;
    assert!(!wait.is_finished(), "the wait resolved with nothing new");
    let offset = source
        .append(1, None, b"woken".to_vec())
        .await
        .expect("appended");
    let woken = wait.await.expect("joined");
    assert!(
        matches!(woken, Ok(Ok(()))),
        "the wait across the restart: {woken:?}"
    );
    assert_eq!(offset, next);
}

/// Every payload of `partition`, in pages of 7.
async fn read_all(source: &KafkaSource, partition: u32) -> Vec<String> {
    let mut read = Vec::new();
    let mut from = 0;
    loop {
        let page = source
            .read(partition, from, 7)
            .await
            .expect("read after restart");
        if page.entries.is_empty() {
            return read;
        }
        read.extend(
            page.entries
                .into_iter()
                .map(|e| String::from_utf8(e.payload).expect("text")),
        );
        from = page.next;
    }
}
