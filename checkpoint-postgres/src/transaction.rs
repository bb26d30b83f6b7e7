//! The `*_in` family: every operation on a connection the caller holds, typically
//! `&mut *transaction`, so that a projection commits its read model and its checkpoint together
//! or not at all.
//!
//! Each runs the same statement as its counterpart on the pool, under the store's timeout, and
//! never runs it a second time: on a lost connection the caller's transaction is gone anyway.

use checkpoint_core::door::front;
use checkpoint_core::{Checkpoint, Error, Fingerprint};
use sqlx::postgres::PgConnection;

use crate::store::PostgresCheckpointStore;

impl PostgresCheckpointStore {
    /// [`load`](checkpoint_core::CheckpointStore::load) on the caller's connection or transaction.
    ///
    /// # Errors
    ///
    /// As [`load`](checkpoint_core::CheckpointStore::load).
    pub async fn load_in(
        &self,
        connection: &mut PgConnection,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> Result<Option<u64>, Error> {
        front::load_in(self, (group, subscription, partition), |_checked| {
            self.requests
                .load(connection, group, subscription, partition)
        })
        .await
    }

    /// [`list`](checkpoint_core::CheckpointStore::list) on the caller's connection or transaction.
    ///
    /// # Errors
    ///
    /// As [`list`](checkpoint_core::CheckpointStore::list).
    pub async fn list_in(
        &self,
        connection: &mut PgConnection,
        group: &str,
    ) -> Result<Vec<Checkpoint>, Error> {
        front::list_in(self, group, |_checked| {
            self.requests.list(connection, group)
        })
        .await
    }

    /// [`save`](checkpoint_core::CheckpointStore::save) on the caller's connection or transaction: the
    /// checkpoint commits with whatever else the transaction writes, or not at all.
    ///
    /// # Errors
    ///
    /// As [`save`](checkpoint_core::CheckpointStore::save).
    pub async fn save_in(
        &self,
        connection: &mut PgConnection,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<(), Error> {
        front::save_in(
            self,
            (group, subscription, partition),
            position,
            |_checked| {
                self.requests
                    .save(connection, group, subscription, partition, position)
            },
        )
        .await
    }

    /// [`save_all`](checkpoint_core::CheckpointStore::save_all) on the caller's connection or transaction.
    ///
    /// # Errors
    ///
    /// As [`save_all`](checkpoint_core::CheckpointStore::save_all).
    pub async fn save_all_in(
        &self,
        connection: &mut PgConnection,
        group: &str,
        checkpoints: &[Checkpoint],
    ) -> Result<(), Error> {
        front::save_all_in(self, group, checkpoints, |_checked| {
            self.requests.save_all(connection, group, checkpoints)
        })
        .await
    }

    /// [`claim`](checkpoint_core::ExclusiveCheckpointStore::claim) on the caller's connection or transaction.
    ///
    /// The claim locks the checkpoint's row until the transaction ends, so a second process
    /// claiming the same checkpoint waits for this one to commit or roll back.
    ///
    /// # Errors
    ///
    /// As [`claim`](checkpoint_core::ExclusiveCheckpointStore::claim).
    pub async fn claim_in(
        &self,
        connection: &mut PgConnection,
        group: &str,
        subscription: &str,
        partition: u32,
        fingerprint: Fingerprint,
        initial_position: u64,
    ) -> Result<u64, Error> {
        front::claim_in(
            self,
            (group, subscription, partition),
            initial_position,
            |_checked| {
                self.requests.claim(
                    connection,
                    group,
                    subscription,
                    partition,
                    fingerprint,
                    initial_position,
                )
            },
        )
        .await
    }

    /// [`advance`](checkpoint_core::ExclusiveCheckpointStore::advance) on the caller's connection or
    /// transaction: run it in the transaction that writes the batch's read model, so that the
    /// read model and its position commit together or not at all. On
    /// [`Error::Moved`] roll the transaction back: another process has projected the batch.
    ///
    /// # Errors
    ///
    /// As [`advance`](checkpoint_core::ExclusiveCheckpointStore::advance).
    pub async fn advance_in(
        &self,
        connection: &mut PgConnection,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
    ) -> Result<(), Error> {
        front::advance_in(
            self,
            (group, subscription, partition),
            (from, to),
            |_checked| {
                self.requests
                    .advance(connection, group, subscription, partition, from, to)
            },
        )
        .await
    }
}
