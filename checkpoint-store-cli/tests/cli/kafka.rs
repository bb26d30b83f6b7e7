//! With `--features source-kafka` (and `KAFKA_URL`, the brokers: `kafka://HOST:PORT`):
//! `status --source kafka://HOST:PORT/TOPIC`, the head and lag of a topic's partitions with the
//! topic's own partition count, and a topic that is missing or smaller than the URL says.

use std::time::Duration;

use checkpoint_core::{CheckpointStore, LeaseStore};
use checkpoint_source_kafka::{KafkaSource, KafkaSourceConfig};
use serde_json::{Value, json};

use crate::support::{Backend, Fixture, fresh_group, required};

/// Long enough that nothing expires while the test runs.
const HOUR: Duration = Duration::from_secs(3600);

/// A topic of 3 partitions: offsets 0-2 in partition 0, 0 in partition 1, 0 in partition 2.
async fn topic(brokers: &str, topic: &str) {
    let url = format!("{brokers}/{topic}?partitions=3");
    let config = KafkaSourceConfig::from_url(&url).expect("a valid URL");
    KafkaSource::create_topic(&config, 1)
        .await
        .unwrap_or_else(|error| panic!("cannot create a topic on KAFKA_URL: {error}"));
    let source = KafkaSource::connect(config).await.expect("connect");
    for (partition, payload) in [(0, "a"), (0, "b"), (1, "x"), (0, "c"), (2, "y")] {
        source
            .append(partition, Some("k"), payload.as_bytes().to_vec())
            .await
            .expect("append");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_head_and_lag_with_the_topics_partition_count() {
    let brokers = required("KAFKA_URL");
    let brokers = brokers.trim_end_matches('/');
    let fixture = Fixture::new(Backend::Sqlite).await;
    let name = fresh_group("cli_lag_kafka").replace('-', "_");
    topic(brokers, &name).await;
    let group = fresh_group("cli-lag-kafka");
    let g = group.as_str();
    // Checkpoints on 0 (two behind) and 1 (caught up) only, a fallback count of 2: partition
    // 2, held by a lease, has its head read only because the topic has 3.
    fixture.store.save(g, "a", 0, 1).await.expect("save");
    fixture.store.save(g, "a", 1, 1).await.expect("save");
    fixture
        .store
        .acquire(g, "a", "w1", &[2], HOUR)
        .await
        .expect("acquire");

    let source = format!("{brokers}/{name}");
    let output = fixture.cli(&["status", g, "--source", &source, "--json"]);
    let value = output.json();
    let found: Vec<(Value, Value, Value)> = value["partitions"]
        .as_array()
        .expect("partitions")
        .iter()
        .map(|p| (p["partition"].clone(), p["head"].clone(), p["lag"].clone()))
        .collect();
    // A checkpoint is the next offset to read: lag = head + 1 - checkpoint.
    assert_eq!(
        found,
        [
            (json!(0), json!(2), json!(2)),
            (json!(1), json!(0), json!(0)),
            (json!(2), json!(0), Value::Null),
        ],
        "{output:#?}"
    );

    // `?partitions=N` is a floor, as for the application's source: 4 where 3 exist fails.
    let more = format!("{source}?partitions=4");
    let output = fixture.cli(&["status", g, "--source", &more]);
    assert!(
        output
            .error(1)
            .contains("has 3 partitions where 4 were expected"),
        "{output:#?}"
    );
    // A topic that does not exist: the source's words, exit 1; nothing is created.
    let missing = format!("{brokers}/{name}_missing");
    let output = fixture.cli(&["status", g, "--source", &missing]);
    assert!(output.error(1).contains("does not exist"), "{output:#?}");
    // The topic is in the URL: neither setting of the other logs applies.
    let output = fixture.cli(&["status", g, "--source", &source, "--source-stream", "S"]);
    assert!(output.error(2).contains("the URL names"), "{output:#?}");
    // The topic stays: tansu's DeleteTopics deletes every topic (docs/kafka-broker.md).
}
