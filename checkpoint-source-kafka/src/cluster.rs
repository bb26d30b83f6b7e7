//! The brokers of a cluster, which one leads each partition of the topic, and a few idle
//! connections to each: requests for a partition go to its leader, on a connection nobody
//! else is using.

use std::collections::HashMap;
use std::ops::RangeInclusive;
use std::sync::{Mutex, PoisonError, RwLock};

use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{MetadataRequest, MetadataResponse, TopicName};
use kafka_protocol::protocol::{Request, StrBytes};

use crate::connection::Connection;
use crate::error::{WireError, server};

/// Metadata versions: 4 is the first that can refuse to create a topic it is asked about; 8
/// the last before the flexible encoding (see [`crate::versions`]).
const METADATA: RangeInclusive<i16> = 4..=8;

/// Idle connections kept per broker: enough for the reads, waits and heads that run at once
/// in one process; more are opened when needed and closed after use.
const IDLE_PER_BROKER: usize = 8;

/// What the cluster said of the topic the last time it was asked.
#[derive(Debug, Default, Clone)]
struct Layout {
    /// Broker id → `host:port`.
    brokers: HashMap<i32, String>,
    /// Partition → its leader's id; `None` while it has none.
    leaders: Vec<Option<i32>>,
}

/// The answer to a metadata request for the topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Topic {
    /// The topic exists with this many partitions.
    Partitions(u32),
    /// The cluster has no such topic.
    Missing,
}

/// The cluster as seen from one source.
#[derive(Debug)]
pub(crate) struct Cluster {
    bootstrap: Vec<String>,
    topic: String,
    layout: RwLock<Layout>,
    idle: Mutex<HashMap<String, Vec<Connection>>>,
}

impl Cluster {
    pub(crate) fn new(bootstrap: Vec<String>, topic: String) -> Self {
        Self {
            bootstrap,
            topic,
            layout: RwLock::new(Layout::default()),
            idle: Mutex::new(HashMap::new()),
        }
    }

    /// Asks the cluster (the brokers known, then the bootstrap ones, the first that answers)
    /// for the topic's partitions and their leaders, and keeps the answer.
    pub(crate) async fn refresh(&self) -> Result<Topic, WireError> {
        let request = MetadataRequest::default()
            .with_topics(Some(vec![MetadataRequestTopic::default().with_name(Some(
                TopicName(StrBytes::from_string(self.topic.clone())),
            ))]))
            .with_allow_auto_topic_creation(false);
        let mut last_error = None;
        for address in self.addresses() {
            match self.call_at(&address, &request, METADATA).await {
                Ok((response, _)) => return self.keep(response),
                Err(error) => last_error = Some(error),
            }
        }
        Err(last_error.unwrap_or_else(|| WireError::Protocol("no broker to ask".into())))
    }

    /// The partition's leader's address, asking the cluster when it is not known.
    pub(crate) async fn leader(&self, partition: u32) -> Result<String, WireError> {
        if let Some(address) = self.known_leader(partition) {
            return Ok(address);
        }
        self.refresh().await?;
        self.known_leader(partition)
            .ok_or_else(|| WireError::Server {
                what: format!("a leader for partition {partition} of {}", self.topic),
                error: kafka_protocol::ResponseError::LeaderNotAvailable,
            })
    }

    /// `request` to the leader of `partition`, at the highest version in `ours`.
    pub(crate) async fn call_leader<R: Request>(
        &self,
        partition: u32,
        request: &R,
        ours: RangeInclusive<i16>,
    ) -> Result<(R::Response, i16), WireError> {
        let address = self.leader(partition).await?;
        self.call_at(&address, request, ours).await
    }

