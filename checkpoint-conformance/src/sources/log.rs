//! The writer seam: how the kit appends to the log under test.

use async_trait::async_trait;
use checkpoint_core::source::{Source, SourceError};

/// A log the kit can write to and read through its [`Source`]: what a backend's tests
/// implement to run [`source_tests!`](crate::source_tests).
///
/// The kit writes only through [`begin`](Self::begin), and identifies what it wrote by the
/// payloads, which are unique within a case: positions are the log's business. Each case gets
/// a log of its own from the setup, **empty** (a fresh table, stream or file), since the cases
/// check that every entry they read is one they wrote.
#[async_trait]
pub trait SourceLog: Send + Sync {
    /// The source under test.
    type Source: Source;

    /// The source that reads this log.
    fn source(&self) -> &Self::Source;

    /// Whether a transaction of this log can be rolled back. A log whose appends commit at once
    /// (NATS JetStream: each publish is acknowledged when stored) says `false`, and the kit
    /// then never calls [`LogTransaction::rollback`].
    fn rolls_back(&self) -> bool {
        true
    }

    /// Whether the log can take more partitions while it is read ([`grow`](Self::grow)): a
    /// NATS stream given more subjects, an event table allowed more partition numbers. A log
    /// that says `false` (the default) is checked to keep its count instead.
    fn grows(&self) -> bool {
        false
    }

    /// Grows the log to `partitions` partitions, as its writer or operator would (the
    /// source under test is not told: it must find them with
    /// [`discover_partitions`](checkpoint_core::source::Source::discover_partitions)). Called
    /// only when [`grows`](Self::grows) says so, with more partitions than the log has.
    async fn grow(&self, partitions: u32) -> Result<(), SourceError> {
        Err(SourceError::InvalidInput {
            argument: "partitions",
            reason: format!("this log cannot grow (to {partitions}): its `grows` says false"),
        })
    }

    /// Starts a transaction: its appends become visible at its commit (or at once, on a log
    /// whose appends commit at once), never after a rollback.
    async fn begin(&self) -> Result<Box<dyn LogTransaction + '_>, SourceError>;
}

/// One transaction of a [`SourceLog`]: appends, then a commit or a rollback.
///
/// A PostgreSQL transaction takes a position at each insert and commits them together, in
/// whatever order against other transactions; a NATS "transaction" publishes at each append and
/// its commit does nothing; an SQLite one holds the write lock from its first append.
#[async_trait]
pub trait LogTransaction: Send {
    /// Appends `payload` under `key` to `partition`, within this transaction.
    async fn append(
        &mut self,
        partition: u32,
        key: &str,
        payload: &[u8],
    ) -> Result<(), SourceError>;

    /// Commits every append of this transaction.
    async fn commit(self: Box<Self>) -> Result<(), SourceError>;

    /// Discards every append of this transaction. Called only when
    /// [`SourceLog::rolls_back`] says so.
    async fn rollback(self: Box<Self>) -> Result<(), SourceError>;
}

/// A log whose appends are stored as soon as they are acknowledged, one by one (NATS
/// JetStream, Kafka without transactions): what it needs to give the kit [`AtOnce`]
/// transactions instead of writing its own.
#[async_trait]
pub trait AppendsAtOnce: Send + Sync {
    /// Appends `payload` under `key` to `partition`; stored when this returns `Ok`.
    async fn append_now(
        &self,
        partition: u32,
        key: &str,
        payload: &[u8],
    ) -> Result<(), SourceError>;
}

/// The transaction of an [`AppendsAtOnce`] log: each append is stored at once, the commit does
/// nothing, and a rollback is refused (the log's [`SourceLog::rolls_back`] says `false`, so the
/// kit never asks for one).
///
/// ```text
/// async fn begin(&self) -> Result<Box<dyn LogTransaction + '_>, SourceError> {
///     Ok(Box::new(AtOnce(self)))
/// }
/// ```
pub struct AtOnce<'a, A: ?Sized>(pub &'a A);

#[async_trait]
impl<A: AppendsAtOnce + ?Sized> LogTransaction for AtOnce<'_, A> {
    async fn append(
        &mut self,
        partition: u32,
        key: &str,
        payload: &[u8],
    ) -> Result<(), SourceError> {
        self.0.append_now(partition, key, payload).await
    }

    async fn commit(self: Box<Self>) -> Result<(), SourceError> {
        Ok(())
    }

    async fn rollback(self: Box<Self>) -> Result<(), SourceError> {
        Err(SourceError::InvalidInput {
            argument: "rollback",
            reason: "this log stores each append when it is acknowledged".into(),
        })
    }
}
