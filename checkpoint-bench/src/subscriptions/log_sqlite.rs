//! The SQLite log: an event table of `checkpoint-source-sqlite`, in the pair's database file.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use checkpoint_core::source::Source;
use checkpoint_source_sqlite::SqliteSource;

use super::log::{FILL_PAYLOAD, Log};
use crate::subject::{BenchError, context};

/// An event table of its own, on a pool of its own.
pub(super) struct SqliteLog {
    source: Arc<SqliteSource>,
}

impl SqliteLog {
    /// Creates the table `name` of `partitions` partitions in the file at `path`.
    pub(super) async fn create(
        path: &Path,
        name: &str,
        partitions: u32,
    ) -> Result<Self, BenchError> {
        let source = SqliteSource::open(path, partitions)
            .await
            .map_err(context(format!("opening {}", path.display())))?
            .with_table(name)?;
        source
            .migrate()
            .await
            .map_err(context(format!("creating the event table {name}")))?;
        Ok(Self {
            source: Arc::new(source),
        })
    }
}

#[async_trait]
impl Log for SqliteLog {
    fn source(&self) -> Arc<dyn Source> {
        Arc::clone(&self.source) as Arc<dyn Source>
    }

    async fn append(&self, partition: u32, payload: Vec<u8>) -> Result<(), BenchError> {
        self.source.append(partition, None, &payload).await?;
        Ok(())
    }

    /// Each partition's entries in one transaction, through the source's `append_in`.
    async fn fill(&self, per_partition: u64) -> Result<(), BenchError> {
        for partition in 0..self.source.partitions() {
            let mut tx = self
                .source
                .pool()
                .begin_with("BEGIN IMMEDIATE")
                .await
                .map_err(context("filling the SQLite log"))?;
            for _ in 0..per_partition {
                self.source
                    .append_in(&mut tx, partition, None, &FILL_PAYLOAD)
                    .await?;
            }
            tx.commit()
                .await
                .map_err(context("filling the SQLite log"))?;
        }
        self.source.notify_appended();
        Ok(())
    }

    /// The table stays in the pair's file, which is removed after the run; the pool closes.
    async fn remove(&self) -> Result<(), BenchError> {
        self.source.pool().close().await;
        Ok(())
    }
}
