//! The source kit of `checkpoint-conformance` (`source_tests!`) on a fresh topic per case.
//! Records are produced without a transaction, each stored when acknowledged: a kit
//! "transaction" produces at each append, its commit does nothing, and it cannot roll back
//! (the broker the tests run on serves no transactions; the read-committed filter is tested on
//! batches in the crate's unit tests and on the kit's simulated log).

use async_trait::async_trait;
use checkpoint_conformance::sources::{AppendsAtOnce, AtOnce, LogTransaction, SourceLog};
use checkpoint_core::source::SourceError;
use checkpoint_source_kafka::KafkaSource;

use crate::support::topic;

/// A fresh topic of 4 partitions and its source.
pub struct KafkaLog {
    source: KafkaSource,
}

#[async_trait]
impl SourceLog for KafkaLog {
    type Source = KafkaSource;

    fn source(&self) -> &KafkaSource {
        &self.source
    }

    fn rolls_back(&self) -> bool {
        false
    }

    async fn begin(&self) -> Result<Box<dyn LogTransaction + '_>, SourceError> {
        Ok(Box::new(AtOnce(self)))
    }
}

#[async_trait]
impl AppendsAtOnce for KafkaLog {
    async fn append_now(
        &self,
        partition: u32,
        key: &str,
        payload: &[u8],
    ) -> Result<(), SourceError> {
        self.source
            .append(partition, Some(key), payload.to_vec())
            .await
            .map(|_| ())
    }
}

async fn kafka_log() -> KafkaLog {
    KafkaLog {
        source: topic("kit", 4).await,
    }
}

mod kafka_source {
    checkpoint_conformance::source_tests!(super::kafka_log);
}
