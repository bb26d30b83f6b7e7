//! The hot path: each operation of [`CheckpointStore`](checkpoint_core::CheckpointStore) and
//! [`ExclusiveCheckpointStore`](checkpoint_core::ExclusiveCheckpointStore) on a connection,
//! the pool's or the caller's, and its reply read.

use checkpoint_core::batch::highest_per_key;
use checkpoint_core::{Checkpoint, Error, Fingerprint, Operation};
use sqlx::sqlite::SqliteConnection;

use checkpoint_sql::hot_path;

use checkpoint_sql::json::batch_json;

use checkpoint_sql::requests::HotPath;

use super::{Requests, sql};
use crate::SqliteEngine;
use crate::error::backend;

impl HotPath<SqliteEngine> for Requests {
    async fn list(
        &self,
        connection: &mut SqliteConnection,
        group: &str,
    ) -> Result<Vec<Checkpoint>, Error> {
        hot_path::list::<SqliteEngine, _>(connection, &self.list, group).await
    }

    async fn load(
        &self,
        connection: &mut SqliteConnection,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> Result<Option<u64>, Error> {
        let key = (group, subscription, partition);
        hot_path::load::<SqliteEngine, _>(connection, &self.load, Operation::Load, key).await
    }

    /// Moves the checkpoint forward, or leaves it where it is when it is ahead or retired.
    async fn save(
        &self,
        connection: &mut SqliteConnection,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<(), Error> {
        let key = (group, subscription, partition);
        hot_path::save::<SqliteEngine, _>(connection, &self.save, key, position).await
    }

    /// A non-empty batch as one statement over one JSON parameter. Records the span field
    /// `distinct_keys` of the calling operation.
    async fn save_all(
        &self,
        connection: &mut SqliteConnection,
        group: &str,
        checkpoints: &[Checkpoint],
    ) -> Result<(), Error> {
        // Repeated keys are collapsed to their highest position first, which is what saving
        // them one by one would leave. SQLite's upsert would also accept a row twice in one
        // statement (PostgreSQL's refuses), but collapsing writes each row once and keeps the
        // parameter small.
        let batch = highest_per_key(checkpoints);
        tracing::Span::current().record("distinct_keys", batch.len());
        let batch = batch_json(&batch);
        sqlx::query(sql(&self.save_all))
            .bind(group)
            .bind(batch)
            .execute(connection)
            .await
            .map_err(|error| backend(Operation::SaveAll, error))?;
        Ok(())
    }

    /// A retired subscription makes the statement return no row: [`Error::Retired`].
    async fn claim(
        &self,
        connection: &mut SqliteConnection,
        group: &str,
        subscription: &str,
        partition: u32,
        fingerprint: Fingerprint,
        initial_position: u64,
    ) -> Result<u64, Error> {
        let key = (group, subscription, partition);
        let claim = hot_path::claim::<SqliteEngine, _>;
        claim(connection, &self.claim, key, fingerprint, initial_position).await
    }

    /// The compare-and-set is one `UPDATE`. Only when it changes nothing does a second
    /// statement, on the same connection, read where the checkpoint is, for [`Error::Moved`]:
    /// SQLite's RETURNING sees only the new row, so the failed compare-and-set cannot also say
    /// where the checkpoint is. On an embedded database that costs no network round trip.
    async fn advance(
        &self,
        connection: &mut SqliteConnection,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
    ) -> Result<(), Error> {
        let statements = (&self.advance, &self.load);
        let key = (group, subscription, partition);
        hot_path::advance::<SqliteEngine>(connection, statements, key, from, to).await
    }
}
