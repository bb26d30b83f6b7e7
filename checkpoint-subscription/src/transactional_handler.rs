//! What a user writes for exactly-once effects: the handler of a batch, in the transaction the
//! checkpoint advances in.

use std::sync::Arc;

use checkpoint_core::source::Entry;
use checkpoint_core::transactional::TransactionalStore;
use futures_util::future::BoxFuture;

use crate::{Handler, HandlerResult};

/// Handles a batch of entries inside a transaction of the store's database: the subscription
/// begins the transaction, calls `handle`, advances the partition's checkpoint from the
/// batch's first position past its last in the same transaction (compare-and-set), and
/// commits. The handler's writes and the checkpoint commit together or not at all, so every
/// entry's effect on the read model happens exactly once, whatever crashes, handovers and
/// zombies. A failed batch is rolled back and retried; a batch that fails every retry is run one
/// entry at a time, so that only the poison entry is parked or stopped on.
///
/// Write it for your store's transaction type (sqlx's `Transaction<'static, Postgres>` for
/// PostgreSQL, `Transaction<'static, MySql>` for MySQL, `Transaction<'static, Sqlite>` for
/// SQLite):
///
/// ```
/// # use checkpoint_core::source::Entry;
/// # use checkpoint_subscription::{BoxFuture, HandlerResult, TransactionalHandler};
/// # use sqlx::{Postgres, Transaction};
/// struct Totals;
///
/// impl TransactionalHandler<Transaction<'static, Postgres>> for Totals {
///     fn handle<'a>(
///         &'a self,
///         transaction: &'a mut Transaction<'static, Postgres>,
///         entries: &'a [Entry],
///     ) -> BoxFuture<'a, HandlerResult> {
///         Box::pin(async move {
///             for entry in entries {
///                 sqlx::query("UPDATE totals SET total = total + 1 WHERE id = $1")
///                     .bind(entry.key.as_deref())
///                     .execute(&mut **transaction)
///                     .await?;
///             }
///             Ok(())
///         })
///     }
/// }
/// ```
///
/// (`examples/src/bin/exactly_once_projection.rs` runs one.)
pub trait TransactionalHandler<T>: Send + Sync + 'static {
    /// Writes the effects of `entries` (in log order, never empty) through `transaction`. Do
    /// not commit or roll back: the subscription does. An error rolls the batch back.
    fn handle<'a>(
        &'a self,
        transaction: &'a mut T,
        entries: &'a [Entry],
    ) -> BoxFuture<'a, HandlerResult>;
}

/// A transactional handler run on one entry in a transaction of its own, without advancing the
/// checkpoint: how a parked entry is retried (the checkpoint has passed it already).
pub(crate) struct OneEntryAlone<S: TransactionalStore> {
    pub(crate) store: Arc<S>,
    pub(crate) handler: Arc<dyn TransactionalHandler<S::Transaction>>,
}

impl<S: TransactionalStore + 'static> Handler for OneEntryAlone<S> {
    fn handle(&self, entry: Arc<Entry>) -> BoxFuture<'static, HandlerResult> {
        let (store, handler) = (Arc::clone(&self.store), Arc::clone(&self.handler));
        Box::pin(async move {
            let mut transaction = store.begin_transaction().await?;
            handler
                .handle(&mut transaction, std::slice::from_ref(&*entry))
                .await?;
            store.commit_transaction(transaction).await?;
            Ok(())
        })
    }
}
