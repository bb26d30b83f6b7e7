//! Stores whose exclusive advance commits in the caller's database transaction: the read model
//! and its checkpoint together or not at all.

use async_trait::async_trait;

use crate::{Error, ExclusiveCheckpointStore};

/// An [`ExclusiveCheckpointStore`] that lives in the database a projection writes its read
/// model to, and can run the compare-and-set [`advance`](ExclusiveCheckpointStore::advance)
/// inside a transaction of that database. A subscription with a transactional handler begins a
/// transaction per batch, lets the handler write the batch's effects in it, advances the
/// checkpoint in it and commits: a crash before the commit loses both, a zombie's advance from
/// a stale position fails with [`Error::Moved`] and its transaction is rolled back. Effects on
/// the read model happen exactly once.
///
/// PostgreSQL's, MySQL's and SQLite's stores implement it, with sqlx's transaction as
/// [`Transaction`](Self::Transaction).
#[async_trait]
pub trait TransactionalStore: ExclusiveCheckpointStore {
    /// The transaction a handler writes through: dropping it without
    /// [`commit_transaction`](Self::commit_transaction) rolls it back.
    type Transaction: Send + 'static;

    /// Begins a transaction on a connection of the store's own pool (on SQLite, `BEGIN
    /// IMMEDIATE`: the write lock is taken at once, so the transaction cannot fail later on
    /// a lock upgrade; on MySQL, at the session's `REPEATABLE READ`).
    async fn begin_transaction(&self) -> Result<Self::Transaction, Error>;

    /// [`advance`](ExclusiveCheckpointStore::advance) inside `transaction`.
    async fn advance_in_transaction(
        &self,
        transaction: &mut Self::Transaction,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
    ) -> Result<(), Error>;

    /// Commits `transaction`.
    async fn commit_transaction(&self, transaction: Self::Transaction) -> Result<(), Error>;
}
