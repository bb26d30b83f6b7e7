//! [`TransactionalStore`](checkpoint_core::transactional::TransactionalStore) of a SQL store,
//! written once: [`transactional_store!`](crate::transactional_store).

/// Writes a SQL store's `TransactionalStore` impl: a transaction of the store's pool begun
/// with the statement `begin`, the compare-and-set `advance_in` inside it, the commit; the
/// begin and the commit each bounded by the store's timeout.
///
/// `transactional_store!(Store, Engine, Database, begin: "BEGIN")` (`Database` the engine's
/// sqlx database, named apart so that a crate-private engine stays private) needs the fields
/// `Store::pool` (a sqlx pool of that database) and `Store::timeout` (`Option<Duration>`), the method
/// `Store::advance_in` (see [`in_family!`](crate::in_family)), and `async-trait` and `sqlx`
/// among the engine crate's dependencies.
#[macro_export]
macro_rules! transactional_store {
    ($store:ty, $engine:ty, $database:ty, begin: $begin:literal) => {
        #[::async_trait::async_trait]
        impl ::checkpoint_core::transactional::TransactionalStore for $store {
            type Transaction = ::sqlx::Transaction<'static, $database>;

            async fn begin_transaction(
                &self,
            ) -> Result<Self::Transaction, ::checkpoint_core::Error> {
                let operation = ::checkpoint_core::Operation::Begin;
                let begin = async {
                    self.pool
                        .begin_with($begin)
                        .await
                        .map_err(|error| <$engine as $crate::Engine>::error(operation, error))
                };
                let backend = <$store as ::checkpoint_core::door::Door>::BACKEND;
                ::checkpoint_core::timeout::within(backend, operation, self.timeout, begin).await
            }

            async fn advance_in_transaction(
                &self,
                transaction: &mut Self::Transaction,
                group: &str,
                subscription: &str,
                partition: u32,
                from: u64,
                to: u64,
            ) -> Result<(), ::checkpoint_core::Error> {
                self.advance_in(transaction, group, subscription, partition, from, to)
                    .await
            }

            async fn commit_transaction(
                &self,
                transaction: Self::Transaction,
            ) -> Result<(), ::checkpoint_core::Error> {
                let operation = ::checkpoint_core::Operation::Commit;
                let commit = async {
                    transaction
                        .commit()
                        .await
                        .map_err(|error| <$engine as $crate::Engine>::error(operation, error))
                };
                let backend = <$store as ::checkpoint_core::door::Door>::BACKEND;
                ::checkpoint_core::timeout::within(backend, operation, self.timeout, commit).await
            }
        }
    };
}
