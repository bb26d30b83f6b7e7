//! Appending through the source, for tests, examples and tools: records produced with
//! `acks = all`, one batch per call, no transaction and no idempotence. A service with its own
//! producer keeps it; the source reads what any producer wrote.

use std::time::{SystemTime, UNIX_EPOCH};

use bytes::BytesMut;
use checkpoint_core::source::SourceError;
use kafka_protocol::indexmap::IndexMap;
use kafka_protocol::messages::ProduceRequest;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::records::{
    Compression, NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE, Record,
    RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

use crate::error::{WireError, codec, server};
use crate::requests::{partition_index, topic_name};
use crate::retry::within;
use crate::source::KafkaSource;

/// Produce versions: 3 is the first with v2 record batches; 8 the last before the flexible
/// encoding (see [`crate::versions`]).
const PRODUCE: std::ops::RangeInclusive<i16> = 3..=8;
/// `acks = -1`: the leader answers once every in-sync replica has the records.
const ALL_REPLICAS: i16 = -1;

impl KafkaSource {
    /// Produces `payload` under `key` to `partition` and returns its offset (its position)
    /// once every in-sync replica has it.
    ///
    /// An error that is retryable may mean the record is stored all the same (the answer was
    /// what was lost): producing again may store it twice. A leader that moved before the
    /// request reached it is tried again here (nothing was stored then).
    ///
    /// One record per request: this is for tests, examples and tools, not a producer (no
    /// batching, no idempotence, no transactions).
    pub async fn append(
        &self,
        partition: u32,
        key: Option<&str>,
        payload: impl Into<Vec<u8>>,
    ) -> Result<u64, SourceError> {
        use checkpoint_core::source::Source as _;
        SourceError::check_partition(partition, self.partitions())?;
        let payload: Vec<u8> = payload.into();
        let batch = encode(key, &payload).map_err(|error| error.into_source("append"))?;
        let index = partition_index(partition).map_err(|error| error.into_source("append"))?;
        let request = ProduceRequest::default()
            .with_acks(ALL_REPLICAS)
            .with_timeout_ms(i32::try_from(self.config.timeout.as_millis()).unwrap_or(i32::MAX))
            .with_topic_data(vec![
                TopicProduceData::default()
                    .with_name(topic_name(&self.config.topic))
                    .with_partition_data(vec![
                        PartitionProduceData::default()
                            .with_index(index)
                            .with_records(Some(batch.freeze())),
                    ]),
            ]);
        let offset = within(&self.cluster, "append", self.config.timeout, || async {
            let (response, _) = self
                .cluster
                .call_leader(partition, &request, PRODUCE)
                .await
                .map_err(|error| match error {
                    // Sent, and the answer lost: not sent again here.
                    WireError::Io(error) => WireError::MaybeApplied(error),
                    other => other,
                })?;
            let data = response
                .responses
                .into_iter()
                .flat_map(|topic| topic.partition_responses)
                .find(|data| data.index == index)
                .ok_or_else(|| {
                    WireError::Protocol("a produce answered without its partition".into())
                })?;
            server(
                format_args!("a record for partition {partition}"),
                data.error_code,
            )?;
            Ok(data.base_offset)
        })
        .await?;
        u64::try_from(offset).map_err(|_| {
            WireError::Protocol(format!("the broker stored the record at offset {offset}"))
                .into_source("append")
        })
    }
}

/// A v2 batch of one record, uncompressed, stamped with the time now.
fn encode(key: Option<&str>, payload: &[u8]) -> Result<BytesMut, WireError> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| {
            i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX)
        });
    let record = Record {
        transactional: false,
        control: false,
        delete_horizon: false,
        partition_leader_epoch: NO_PARTITION_LEADER_EPOCH,
        producer_id: NO_PRODUCER_ID,
        producer_epoch: NO_PRODUCER_EPOCH,
        timestamp_type: TimestampType::Creation,
        offset: 0,
        sequence: 0,
        timestamp: now,
        key: key.map(|key| bytes::Bytes::copy_from_slice(key.as_bytes())),
        value: Some(bytes::Bytes::copy_from_slice(payload)),
        headers: IndexMap::new(),
    };
    let mut batch = BytesMut::new();
    let options = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(&mut batch, [&record], &options).map_err(codec)?;
    without_sequence(&mut batch)?;
    Ok(batch)
}

/// Offsets in a v2 batch header: the checksum, what it covers from, the base sequence.
const CRC: usize = 17;
const CRC_FROM: usize = 21;
const BASE_SEQUENCE: usize = 53;

/// Sets the batch's base sequence to "none", as a producer without idempotence sends it, and
/// its checksum again.
fn without_sequence(batch: &mut BytesMut) -> Result<(), WireError> {
    if batch.len() < BASE_SEQUENCE + 4 {
        return Err(WireError::Protocol(format!(
            "an encoded batch of {} bytes",
            batch.len()
        )));
    }
    batch[BASE_SEQUENCE..BASE_SEQUENCE + 4].copy_from_slice(&NO_SEQUENCE.to_be_bytes());
    let crc = crc32c::crc32c(&batch[CRC_FROM..]);
    batch[CRC..CRC + 4].copy_from_slice(&crc.to_be_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use bytes::Buf;
    use kafka_protocol::records::RecordBatchDecoder;

    use super::*;

    #[test]
    fn a_record_is_one_batch_without_sequence_and_its_checksum_holds() {
        let batch = encode(Some("k"), b"a").expect("encoded");
        let length = (&batch[8..12]).get_i32();
        assert_eq!(
            usize::try_from(length).expect("a length") + 12,
            batch.len(),
            "one batch"
        );
        assert_eq!((&batch[BASE_SEQUENCE..]).get_i32(), NO_SEQUENCE);
        // The decoder checks the checksum.
        let set = RecordBatchDecoder::decode(&mut batch.freeze()).expect("a valid batch");
        assert_eq!(set.records.len(), 1);
        assert_eq!(set.records[0].value.as_deref(), Some(b"a".as_slice()));
        assert_eq!(set.records[0].key.as_deref(), Some(b"k".as_slice()));
    }
}
