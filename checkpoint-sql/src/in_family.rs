//! The `*_in` family of [`SqlStore`]: every operation of the hot path on a connection the
//! caller holds, typically `&mut *transaction`, so that a read model and its checkpoint
//! commit together or not at all. Each is the same request as its counterpart on the pool,
//! sent through core's front (checked, traced, bounded by the store's timeout), and never run
//! a second time: on a lost connection the caller's transaction is gone anyway. What each
//! engine locks inside a transaction is in its crate doc ("Transactions").

use checkpoint_core::door::front;
use checkpoint_core::{Checkpoint, Error, Fingerprint};

use crate::engine::{Connection, Engine};
use crate::requests::HotPath;
use crate::store::SqlStore;

impl<E: Engine> SqlStore<E> {
    /// [`load`](checkpoint_core::CheckpointStore::load) on the caller's connection or
    /// transaction: inside a transaction, it sees what the transaction has written.
    ///
    /// # Errors
    ///
    /// As [`load`](checkpoint_core::CheckpointStore::load).
    pub async fn load_in(
        &self,
        connection: &mut Connection<E>,
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

    /// [`list`](checkpoint_core::CheckpointStore::list) on the caller's connection or
    /// transaction: inside a transaction, it sees what the transaction has written.
    ///
    /// # Errors
    ///
    /// As [`list`](checkpoint_core::CheckpointStore::list).
    pub async fn list_in(
        &self,
        connection: &mut Connection<E>,
        group: &str,
    ) -> Result<Vec<Checkpoint>, Error> {
        front::list_in(self, group, |_checked| {
            self.requests.list(connection, group)
        })
        .await
    }

    /// [`save`](checkpoint_core::CheckpointStore::save) on the caller's connection or
    /// transaction (pass `&mut *tx`): the checkpoint commits with whatever else the
    /// transaction writes, or not at all.
    ///
    /// # Errors
    ///
    /// As [`save`](checkpoint_core::CheckpointStore::save).
    pub async fn save_in(
        &self,
        connection: &mut Connection<E>,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<(), Error> {
        let key = (group, subscription, partition);
        front::save_in(self, key, position, |_checked| {
            self.requests
                .save(connection, group, subscription, partition, position)
        })
        .await
    }

    /// [`save_all`](checkpoint_core::CheckpointStore::save_all) on the caller's connection or
    /// transaction: one statement, whatever the size of the batch.
    ///
    /// # Errors
    ///
    /// As [`save_all`](checkpoint_core::CheckpointStore::save_all).
    pub async fn save_all_in(
        &self,
        connection: &mut Connection<E>,
        group: &str,
        checkpoints: &[Checkpoint],
    ) -> Result<(), Error> {
        front::save_all_in(self, group, checkpoints, |_checked| {
            self.requests.save_all(connection, group, checkpoints)
        })
        .await
    }

    /// [`claim`](checkpoint_core::ExclusiveCheckpointStore::claim) on the caller's connection
    /// or transaction.
    ///
    /// # Errors
    ///
    /// As [`claim`](checkpoint_core::ExclusiveCheckpointStore::claim).
    pub async fn claim_in(
        &self,
        connection: &mut Connection<E>,
        group: &str,
        subscription: &str,
        partition: u32,
        fingerprint: Fingerprint,
        initial_position: u64,
    ) -> Result<u64, Error> {
        let key = (group, subscription, partition);
        front::claim_in(self, key, initial_position, |_checked| {
            self.requests.claim(
                connection,
                group,
                subscription,
                partition,
                fingerprint,
                initial_position,
            )
        })
        .await
    }

    /// [`advance`](checkpoint_core::ExclusiveCheckpointStore::advance) on the caller's
    /// connection or transaction: run it in the transaction that writes the batch's read
    /// model, so that the read model and its position commit together or not at all. Of two
    /// processes projecting under one name, the second to reach this call gets
    /// [`Error::Moved`]: roll the transaction back, another process has projected the batch.
    ///
    /// # Errors
    ///
    /// As [`advance`](checkpoint_core::ExclusiveCheckpointStore::advance).
    pub async fn advance_in(
        &self,
        connection: &mut Connection<E>,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
    ) -> Result<(), Error> {
        let key = (group, subscription, partition);
        front::advance_in(self, key, (from, to), |_checked| {
            self.requests
                .advance(connection, group, subscription, partition, from, to)
        })
        .await
    }
}
