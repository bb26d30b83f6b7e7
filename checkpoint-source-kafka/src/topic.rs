//! Creating the topic a source reads, for tests, examples and first set-ups. Production
//! clusters usually create topics through their own tooling; the source only checks them.
//! There is no deletion here: tansu 0.6, the broker the tests run on, deletes every topic of
//! the cluster on a DeleteTopics of one (docs/kafka-broker.md).

use std::ops::RangeInclusive;

use checkpoint_core::source::SourceError;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::CreateTopicsRequest;
use kafka_protocol::messages::create_topics_request::CreatableTopic;

use crate::cluster::Cluster;
use crate::config::KafkaSourceConfig;
use crate::error::{WireError, server};
use crate::requests::topic_name;
use crate::retry::within;
use crate::source::KafkaSource;

/// CreateTopics versions: 2 to 4, the last before the flexible encoding (see
/// [`crate::versions`]).
const CREATE_TOPICS: RangeInclusive<i16> = 2..=4;

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
}
