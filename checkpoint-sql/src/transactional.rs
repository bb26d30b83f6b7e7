//! [`TransactionalStore`] of [`SqlStore`]: a transaction of the store's pool begun with the
//! engine's [`BEGIN`](Engine::BEGIN), the compare-and-set `advance_in` inside it, the commit;
//! the begin and the commit each bounded by the store's timeout.

use checkpoint_core::timeout::within;
use checkpoint_core::transactional::TransactionalStore;
use checkpoint_core::{Error, Operation};

use crate::engine::Engine;
use crate::store::SqlStore;

#[async_trait::async_trait]
impl<E: Engine> TransactionalStore for SqlStore<E> {
    type Transaction = sqlx::Transaction<'static, E::Database>;

    async fn begin_transaction(&self) -> Result<Self::Transaction, Error> {
        let operation = Operation::Begin;
        let begin = async {
            self.pool
                .begin_with(E::BEGIN)
                .await
                .map_err(|error| E::error(operation, error))
        };
        within(E::BACKEND, operation, self.timeout, begin).await
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
        let operation = Operation::Commit;
        let commit = async {
            transaction
                .commit()
                .await
                .map_err(|error| E::error(operation, error))
        };
        within(E::BACKEND, operation, self.timeout, commit).await
    }
}
