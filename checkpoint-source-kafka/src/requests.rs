//! The two requests a reader sends: a fetch of one partition from an offset (read-committed),
//! and partitions' offsets (their last stable offsets, their earliest), per leader broker.

use std::collections::{BTreeMap, HashMap};
use std::ops::RangeInclusive;
use std::time::Duration;

use kafka_protocol::ResponseError;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::{BrokerId, FetchRequest, ListOffsetsRequest, TopicName};
use kafka_protocol::protocol::StrBytes;

use crate::batches::{Aborted, Fetched};
use crate::cluster::Cluster;
use crate::error::{WireError, server};

/// Fetch versions: 4 is the first with the isolation level and the aborted transactions; 11
/// the last before the "flexible" encoding (tagged fields), which adds nothing a reader uses
/// and which tansu 0.6 answers with a tag its own version does not allow (see
/// [`crate::versions`]).
const FETCH: RangeInclusive<i16> = 4..=11;
/// ListOffsets versions: 2 is the first with the isolation level (so "latest" is the last
/// stable offset); 5 the last before the flexible encoding.
const LIST_OFFSETS: RangeInclusive<i16> = 2..=5;
/// `isolation_level` = 1: read-committed.
const READ_COMMITTED: i8 = 1;
/// ListOffsets' timestamps for "the end" and "the start".
const LATEST: i64 = -1;
const EARLIEST: i64 = -2;

/// What a fetch found.
#[derive(Debug)]
pub(crate) enum Fetch {
    /// The partition's batches from the offset (maybe none yet).
    Found(Fetched),
    /// The offset is outside the partition's range: below its start (retention or a
    /// deletion removed it) or above its end.
    OutOfRange,
}

/// Fetches `partition` from `from`: the broker answers once it has `min_bytes` of committed
/// records or `wait` has passed.
pub(crate) async fn fetch(
    cluster: &Cluster,
    topic: &str,
    partition: u32,
    from: u64,
    wait: Duration,
    max_bytes: i32,
) -> Result<Fetch, WireError> {
    let index = partition_index(partition)?;
    let offset = i64::try_from(from).map_err(|_| WireError::Protocol(format!("offset {from}")))?;
    let min_bytes = if wait.is_zero() { 0 } else { 1 };
    let request = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(i32::try_from(wait.as_millis()).unwrap_or(i32::MAX))
        .with_min_bytes(min_bytes)
        .with_max_bytes(max_bytes)
        .with_isolation_level(READ_COMMITTED)
        .with_session_id(0)
        .with_session_epoch(-1)
        .with_topics(vec![
            FetchTopic::default()
                .with_topic(topic_name(topic))
                .with_partitions(vec![
                    FetchPartition::default()
                        .with_partition(index)
                        .with_fetch_offset(offset)
                        .with_partition_max_bytes(max_bytes),
                ]),
        ]);
    let (response, _) = cluster.call_leader(partition, &request, FETCH).await?;
    server("a fetch", response.error_code)?;
    let data = response
        .responses
        .into_iter()
        .flat_map(|topic| topic.partitions)
        .find(|data| data.partition_index == index)
        .ok_or_else(|| {
            WireError::Protocol(format!("a fetch answered without partition {partition}"))
        })?;
    if data.error_code == ResponseError::OffsetOutOfRange.code() {
        return Ok(Fetch::OutOfRange);
    }
    server(
        format_args!("a fetch of partition {partition} from {from}"),
        data.error_code,
    )?;
    let stable_end = if data.last_stable_offset >= 0 {
        data.last_stable_offset
    } else {
        data.high_watermark
    };
    let aborted = data
        .aborted_transactions
        .unwrap_or_default()
        .into_iter()
        .map(|transaction| Aborted {
            producer: transaction.producer_id.0,
            first_offset: transaction.first_offset,
        })
        .collect();
    Ok(Fetch::Found(Fetched {
        records: data.records.unwrap_or_default(),
        aborted,
        stable_end,
    }))
}

/// Which end of a partition [`offset`] asks for.
#[derive(Debug, Clone, Copy)]
pub(crate) enum End {
    /// The last stable offset: one past the last offset a read-committed read returns.
    Stable,
    /// The first offset the partition still has.
    Earliest,
}

/// The partition's offset at `end`.
pub(crate) async fn offset(
    cluster: &Cluster,
    topic: &str,
    partition: u32,
    end: End,
) -> Result<i64, WireError> {
    let found = offsets(cluster, topic, &[partition], end).await?;
    found.get(&partition).copied().ok_or_else(|| {
        WireError::Protocol(format!(
            "a list of offsets answered without partition {partition}"
        ))
    })
}

/// The offset at `end` of each of `partitions` (each once, asked in any order): one
/// ListOffsets request per leader broker, carrying all the partitions it leads (the protocol
/// takes any number of one topic's partitions in a request, but only a partition's leader
/// answers for it), the brokers asked one after the other.
pub(crate) async fn offsets(
    cluster: &Cluster,
    topic: &str,
    partitions: &[u32],
    end: End,
) -> Result<HashMap<u32, i64>, WireError> {
    let mut by_leader: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for &partition in partitions {
        let leader = cluster.leader(partition).await?;
        by_leader.entry(leader).or_default().push(partition);
    }
    let mut found = HashMap::with_capacity(partitions.len());
    for (leader, led) in by_leader {
        found.extend(offsets_at(cluster, &leader, topic, &led, end).await?);
    }
    Ok(found)
}

/// One ListOffsets request to `leader` for `partitions`, which it leads (as last known: a
/// broker that no longer does answers a leadership error, which the caller's retry handles
/// after reading the metadata again).
async fn offsets_at(
    cluster: &Cluster,
    leader: &str,
    topic: &str,
    partitions: &[u32],
    end: End,
) -> Result<Vec<(u32, i64)>, WireError> {
    let timestamp = match end {
        End::Stable => LATEST,
        End::Earliest => EARLIEST,
    };
    let asked = partitions
        .iter()
        .map(|&partition| {
            Ok(ListOffsetsPartition::default()
                .with_partition_index(partition_index(partition)?)
                .with_timestamp(timestamp))
        })
        .collect::<Result<Vec<_>, WireError>>()?;
    let request = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_isolation_level(READ_COMMITTED)
        .with_topics(vec![
            ListOffsetsTopic::default()
                .with_name(topic_name(topic))
                .with_partitions(asked),
        ]);
    let (response, _) = cluster.call_at(leader, &request, LIST_OFFSETS).await?;
    let answered: HashMap<i32, (i16, i64)> = response
        .topics
        .into_iter()
        .flat_map(|topic| topic.partitions)
        .map(|data| (data.partition_index, (data.error_code, data.offset)))
        .collect();
    let mut found = Vec::with_capacity(partitions.len());
    for &partition in partitions {
        let Some(&(code, offset)) = answered.get(&partition_index(partition)?) else {
            return Err(WireError::Protocol(format!(
                "a list of offsets answered without partition {partition}"
            )));
        };
        server(format_args!("the offsets of partition {partition}"), code)?;
        found.push((partition, offset));
    }
    Ok(found)
}

pub(crate) fn topic_name(topic: &str) -> TopicName {
    TopicName(StrBytes::from_string(topic.to_owned()))
}

pub(crate) fn partition_index(partition: u32) -> Result<i32, WireError> {
    i32::try_from(partition).map_err(|_| WireError::Protocol(format!("partition {partition}")))
}
