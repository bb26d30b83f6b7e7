//! The reference sources pass the whole source kit: the in-memory source of core (through a
//! log adapter that commits transactions into it at sparse positions, and grows it with
//! `add_partitions`), the watermark source over the simulated sequence log, and the
//! read-committed source over the simulated Kafka log.

use std::sync::Mutex;

use async_trait::async_trait;
use checkpoint_conformance::sources::kafka_log::{KafkaSourceLog, ReadCommittedSource};
use checkpoint_conformance::sources::sequence::{SequenceSourceLog, WatermarkSource};
use checkpoint_conformance::sources::{LogTransaction, SourceLog};
use checkpoint_core::source::{Entry, InMemorySource, SourceError};

/// An [`InMemorySource`] written in transactions: appends are buffered and committed at
/// positions of one counter shared by all partitions (so every partition's positions are
/// sparse), taken at commit, so entries appear in position order.
pub struct InMemoryLog {
    source: InMemorySource,
    counter: Mutex<u64>,
}

struct InMemoryTransaction<'a> {
    log: &'a InMemoryLog,
    pending: Vec<(u32, String, Vec<u8>)>,
}

#[async_trait]
impl SourceLog for InMemoryLog {
    type Source = InMemorySource;

    fn source(&self) -> &InMemorySource {
        &self.source
    }

    fn grows(&self) -> bool {
        true
    }

    async fn grow(&self, partitions: u32) -> Result<(), SourceError> {
        let now = checkpoint_core::source::Source::partitions(&self.source);
        self.source
            .add_partitions(partitions.saturating_sub(now))
            .map(drop)
    }

    async fn begin(&self) -> Result<Box<dyn LogTransaction + '_>, SourceError> {
        Ok(Box::new(InMemoryTransaction {
            log: self,
            pending: Vec::new(),
        }))
    }
}

#[async_trait]
impl LogTransaction for InMemoryTransaction<'_> {
    async fn append(
        &mut self,
        partition: u32,
        key: &str,
        payload: &[u8],
    ) -> Result<(), SourceError> {
        SourceError::check_partition(
            partition,
            checkpoint_core::source::Source::partitions(&self.log.source),
        )?;
        self.pending
            .push((partition, key.to_owned(), payload.to_vec()));
        Ok(())
    }

    async fn commit(self: Box<Self>) -> Result<(), SourceError> {
        // One lock over taking the positions and appending, so each partition's positions
        // rise in the order they are appended.
        let mut counter = self.log.counter.lock().unwrap_or_else(|p| p.into_inner());
        for (partition, key, payload) in self.pending {
            *counter += 2;
            let mut entry = Entry::new(*counter, payload);
            entry.key = Some(key);
            self.log.source.append_entry(partition, entry)?;
        }
        Ok(())
    }

    async fn rollback(self: Box<Self>) -> Result<(), SourceError> {
        Ok(())
    }
}

async fn in_memory() -> InMemoryLog {
    InMemoryLog {
        source: InMemorySource::new(3),
        counter: Mutex::new(0),
    }
}

mod in_memory_source {
    checkpoint_conformance::source_tests!(super::in_memory);
}

async fn watermark() -> SequenceSourceLog<WatermarkSource> {
    SequenceSourceLog::watermark(3)
}

mod watermark_source {
    checkpoint_conformance::source_tests!(super::watermark);
}

async fn read_committed() -> KafkaSourceLog<ReadCommittedSource> {
    KafkaSourceLog::read_committed(3)
}

mod read_committed_source {
    checkpoint_conformance::source_tests!(super::read_committed);
}
