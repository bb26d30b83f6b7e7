//! The broker, and a topic per test.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use checkpoint_source_kafka::{KafkaSource, KafkaSourceConfig};

/// The variable with the brokers: `kafka://HOST:PORT[,HOST:PORT…]`.
pub const URL_VAR: &str = "KAFKA_URL";

/// The brokers (`host:port` each): `KAFKA_URL`, or else a Kafka started with testcontainers
/// once per test binary. Panics with instructions when there is neither.
pub fn bootstrap() -> Vec<String> {
    let url = checkpoint_conformance::harness::server_url(URL_VAR, start_container);
    let hosts = url.strip_prefix("kafka://").unwrap_or(&url);
    hosts
        .trim_end_matches('/')
        .split(',')
        .map(str::to_owned)
        .collect()
}

/// Starts Apache Kafka in Docker; its URL, and the container to keep alive.
async fn start_container() -> Result<(String, impl Sized), String> {
    use testcontainers::runners::AsyncRunner;

    let container = testcontainers_modules::kafka::apache::Kafka::default()
        .start()
        .await
        .map_err(|error| error.to_string())?;
    let host = container.get_host().await.map_err(|e| e.to_string())?;
    let port = container
        .get_host_port_ipv4(testcontainers_modules::kafka::apache::KAFKA_PORT)
        .await
        .map_err(|e| e.to_string())?;
    Ok((format!("kafka://{host}:{port}"), container))
}

/// A topic name no other test or run uses.
pub fn unique_topic(label: &str) -> String {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "t_{label}_{}_{}_{nanos}",
        std::process::id(),
        COUNT.fetch_add(1, Ordering::Relaxed)
    )
}

/// A configuration for a new topic of `partitions` partitions on the test broker.
pub fn config(label: &str, partitions: u32) -> KafkaSourceConfig {
    KafkaSourceConfig::new(bootstrap(), unique_topic(label), partitions)
        .expect("a valid configuration")
        .with_timeout(Duration::from_secs(10))
        .with_wait_max(Duration::from_millis(500))
}

/// Creates the topic of `config` and connects a source to it; panics (fails the test) when
/// the broker cannot be reached.
pub async fn create(config: KafkaSourceConfig) -> KafkaSource {
    KafkaSource::create_topic(&config, 1)
        .await
        .unwrap_or_else(|error| panic!("cannot create a topic (set {URL_VAR}): {error}"));
    KafkaSource::connect(config)
        .await
        .unwrap_or_else(|error| panic!("cannot connect to the topic just created: {error}"))
}

/// A new topic of `partitions` partitions and its source.
pub async fn topic(label: &str, partitions: u32) -> KafkaSource {
    create(config(label, partitions)).await
}
