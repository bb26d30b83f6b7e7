//! The appends of one source, committed together: [`SqliteSource::append`]'s group commit.
//!
//! SQLite has one write lock per file and, in WAL mode with `synchronous = FULL` (sqlx's
//! default), every commit waits for its own `fsync` of the WAL. Concurrent appends, each in a
//! transaction of its own, queue for the lock one `fsync` after another, and a waiting
//! connection sleeps in SQLite's busy handler (1, 2, 5, 10 ms and up) rather than taking the
//! lock the moment it is free: with 16 writers an append waited for the 15 others' commits and
//! the sleeps between them. So the appends of one source go to one task, which writes every
//! append waiting when it begins in one `BEGIN IMMEDIATE` transaction: one lock, one `fsync`
//! for all of them. An append still returns once its entry is committed, with its position,
//! and fails only for its own reason: when a batch fails, each of its appends is tried again
//! alone. Other writers of the file (`append_in`, other processes) take the lock as before.

use checkpoint_core::source::SourceError;
use sqlx::{Sqlite, SqliteConnection, SqlitePool};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot, watch};

use crate::error::backend;
use crate::table::{Statements, sql};

/// The most appends one transaction writes: a long queue commits in several, so that none
/// holds the write lock (which readers of other processes do not need, but other writers do)
/// for long.
const MAX_BATCH: usize = 256;

/// One append waiting for the writer.
pub(crate) struct Request {
    pub(crate) partition: u32,
    pub(crate) key: Option<String>,
    pub(crate) payload: Vec<u8>,
    /// The position, once committed; or why not.
    pub(crate) reply: oneshot::Sender<Result<u64, SourceError>>,
}

/// What the writer task needs: its own handles, not the source's shared state, so that the
/// task ends when the last clone of the source is dropped (its sender with it).
pub(crate) struct Writer {
    pub(crate) pool: SqlitePool,
    pub(crate) statements: Arc<Statements>,
    /// Bumped once per committed batch: wakes the process's waiters.
    pub(crate) changes: watch::Sender<u64>,
}

impl Writer {
    /// Writes batches until every sender is gone. Runs in a task of its own, so that an append
    /// whose caller is cancelled does not abandon the others committed with it.
    pub(crate) async fn run(self, mut requests: mpsc::UnboundedReceiver<Request>) {
        let mut batch = Vec::with_capacity(MAX_BATCH);
        while requests.recv_many(&mut batch, MAX_BATCH).await > 0 {
            // An append whose caller gave up is still written: it may have been committed
            // already had it been alone, and a caller that drops an append cannot know either.
            match self.write(&batch).await {
                Ok(positions) => {
                    self.changes.send_modify(|changes| *changes += 1);
                    for (request, position) in batch.drain(..).zip(positions) {
                        let _ = request.reply.send(Ok(position));
                    }
                }
                Err(error) if batch.len() == 1 => {
                    if let Some(request) = batch.pop() {
                        let _ = request.reply.send(Err(error));
                    }
                }
                // One append's failure (a trigger of the application's refusing it, say) must
                // not fail the others: each alone, in its own transaction.
                Err(_) => {
                    for request in batch.drain(..) {
                        let alone = self.write(std::slice::from_ref(&request)).await;
                        if alone.is_ok() {
                            self.changes.send_modify(|changes| *changes += 1);
                        }
                        let _ = request.reply.send(alone.map(|positions| positions[0]));
                    }
                }
            }
        }
    }

    /// The appends of `batch` in one `BEGIN IMMEDIATE` transaction: their positions, in order.
    async fn write(&self, batch: &[Request]) -> Result<Vec<u64>, SourceError> {
        let table = &self.statements.name;
        let mut tx = self
            .pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(|e| backend("append", table, e))?;
        let mut positions = Vec::with_capacity(batch.len());
        for request in batch {
            let position = insert(
                &mut tx,
                &self.statements,
                request.partition,
                request.key.as_deref(),
                &request.payload,
            )
            .await?;
            positions.push(position);
        }
        tx.commit().await.map_err(|e| backend("append", table, e))?;
        Ok(positions)
    }
}

/// One entry on `connection` (inside its transaction): its position, `MAX(position) + 1` of
/// the partition as this transaction sees it.
pub(crate) async fn insert(
    connection: &mut SqliteConnection,
    statements: &Statements,
    partition: u32,
    key: Option<&str>,
    payload: &[u8],
) -> Result<u64, SourceError> {
    let table = &statements.name;
    let position: i64 = sqlx::query_scalar::<Sqlite, i64>(sql(&statements.append))
        .bind(i64::from(partition))
        .bind(key)
        .bind(payload)
        .fetch_one(connection)
        .await
        .map_err(|e| backend("append", table, e))?;
    let position = u64::try_from(position).map_err(|_| SourceError::Setup {
        backend: crate::BACKEND,
        message: format!(
            "the event table \"{table}\" holds a negative position in partition {partition}: \
             entries must be written by `append` or `append_in` only"
        ),
    })?;
    SourceError::check_position(position)?;
    Ok(position)
}
