//! Creating and deleting the topic a source reads, for tests, examples and first set-ups.
//! Production clusters usually manage topics through their own tooling; the source only checks
//! them.

use std::ops::RangeInclusive;

use checkpoint_core::source::SourceError;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::{CreateTopicsRequest, DeleteTopicsRequest};

use crate::cluster::Cluster;
use crate::config::KafkaSourceConfig;
use crate::error::{WireError, server};
use crate::requests::topic_name;
use crate::retry::within;
use crate::source::KafkaSource;

/// CreateTopics versions: 2 to 4, the last before the flexible encoding (see
/// [`crate::versions`]).
const CREATE_TOPICS: RangeInclusive<i16> = 2..=4;
/// DeleteTopics versions: 1 to 3, the last before the flexible encoding (version 6 names
/// topics by id or name; 1 to 5 by name, which is all this crate has).
const DELETE_TOPICS: RangeInclusive<i16> = 1..=3;

impl KafkaSource {
    /// Creates the topic `config` names with its partition count and `replication_factor`
    /// replicas per partition; a topic that already exists is left as it is (the source's
    /// [`connect`](Self::connect) checks it).
    pub async fn create_topic(
        config: &KafkaSourceConfig,
        replication_factor: i16,
    ) -> Result<(), SourceError> {
        let cluster = Cluster::new(config.bootstrap.clone(), config.topic.clone());
        let partitions =
            i32::try_from(config.partitions).map_err(|_| SourceError::InvalidInput {
                argument: "partitions",
                reason: format!("Kafka counts partitions in an i32: {}", config.partitions),
            })?;
        let request = CreateTopicsRequest::default()
            .with_timeout_ms(i32::try_from(config.timeout.as_millis()).unwrap_or(i32::MAX))
            .with_topics(vec![
                CreatableTopic::default()
                    .with_name(topic_name(&config.topic))
                    .with_num_partitions(partitions)
                    .with_replication_factor(replication_factor),
            ]);
        within(&cluster, "create topic", config.timeout, || async {
            let (response, _) = cluster.call_any(&request, CREATE_TOPICS).await?;
            for topic in response.topics {
                if topic.error_code == ResponseError::TopicAlreadyExists.code() {
                    continue;
                }
                let message = topic.error_message.as_ref().map_or("", |m| m.as_str());
                server(
                    format_args!("creating topic {} ({message})", config.topic),
                    topic.error_code,
                )?;
            }
            Ok::<(), WireError>(())
        })
        .await
    }

    /// Deletes the topic `config` names, its records with it; returns whether it existed.
    /// A topic created again under the same name starts its offsets at 0: the checkpoints kept
    /// for the deleted one are past its end (see the crate doc), so drop them with it.
    ///
    /// A request sent again after a lost answer finds the topic gone and returns `false`.
    ///
    /// Delete only a topic nothing reads any more, no wait pending included: tansu 0.6 panics
    /// in its storage on a Fetch of a topic that does not exist (every later request then
    /// fails until the broker restarts), and a fetch it holds for a wait is served to its end
    /// even after the reader is gone (seen: a topic deleted just after every reading process
    /// of a run had exited).
    pub async fn delete_topic(config: &KafkaSourceConfig) -> Result<bool, SourceError> {
        let cluster = Cluster::new(config.bootstrap.clone(), config.topic.clone());
        let request = DeleteTopicsRequest::default()
            .with_timeout_ms(i32::try_from(config.timeout.as_millis()).unwrap_or(i32::MAX))
            .with_topic_names(vec![topic_name(&config.topic)]);
        within(&cluster, "delete topic", config.timeout, || async {
            let (response, _) = cluster.call_any(&request, DELETE_TOPICS).await?;
            let mut existed = false;
            for topic in response.responses {
                // Checked here: `server` would take it for a leader that moved and retry.
                if topic.error_code == ResponseError::UnknownTopicOrPartition.code() {
                    continue;
                }
                let message = topic.error_message.as_ref().map_or("", |m| m.as_str());
                server(
                    format_args!("deleting topic {} ({message})", config.topic),
                    topic.error_code,
                )?;
                existed = true;
            }
            Ok::<bool, WireError>(existed)
        })
        .await
    }
}
