//! The `*_in` family: every operation on the caller's own connection or transaction (pass
//! `&mut *tx`), so that a read model and its checkpoint commit together or not at all.
//!
//! Each runs the same statements as its counterpart on the pool, under the store's timeout.

use checkpoint_core::door::front;
use checkpoint_core::{Checkpoint, Error, Fingerprint};
use sqlx::sqlite::SqliteConnection;

use crate::store::SqliteCheckpointStore;

impl SqliteCheckpointStore {
    /// [`load`](checkpoint_core::CheckpointStore::load) on the caller's connection or
    /// transaction: inside a transaction, it sees what the transaction has written.
    pub async fn load_in(
        &self,
        conn: &mut SqliteConnection,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> Result<Option<u64>, Error> {
        front::load_in(self, (group, subscription, partition), |_checked| {
            self.requests.load(conn, group, subscription, partition)
        })
        .await
    }

    /// [`list`](checkpoint_core::CheckpointStore::list) on the caller's connection or
    /// transaction: inside a transaction, it sees what the transaction has written.
    pub async fn list_in(
        &self,
        conn: &mut SqliteConnection,
        group: &str,
    ) -> Result<Vec<Checkpoint>, Error> {
        front::list_in(self, group, |_checked| self.requests.list(conn, group)).await
    }

    /// [`save`](checkpoint_core::CheckpointStore::save) on the caller's connection or
    /// transaction (pass `&mut *tx`), so that a read model and its checkpoint commit together
    /// or not at all.
    ///
    /// Inside a transaction begun with a plain `BEGIN` that has already read, SQLite may fail
    /// the write at once with `SQLITE_BUSY` (retryable) if another connection wrote since that
    /// read; begin with `BEGIN IMMEDIATE` to take the write lock up front instead.
    pub async fn save_in(
        &self,
        conn: &mut SqliteConnection,
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
                    .save(conn, group, subscription, partition, position)
            },
        )
        .await
    }

    /// [`save_all`](checkpoint_core::CheckpointStore::save_all) on the caller's connection or
    /// transaction: one statement, whatever the size of the batch.
    pub async fn save_all_in(
        &self,
        conn: &mut SqliteConnection,
        group: &str,
        checkpoints: &[Checkpoint],
    ) -> Result<(), Error> {
        front::save_all_in(self, group, checkpoints, |_checked| {
            self.requests.save_all(conn, group, checkpoints)
        })
        .await
    }

    /// [`claim`](checkpoint_core::ExclusiveCheckpointStore::claim) on the caller's connection
    /// or transaction.
    pub async fn claim_in(
        &self,
        conn: &mut SqliteConnection,
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
                    conn,
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

    /// [`advance`](checkpoint_core::ExclusiveCheckpointStore::advance) on the caller's
    /// connection or transaction: the projection's read model and its position commit together
    /// or not at all, and of two processes projecting under one name, the second to reach this
    /// call gets [`Error::Moved`] and should roll back.
    ///
    /// Inside a transaction, the compare-and-set takes SQLite's write lock and holds it until
    /// the transaction ends, so other writers of the same database wait for the commit (up to
    /// their busy timeout). Keep such transactions short.
    pub async fn advance_in(
        &self,
        conn: &mut SqliteConnection,
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
                    .advance(conn, group, subscription, partition, from, to)
            },
        )
        .await
    }
}