    /// `request` to any broker that answers (for cluster-wide requests).
    pub(crate) async fn call_any<R: Request>(
        &self,
        request: &R,
        ours: RangeInclusive<i16>,
    ) -> Result<(R::Response, i16), WireError> {
        let mut last_error = None;
        for address in self.addresses() {
            match self.call_at(&address, request, ours.clone()).await {
                Ok(answer) => return Ok(answer),
                Err(error) => last_error = Some(error),
            }
        }
        Err(last_error.unwrap_or_else(|| WireError::Protocol("no broker to ask".into())))
    }

    /// One request on an idle connection to `address` (or a new one). A connection that
    /// failed is dropped: it may be half-way through a response.
    pub(crate) async fn call_at<R: Request>(
        &self,
        address: &str,
        request: &R,
        ours: RangeInclusive<i16>,
    ) -> Result<(R::Response, i16), WireError> {
        let idle = self.take_idle(address);
        let mut connection = match idle {
            Some(connection) => connection,
            None => Connection::open(address).await?,
        };
        let answer = connection.send(request, ours).await?;
        self.put_idle(address, connection);
        Ok(answer)
    }

    fn take_idle(&self, address: &str) -> Option<Connection> {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        idle.get_mut(address).and_then(Vec::pop)
    }

    fn put_idle(&self, address: &str, connection: Connection) {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        let connections = idle.entry(address.to_owned()).or_default();
        if connections.len() < IDLE_PER_BROKER {
            connections.push(connection);
        }
    }

    /// Forgets the idle connections to every broker: after a failure that may mean they are
    /// all dead (a broker restart), so that the next request opens a fresh one at once
    /// instead of failing once per stale connection.
    pub(crate) fn forget_connections(&self) {
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    fn known_leader(&self, partition: u32) -> Option<String> {
        let layout = self.layout.read().unwrap_or_else(PoisonError::into_inner);
        let leader = (*layout.leaders.get(usize::try_from(partition).ok()?)?)?;
        layout.brokers.get(&leader).cloned()
    }

    /// The brokers known from the last metadata, then the bootstrap ones.
    fn addresses(&self) -> Vec<String> {
        let layout = self.layout.read().unwrap_or_else(PoisonError::into_inner);
        let mut addresses: Vec<String> = layout.brokers.values().cloned().collect();
        addresses.sort();
        for address in &self.bootstrap {
            if !addresses.contains(address) {
                addresses.push(address.clone());
            }
        }
        addresses
    }

    fn keep(&self, response: MetadataResponse) -> Result<Topic, WireError> {
        let Some(topic) = response.topics.into_iter().find(|topic| {
            topic
                .name
                .as_ref()
                .is_some_and(|name| name.0.as_str() == self.topic)
        }) else {
            return Err(WireError::Protocol(format!(
                "the broker's metadata does not mention topic {}",
                self.topic
            )));
        };
        if topic.error_code == kafka_protocol::ResponseError::UnknownTopicOrPartition.code() {
            return Ok(Topic::Missing);
        }
        server(
            format_args!("metadata of topic {}", self.topic),
            topic.error_code,
        )?;
        let count = topic.partitions.len();
        let mut leaders = vec![None; count];
        for partition in &topic.partitions {
            let index = usize::try_from(partition.partition_index)
                .ok()
                .filter(|i| *i < count);
            let Some(index) = index else {
                return Err(WireError::Protocol(format!(
                    "topic {} has {count} partitions and a partition {}",
                    self.topic, partition.partition_index
                )));
            };
            leaders[index] = (partition.leader_id.0 >= 0).then_some(partition.leader_id.0);
        }
        let brokers = response
            .brokers
            .into_iter()
            .map(|broker| {
                (
                    broker.node_id.0,
                    format!("{}:{}", broker.host.as_str(), broker.port),
                )
            })
            .collect();
        *self.layout.write().unwrap_or_else(PoisonError::into_inner) = Layout { brokers, leaders };
        let count = u32::try_from(count).map_err(|_| {
            WireError::Protocol(format!("topic {} has {count} partitions", self.topic))
        })?;
        Ok(Topic::Partitions(count))
    }
}
