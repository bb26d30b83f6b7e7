//! The NATS log: a JetStream stream of `checkpoint-source-nats` (a subject per partition).

use std::sync::Arc;

use async_nats::jetstream;
use async_trait::async_trait;
use checkpoint_core::source::Source;
use checkpoint_source_nats::{NatsSource, NatsSourceConfig};

use super::log::{FILL_PAYLOAD, Log};
use crate::subject::{BenchError, context};

/// Publishes of the fill sent before their acknowledgements are awaited.
const FILL_WINDOW: u64 = 500;

/// A stream of its own.
pub(super) struct NatsLog {
    source: Arc<NatsSource>,
    context: jetstream::Context,
    stream: String,
}

impl NatsLog {
    /// Creates the stream `name` of `partitions` partitions (subjects `<name>.<p>`).
    pub(super) async fn create(
        context: jetstream::Context,
        name: &str,
        partitions: u32,
    ) -> Result<Self, BenchError> {
        let config = NatsSourceConfig::new(name, partitions)?;
        NatsSource::create_stream(&context, &config)
            .await
            .map_err(context_of(name))?;
        let source = NatsSource::new_with_config(context.clone(), config)
            .await
            .map_err(context_of(name))?;
        Ok(Self {
            source: Arc::new(source),
            context,
            stream: name.to_owned(),
        })
    }
}

fn context_of<E: Into<BenchError>>(stream: &str) -> impl FnOnce(E) -> BenchError {
    context(format!("creating the stream {stream}"))
}

#[async_trait]
impl Log for NatsLog {
    fn source(&self) -> Arc<dyn Source> {
        Arc::clone(&self.source) as Arc<dyn Source>
    }

    async fn append(&self, partition: u32, payload: Vec<u8>) -> Result<(), BenchError> {
        self.source.append(partition, None, payload).await?;
        Ok(())
    }

    /// Publishes in windows of [`FILL_WINDOW`], each window's acknowledgements awaited
    /// together (the source's `append` awaits each before the next).
    async fn fill(&self, per_partition: u64) -> Result<(), BenchError> {
        let prefix = self.source.config().subject_prefix().to_owned();
        for partition in 0..self.source.partitions() {
            let subject = format!("{prefix}.{partition}");
            let mut left = per_partition;
            while left > 0 {
                let window = left.min(FILL_WINDOW);
                let mut acks = Vec::new();
                for _ in 0..window {
                    let ack = self
                        .context
                        .publish(subject.clone(), FILL_PAYLOAD.to_vec().into())
                        .await
                        .map_err(context("filling the stream"))?;
                    acks.push(ack);
                }
                // Sent already: awaiting them in order waits for the window's round trip once.
                for ack in acks {
                    ack.await.map_err(context("filling the stream"))?;
                }
                left -= window;
            }
        }
        Ok(())
    }

    async fn remove(&self) -> Result<(), BenchError> {
        self.context
            .delete_stream(&self.stream)
            .await
            .map_err(context(format!("deleting the stream {}", self.stream)))?;
        Ok(())
    }
}
