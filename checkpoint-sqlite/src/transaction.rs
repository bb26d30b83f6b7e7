//! The `*_in` family: every operation on the caller's own connection or transaction (pass
//! `&mut *tx`), so that a read model and its checkpoint commit together or not at all.
//!
//! Each runs the same statements as its counterpart on the pool, under the store's timeout.

use checkpoint_core::timeout::within;
use checkpoint_core::validation::{
    validate_advance, validate_batch, validate_claim, validate_group, validate_key, validate_save,
};
use checkpoint_core::{Checkpoint, Error, Fingerprint, Operation};
use sqlx::sqlite::SqliteConnection;

use crate::BACKEND;
use crate::store::SqliteCheckpointStore;

impl SqliteCheckpointStore {
    /// [`load`](checkpoint_core::CheckpointStore::load) on the caller's connection or
    /// transaction: inside a transaction, it sees what the transaction has written.
    #[tracing::instrument(
        name = "checkpoint.load_in",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = self.table(), group = group, subscription = subscription),
    )]
    pub async fn load_in(
        &self,
        conn: &mut SqliteConnection,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> Result<Option<u64>, Error> {
        validate_key(group, subscription)?;
        let request = self
            .requests
            .load(conn, Operation::Load, group, subscription, partition);
        within(BACKEND, Operation::Load, self.timeout, request).await
    }

    /// [`list`](checkpoint_core::CheckpointStore::list) on the caller's connection or
    /// transaction: inside a transaction, it sees what the transaction has written.
    #[tracing::instrument(
        name = "checkpoint.list_in",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = self.table(), group = group, count),
    )]
    pub async fn list_in(
        &self,
        conn: &mut SqliteConnection,
        group: &str,
    ) -> Result<Vec<Checkpoint>, Error> {
        validate_group(group)?;
        let request = self.requests.list(conn, group);
        within(BACKEND, Operation::List, self.timeout, request).await
    }

    /// [`save`](checkpoint_core::CheckpointStore::save) on the caller's connection or
    /// transaction (pass `&mut *tx`), so that a read model and its checkpoint commit together
    /// or not at all.
    ///
    /// Inside a transaction begun with a plain `BEGIN` that has already read, SQLite may fail
    /// the write at once with `SQLITE_BUSY` (retryable) if another connection wrote since that
    /// read; begin with `BEGIN IMMEDIATE` to take the write lock up front instead.
    #[tracing::instrument(
        name = "checkpoint.save_in",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = self.table(), group = group, subscription = subscription),
    )]
    pub async fn save_in(
        &self,
        conn: &mut SqliteConnection,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<(), Error> {
        validate_save(group, subscription, position)?;
        let request = self
            .requests
            .save(conn, group, subscription, partition, position);
        within(BACKEND, Operation::Save, self.timeout, request).await
    }

    /// [`save_all`](checkpoint_core::CheckpointStore::save_all) on the caller's connection or
    /// transaction: one statement, whatever the size of the batch.
    #[tracing::instrument(
        name = "checkpoint.save_all_in",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = self.table(), group = group, batch_size = checkpoints.len(), distinct_keys),
    )]
    pub async fn save_all_in(
        &self,
        conn: &mut SqliteConnection,
        group: &str,
        checkpoints: &[Checkpoint],
    ) -> Result<(), Error> {
        validate_batch(group, checkpoints)?;
        if checkpoints.is_empty() {
            return Ok(());
        }
        let request = self.requests.save_all(conn, group, checkpoints);
        within(BACKEND, Operation::SaveAll, self.timeout, request).await
    }

    /// [`claim`](checkpoint_core::ExclusiveCheckpointStore::claim) on the caller's connection
    /// or transaction.
    #[tracing::instrument(
        name = "checkpoint.claim_in",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = self.table(), group = group, subscription = subscription),
    )]
    pub async fn claim_in(
        &self,
        conn: &mut SqliteConnection,
        group: &str,
        subscription: &str,
        partition: u32,
        fingerprint: Fingerprint,
        initial_position: u64,
    ) -> Result<u64, Error> {
        validate_claim(group, subscription, initial_position)?;
        let request = self.requests.claim(
            conn,
            group,
            subscription,
            partition,
            fingerprint,
            initial_position,
        );
        within(BACKEND, Operation::Claim, self.timeout, request).await
    }

    /// [`advance`](checkpoint_core::ExclusiveCheckpointStore::advance) on the caller's
    /// connection or transaction: the projection's read model and its position commit together
    /// or not at all, and of two processes projecting under one name, the second to reach this
    /// call gets [`Error::Moved`] and should roll back.
    ///
    /// Inside a transaction, the compare-and-set takes SQLite's write lock and holds it until
    /// the transaction ends, so other writers of the same database wait for the commit (up to
    /// their busy timeout). Keep such transactions short.
    #[tracing::instrument(
        name = "checkpoint.advance_in",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = self.table(), group = group, subscription = subscription),
    )]
    pub async fn advance_in(
        &self,
        conn: &mut SqliteConnection,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
    ) -> Result<(), Error> {
        validate_advance(group, subscription, from, to)?;
        let request = self
            .requests
            .advance(conn, group, subscription, partition, from, to);
        within(BACKEND, Operation::Advance, self.timeout, request).await
    }
}
