//! The hot path: each operation of [`CheckpointStore`](checkpoint_core::CheckpointStore) and
//! [`ExclusiveCheckpointStore`](checkpoint_core::ExclusiveCheckpointStore) as one statement on
//! a connection, the pool's or the caller's, and its reply read.

use checkpoint_core::batch::highest_per_key;
use checkpoint_core::stored::SqlColumns;
use checkpoint_core::{Checkpoint, Error, Fingerprint, Operation};
use sqlx::postgres::PgConnection;

use checkpoint_sql::hot_path;

use super::{Requests, sql};
use crate::PostgresEngine;
use crate::error::backend;
use crate::layout::COLUMNS;
use checkpoint_sql::requests::HotPath;

impl HotPath<PostgresEngine> for Requests {
    /// The checkpoint's position, `None` when there is none.
    async fn load(
        &self,
        connection: &mut PgConnection,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> Result<Option<u64>, Error> {
        let key = (group, subscription, partition);
        hot_path::load::<PostgresEngine, _>(connection, &self.load, Operation::Load, key).await
    }

    async fn list(
        &self,
        connection: &mut PgConnection,
        group: &str,
    ) -> Result<Vec<Checkpoint>, Error> {
        hot_path::list::<PostgresEngine, _>(connection, &self.list, group).await
    }

    /// Moves the checkpoint forward, or leaves it where it is when it is ahead or retired.
    async fn save(
        &self,
        connection: &mut PgConnection,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<(), Error> {
        let key = (group, subscription, partition);
        hot_path::save::<PostgresEngine, _>(connection, &self.save, key, position).await
    }

    /// A non-empty batch as one statement over three arrays. Records the span field
    /// `distinct_keys` of the calling operation.
    async fn save_all(
        &self,
        connection: &mut PgConnection,
        group: &str,
        checkpoints: &[Checkpoint],
    ) -> Result<(), Error> {
        // One entry per key (ON CONFLICT may not touch a row twice in one statement), sorted
        // by key (every batch locks its rows in the same order, so batches cannot deadlock).
        let batch = highest_per_key(checkpoints);
        tracing::Span::current().record("distinct_keys", batch.len());
        let mut subscriptions = Vec::with_capacity(batch.len());
        let mut partitions = Vec::with_capacity(batch.len());
        let mut positions = Vec::with_capacity(batch.len());
        for checkpoint in batch {
            subscriptions.push(checkpoint.subscription);
            partitions.push(i64::from(checkpoint.partition));
            positions.push(SqlColumns::position_to_db(checkpoint.position));
        }
        sqlx::query(sql(&self.save_all))
            .bind(group)
            .bind(subscriptions)
            .bind(partitions)
            .bind(positions)
            .execute(connection)
            .await
            .map_err(|error| backend(Operation::SaveAll, error))?;
        Ok(())
    }

    /// A retired subscription makes the statement return no row: [`Error::Retired`].
    async fn claim(
        &self,
        connection: &mut PgConnection,
        group: &str,
        subscription: &str,
        partition: u32,
        fingerprint: Fingerprint,
        initial_position: u64,
    ) -> Result<u64, Error> {
        let key = (group, subscription, partition);
        let claim = hot_path::claim::<PostgresEngine, _>;
        claim(connection, &self.claim, key, fingerprint, initial_position).await
    }

    /// The compare-and-set: the statement also returns where the checkpoint is, for
    /// [`Error::Moved`].
    async fn advance(
        &self,
        connection: &mut PgConnection,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
    ) -> Result<(), Error> {
        let (advanced, current): (i64, Option<i64>) = sqlx::query_as(sql(&self.advance))
            .bind(group)
            .bind(subscription)
            .bind(i64::from(partition))
            .bind(SqlColumns::position_to_db(from))
            .bind(SqlColumns::position_to_db(to))
            .fetch_one(connection)
            .await
            .map_err(|error| backend(Operation::Advance, error))?;
        if advanced == 1 {
            return Ok(());
        }
        Err(Error::Moved {
            expected: from,
            current: current
                .map(|position| COLUMNS.position(Operation::Advance, position))
                .transpose()?,
        })
    }
}
