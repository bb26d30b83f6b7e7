//! A log the subscriptions' rows read: one table or stream of its own per row, written through
//! the source's own append (one entry at a time) or in bulk (the throughput row's fill).

use std::sync::Arc;

use async_trait::async_trait;
use checkpoint_core::source::Source;

use crate::subject::BenchError;

/// A log made for one row, removed after it.
#[async_trait]
pub(super) trait Log: Send + Sync {
    /// The source over it, shared by every reader of the row (on SQLite, appends through the
    /// same source wake its readers at once, as in one application).
    fn source(&self) -> Arc<dyn Source>;

    /// Appends one entry to `partition` in a write of its own (a transaction, a publish
    /// acknowledged).
    async fn append(&self, partition: u32, payload: Vec<u8>) -> Result<(), BenchError>;

    /// Appends `per_partition` entries of 16 bytes to every partition, in bulk.
    async fn fill(&self, per_partition: u64) -> Result<(), BenchError>;

    /// Drops the log from its server (a table, a stream).
    async fn remove(&self) -> Result<(), BenchError>;
}

/// The throughput row's entries: what a small event of a real log might weigh.
pub(super) const FILL_PAYLOAD: [u8; 16] = *b"bench-entry-0000";
