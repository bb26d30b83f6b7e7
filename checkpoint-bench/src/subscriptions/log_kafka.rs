//! The Kafka log: a topic of `checkpoint-source-kafka`, created and written through the source
//! itself (and never deleted: see [`KafkaLog::remove`]). Its append is one record per produce
//! request, acknowledged by the broker: there is no batch append, so the fill keeps
//! [`FILL_IN_FLIGHT`] appends going at once.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use checkpoint_core::source::Source;
use checkpoint_source_kafka::{KafkaSource, KafkaSourceConfig};
use futures_util::{StreamExt, TryStreamExt, stream};

use super::log::{FILL_PAYLOAD, Log};
use crate::subject::{BenchError, context};

/// Appends of the fill awaited together: one request each, so the fill's rate is this many
/// round trips at a time rather than one.
const FILL_IN_FLIGHT: usize = 16;

/// A topic of its own.
pub(super) struct KafkaLog {
    source: Arc<KafkaSource>,
}

impl KafkaLog {
    /// Creates the topic `name` of `partitions` partitions on the brokers of `url`
    /// (`kafka://HOST:PORT`, without a topic), one replica each; the source's waits are held up
    /// to `wait_max`.
    pub(super) async fn create(
        url: &str,
        name: &str,
        partitions: u32,
        wait_max: Duration,
    ) -> Result<Self, BenchError> {
        let topic_url = format!(
            "{}/{name}?partitions={partitions}",
            url.trim_end_matches('/')
        );
        let config = KafkaSourceConfig::from_url(&topic_url)
            .map_err(context("KAFKA_URL"))?
            .with_wait_max(wait_max);
        let creating = || context(format!("creating the topic {name}"));
        KafkaSource::create_topic(&config, 1)
            .await
            .map_err(creating())?;
        let source = KafkaSource::connect(config).await.map_err(creating())?;
        Ok(Self {
            source: Arc::new(source),
        })
    }
}

#[async_trait]
impl Log for KafkaLog {
    fn source(&self) -> Arc<dyn Source> {
        Arc::clone(&self.source) as Arc<dyn Source>
    }

    async fn append(&self, partition: u32, payload: Vec<u8>) -> Result<(), BenchError> {
        self.source.append(partition, None, payload).await?;
        Ok(())
    }

    /// Round robin over the partitions, [`FILL_IN_FLIGHT`] appends at a time (entries of one
    /// partition may land out of their sending order: they are all alike).
    async fn fill(&self, per_partition: u64) -> Result<(), BenchError> {
        let partitions = self.source.partitions();
        let appends = (0..per_partition).flat_map(|_| 0..partitions);
        stream::iter(appends)
            .map(|partition| self.source.append(partition, None, FILL_PAYLOAD.to_vec()))
            .buffer_unordered(FILL_IN_FLIGHT)
            .try_for_each(|_offset| async { Ok(()) })
            .await
            .map_err(context(format!(
                "filling the topic {}",
                self.source.config().topic()
            )))?;
        Ok(())
    }

    /// Leaves the topic on the broker: the source offers no deletion, because tansu 0.6's
    /// `DeleteTopics` deletes every topic of the cluster and a fetch of a deleted topic (a wait
    /// still held for a reader that is gone) panics its storage task, after which every request
    /// of every topic fails until the broker restarts (docs/kafka-broker.md). A run's topics
    /// are small and named by the run; `kafka.sh up` starts on an empty storage.
    async fn remove(&self) -> Result<(), BenchError> {
        Ok(())
    }
}
