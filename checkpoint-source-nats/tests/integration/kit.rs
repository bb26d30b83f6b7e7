//! The source kit of `checkpoint-conformance` (`source_tests!`) on a fresh stream per case.
//! A JetStream publish is stored when acknowledged: a "transaction" publishes at each append,
//! its commit does nothing, and it cannot roll back.

use async_trait::async_trait;
use checkpoint_conformance::sources::{AppendsAtOnce, AtOnce, LogTransaction, SourceLog};
use checkpoint_core::source::SourceError;
use checkpoint_source_nats::NatsSource;
use tokio::sync::RwLockReadGuard;

use crate::support::{SERVER, TestStream};

/// A fresh stream of 4 partitions and its source; the stream is deleted on drop.
pub struct NatsLog {
    source: NatsSource,
    stream: TestStream,
    _shared: RwLockReadGuard<'static, ()>,
}

#[async_trait]
impl SourceLog for NatsLog {
    type Source = NatsSource;

    fn source(&self) -> &NatsSource {
        &self.source
    }

    fn rolls_back(&self) -> bool {
        false
    }

    fn grows(&self) -> bool {
        true
    }

    /// Through a source of its own on the same stream, as an operator would: the source
    /// under test must find the new count itself.
    async fn grow(&self, partitions: u32) -> Result<(), SourceError> {
        self.stream
            .source()
            .await
            .grow_to(partitions)
            .await
            .map(drop)
    }

    async fn begin(&self) -> Result<Box<dyn LogTransaction + '_>, SourceError> {
        Ok(Box::new(AtOnce(self)))
    }
}

#[async_trait]
impl AppendsAtOnce for NatsLog {
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

async fn nats_log() -> NatsLog {
    let shared = SERVER.read().await;
    let stream = TestStream::unlocked("kit", 4).await;
    NatsLog {
        source: stream.source().await,
        stream,
        _shared: shared,
    }
}

mod nats_source {
    checkpoint_conformance::source_tests!(super::nats_log);
}
