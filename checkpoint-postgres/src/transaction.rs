//! The `*_in` family: every operation on a connection the caller holds, typically
//! `&mut *transaction`, so that a projection commits its read model and its checkpoint together
//! or not at all.
//!
//! Each runs the same statement as its counterpart on the pool, under the store's timeout, and
//! never runs it a second time: on a lost connection the caller's transaction is gone anyway.

use checkpoint_core::timeout::within;
use checkpoint_core::validation::{
    validate_advance, validate_batch, validate_claim, validate_group, validate_key, validate_save,
};
use checkpoint_core::{Checkpoint, Error, Fingerprint, Operation};
use sqlx::postgres::PgConnection;

use crate::BACKEND;
use crate::store::PostgresCheckpointStore;

impl PostgresCheckpointStore {
    /// [`load`](checkpoint_core::CheckpointStore::load) on the caller's connection or transaction.
    ///
    /// # Errors
    ///
    /// As [`load`](checkpoint_core::CheckpointStore::load).
    #[tracing::instrument(
        name = "checkpoint.load_in",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = %self.table, group = group, subscription = subscription)
    )]
    pub async fn load_in(
        &self,
        connection: &mut PgConnection,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> Result<Option<u64>, Error> {
        validate_key(group, subscription)?;
        let request = self
            .requests
            .load(connection, group, subscription, partition);
        within(BACKEND, Operation::Load, self.timeout, request).await
    }

    /// [`list`](checkpoint_core::CheckpointStore::list) on the caller's connection or transaction.
    ///
    /// # Errors
    ///
    /// As [`list`](checkpoint_core::CheckpointStore::list).
    #[tracing::instrument(
        name = "checkpoint.list_in",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = %self.table, group = group, count)
    )]
    pub async fn list_in(
        &self,
        connection: &mut PgConnection,
        group: &str,
    ) -> Result<Vec<Checkpoint>, Error> {
        validate_group(group)?;
        let request = self.requests.list(connection, group);
        within(BACKEND, Operation::List, self.timeout, request).await
    }

    /// [`save`](checkpoint_core::CheckpointStore::save) on the caller's connection or transaction: the
    /// checkpoint commits with whatever else the transaction writes, or not at all.
    ///
    /// # Errors
    ///
    /// As [`save`](checkpoint_core::CheckpointStore::save).
    #[tracing::instrument(
        name = "checkpoint.save_in",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = %self.table, group = group, subscription = subscription)
    )]
    pub async fn save_in(
        &self,
        connection: &mut PgConnection,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<(), Error> {
        validate_save(group, subscription, position)?;
        let request = self
            .requests
            .save(connection, group, subscription, partition, position);
        within(BACKEND, Operation::Save, self.timeout, request).await
    }

    /// [`save_all`](checkpoint_core::CheckpointStore::save_all) on the caller's connection or transaction.
    ///
    /// # Errors
    ///
    /// As [`save_all`](checkpoint_core::CheckpointStore::save_all).
    #[tracing::instrument(
        name = "checkpoint.save_all_in",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = %self.table, group = group, batch_size = checkpoints.len(), distinct_keys)
    )]
    pub async fn save_all_in(
        &self,
        connection: &mut PgConnection,
        group: &str,
        checkpoints: &[Checkpoint],
    ) -> Result<(), Error> {
        validate_batch(group, checkpoints)?;
        if checkpoints.is_empty() {
            return Ok(());
        }
        let request = self.requests.save_all(connection, group, checkpoints);
        within(BACKEND, Operation::SaveAll, self.timeout, request).await
    }

    /// [`claim`](checkpoint_core::ExclusiveCheckpointStore::claim) on the caller's connection or transaction.
    ///
    /// The claim locks the checkpoint's row until the transaction ends, so a second process
    /// claiming the same checkpoint waits for this one to commit or roll back.
    ///
    /// # Errors
    ///
    /// As [`claim`](checkpoint_core::ExclusiveCheckpointStore::claim).
    #[tracing::instrument(
        name = "checkpoint.claim_in",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = %self.table, group = group, subscription = subscription)
    )]
    pub async fn claim_in(
        &self,
        connection: &mut PgConnection,
        group: &str,
        subscription: &str,
        partition: u32,
        fingerprint: Fingerprint,
        initial_position: u64,
    ) -> Result<u64, Error> {
        validate_claim(group, subscription, initial_position)?;
        let request = self.requests.claim(
            connection,
            group,
            subscription,
            partition,
            fingerprint,
            initial_position,
        );
        within(BACKEND, Operation::Claim, self.timeout, request).await
    }

    /// [`advance`](checkpoint_core::ExclusiveCheckpointStore::advance) on the caller's connection or
    /// transaction: run it in the transaction that writes the batch's read model, so that the
    /// read model and its position commit together or not at all. On
    /// [`Error::Moved`] roll the transaction back: another process has projected the batch.
    ///
    /// # Errors
    ///
    /// As [`advance`](checkpoint_core::ExclusiveCheckpointStore::advance).
    #[tracing::instrument(
        name = "checkpoint.advance_in",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = %self.table, group = group, subscription = subscription)
    )]
    pub async fn advance_in(
        &self,
        connection: &mut PgConnection,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
    ) -> Result<(), Error> {
        validate_advance(group, subscription, from, to)?;
        let request = self
            .requests
            .advance(connection, group, subscription, partition, from, to);
        within(BACKEND, Operation::Advance, self.timeout, request).await
    }
}
