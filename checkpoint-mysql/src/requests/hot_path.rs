//! The hot path: each operation of [`CheckpointStore`](checkpoint_core::CheckpointStore) and
//! [`ExclusiveCheckpointStore`](checkpoint_core::ExclusiveCheckpointStore) on a connection,
//! the pool's or the caller's, and its reply read.

use checkpoint_core::batch::highest_per_key;
use checkpoint_core::{Checkpoint, Error, Fingerprint, Operation};
use checkpoint_sql::hot_path::{self, ClaimedRow, claimed_position};
use checkpoint_sql::json::batch_json;
use sqlx::mysql::MySqlConnection;

use checkpoint_sql::requests::HotPath;

use super::{Requests, sql};
use crate::MysqlEngine;
use crate::error::backend;

impl HotPath<MysqlEngine> for Requests {
    async fn list(
        &self,
        connection: &mut MySqlConnection,
        group: &str,
    ) -> Result<Vec<Checkpoint>, Error> {
        hot_path::list::<MysqlEngine, _>(connection, &self.list, group).await
    }

    async fn load(
        &self,
        connection: &mut MySqlConnection,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> Result<Option<u64>, Error> {
        let key = (group, subscription, partition);
        hot_path::load::<MysqlEngine, _>(connection, &self.load, Operation::Load, key).await
    }

    /// Moves the checkpoint forward, or leaves it where it is when it is ahead or retired.
    async fn save(
        &self,
        connection: &mut MySqlConnection,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<(), Error> {
        let key = (group, subscription, partition);
        hot_path::save::<MysqlEngine, _>(connection, &self.save, key, position).await
    }

    /// A non-empty batch as one statement over one JSON parameter. Records the span field
    /// `distinct_keys` of the calling operation.
    async fn save_all(
        &self,
        connection: &mut MySqlConnection,
        group: &str,
        checkpoints: &[Checkpoint],
    ) -> Result<(), Error> {
        // Repeated keys collapsed to their highest position, which is what saving them one by
        // one would leave, and sorted by key: each row is written once, and concurrent batches
        // lock their rows in one order, so they wait for each other rather than deadlock.
        let batch = highest_per_key(checkpoints);
        tracing::Span::current().record("distinct_keys", batch.len());
        sqlx::query(sql(&self.save_all))
            .bind(group)
            .bind(batch_json(&batch))
            .execute(connection)
            .await
            .map_err(|error| backend(Operation::SaveAll, error))?;
        Ok(())
    }

    /// The upsert (`sql/claim.sql`), then a locking read of the row on the same connection
    /// (`sql/claim_read.sql`): MySQL has no `RETURNING`. No row is [`Error::Retired`].
    async fn claim(
        &self,
        connection: &mut MySqlConnection,
        group: &str,
        subscription: &str,
        partition: u32,
        fingerprint: Fingerprint,
        initial_position: u64,
    ) -> Result<u64, Error> {
        let failed = |error| backend(Operation::Claim, error);
        sqlx::query(sql(&self.claim))
            .bind(group)
            .bind(subscription)
            .bind(i64::from(partition))
            .bind(checkpoint_core::stored::SqlColumns::position_to_db(
                initial_position,
            ))
            .bind(fingerprint.as_bytes().as_slice())
            .execute(&mut *connection)
            .await
            .map_err(failed)?;
        let claimed: Option<ClaimedRow> = sqlx::query_as(sql(&self.claim_read))
            .bind(group)
            .bind(subscription)
            .bind(i64::from(partition))
            .fetch_optional(connection)
            .await
            .map_err(failed)?;
        claimed_position::<MysqlEngine>((group, subscription), claimed, fingerprint)
    }

    /// The compare-and-set is one `UPDATE`. Only when it changes nothing does a second
    /// statement, a locking read on the same connection, read where the checkpoint is, for
    /// [`Error::Moved`].
    async fn advance(
        &self,
        connection: &mut MySqlConnection,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
    ) -> Result<(), Error> {
        let statements = (&self.advance, &self.load_locking);
        let key = (group, subscription, partition);
        hot_path::advance::<MysqlEngine>(connection, statements, key, from, to).await
    }
}
