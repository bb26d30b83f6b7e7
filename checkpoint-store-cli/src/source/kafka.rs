//! Opening a Kafka topic (feature `source-kafka`): the URL is `checkpoint-source-kafka`'s own,
//! `kafka://HOST:PORT[,HOST:PORT…]/TOPIC`, its `?partitions=N` optional here: the partition
//! count is the topic's, which the cluster's metadata gives (a source opened expecting one
//! partition takes every partition the topic has; with `?partitions=N`, a topic with fewer
//! is refused, as the application's source would refuse it).

use std::time::Duration;

use checkpoint_core::source::{Source, SourceError};
use checkpoint_source_kafka::{KafkaSource, KafkaSourceConfig};

use crate::error::CliError;

/// The source's configuration for `url`, checked as the source crate checks it.
pub(super) fn source_config(url: &str) -> Result<KafkaSourceConfig, SourceError> {
    if url.contains("?partitions=") || url.contains("&partitions=") {
        return KafkaSourceConfig::from_url(url);
    }
    // No count: the least the crate takes, so that the topic's own is read.
    let separator = if url.contains('?') { '&' } else { '?' };
    KafkaSourceConfig::from_url(&format!("{url}{separator}partitions=1"))
}

/// Connects to the cluster and opens the topic of `url`, each request bounded by `timeout`.
pub(super) async fn open(
    url: &str,
    timeout: Duration,
    context: &str,
) -> Result<Box<dyn Source>, CliError> {
    let failed = |error: SourceError| CliError::source(context, &error);
    let config = source_config(url).map_err(failed)?.with_timeout(timeout);
    let source = KafkaSource::connect(config).await.map_err(failed)?;
    Ok(Box::new(source))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_partition_count_is_optional_and_the_topic_required() {
        let config = source_config("kafka://a:9092,b:9093/orders").unwrap();
        assert_eq!(config.bootstrap(), ["a:9092", "b:9093"]);
        assert_eq!((config.topic(), config.partitions()), ("orders", 1));
        let config = source_config("kafka://a:9092/orders?partitions=8").unwrap();
        assert_eq!(config.partitions(), 8);
        for url in [
            "kafka://a:9092",
            "kafka://a:9092/",
            "kafka://a/orders",
            "kafka://a:9092/orders?acks=1",
        ] {
            assert!(
                matches!(source_config(url), Err(SourceError::InvalidInput { .. })),
                "{url}"
            );
        }
    }
}
