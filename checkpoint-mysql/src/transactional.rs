//! [`TransactionalStore`]: the compare-and-set advance in a transaction of the store's pool,
//! for a subscription's transactional handler.

use async_trait::async_trait;
use checkpoint_core::timeout::within;
use checkpoint_core::transactional::TransactionalStore;
use checkpoint_core::{Error, Operation};
use sqlx::{MySql, Transaction};

use crate::error::backend;
use crate::{BACKEND, MysqlCheckpointStore};

#[async_trait]
impl TransactionalStore for MysqlCheckpointStore {
    type Transaction = Transaction<'static, MySql>;

    async fn begin_transaction(&self) -> Result<Self::Transaction, Error> {
        let begin = async {
            self.pool()
                .begin()
                .await
                .map_err(|error| backend(Operation::Begin, error))
        };
        within(BACKEND, Operation::Begin, self.timeout, begin).await
    }

    async fn advance_in_transaction(
        &self,
        transaction: &mut Self::Transaction,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
    ) -> Result<(), Error> {
        self.advance_in(transaction, group, subscription, partition, from, to)
            .await
    }

    async fn commit_transaction(&self, transaction: Self::Transaction) -> Result<(), Error> {
        let commit = async {
            transaction
                .commit()
                .await
                .map_err(|error| backend(Operation::Commit, error))
        };
        within(BACKEND, Operation::Commit, self.timeout, commit).await
    }
}
