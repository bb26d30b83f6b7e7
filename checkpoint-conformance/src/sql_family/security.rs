//! Least privilege in the SQL family: a user granted only what the engine's crate doc
//! states runs what it says.

use std::future::Future;
use std::time::Duration;

use checkpoint_core::{CheckpointAdmin, CheckpointStore, Error, LeaseStore};
use checkpoint_sql::{Engine, SqlStore};

use super::SqlServer;
use crate::{error_chain, fresh_group};

/// What an engine's tests give the least-privilege cases: users of their own, with the
/// privileges the engine's crate doc states, on tables of their own.
pub trait LeastPrivilege<E: Engine>: SqlServer<E> {
    /// A name for a table or a user no other test uses, starting with `prefix`.
    fn unique_ident(&self, prefix: &str) -> String;

    /// Creates `user` with `password` and exactly the operator's privileges (the operations
    /// API and what a worker needs) on `table` and its companion tables, as the crate doc
    /// states them.
    fn create_operator(
        &self,
        user: &str,
        password: &str,
        table: &str,
    ) -> impl Future<Output = ()> + Send;

    /// A store connected as `user` with `password`, on `table`.
    fn connect_as(
        &self,
        user: &str,
        password: &str,
        table: &str,
    ) -> impl Future<Output = Result<SqlStore<E>, Error>> + Send;

    /// Drops `user` and every table of `table` (the store's and its companions).
    fn drop_user_and_tables(&self, user: &str, table: &str) -> impl Future<Output = ()> + Send;
}

/// The operator's privileges, as the crate doc states them, run every operation of
/// `CheckpointAdmin`: save, a lease acquired, start_at, retire, retired, groups, purge (which
/// ends the retired subscription's leases) and list, on a table migrated by its owner.
///
/// # Panics
///
/// When a call fails or returns what it should not, like a failed test.
#[allow(clippy::unwrap_used, clippy::panic)]
pub async fn the_operator_privileges_run_every_admin_operation<E: Engine>(
    server: &impl LeastPrivilege<E>,
) {
    let table = server.unique_ident("cp_oper");
    let user = server.unique_ident("op");
    let owner = server.store().await.with_table(&table).unwrap();
    owner.migrate().await.unwrap();
    server.create_operator(&user, "operator-pw", &table).await;
    let outcome = async {
        let store = server.connect_as(&user, "operator-pw", &table).await?;
        let group = fresh_group("operator");
        store.save(&group, "old", 0, 10).await?;
        store
            .acquire(&group, "old", "w", &[0], Duration::from_secs(5))
            .await?;
        store.start_at(&group, "new", &[(0, 5), (1, 0)]).await?;
        store.retire(&group, "old").await?;
        assert_eq!(store.retired(&group).await?, ["old"]);
        assert_eq!(store.groups().await?, std::slice::from_ref(&group));
        store.purge(&group, "old").await?;
        assert!(store.leases(&group, "old").await?.leases.is_empty());
        assert_eq!(store.list(&group).await?.len(), 2);
        store.pool().close().await;
        Ok::<_, Error>(())
    }
    .await;
    owner.pool().close().await;
    server.drop_user_and_tables(&user, &table).await;
    outcome.unwrap_or_else(|error| panic!("{}", error_chain(&error)));
}
