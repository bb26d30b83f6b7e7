//! The reads of [`CheckpointAdmin`](checkpoint_core::CheckpointAdmin) every SQL engine sends
//! the same way: one `SELECT` of names each, on any sqlx executor.

use std::sync::Arc;

use checkpoint_core::{Error, Operation};
use sqlx::{Database, Decode, Encode, Executor, IntoArguments, Type};

use crate::engine::{Connection, Engine};
use crate::requests::Admin;
use crate::{begin, finish, statement};

/// Every group, of checkpoints and of tombstones, in the statement's order. No parameter; the
/// statement returns one text column.
pub async fn groups<'c, E, X>(executor: X, text: &Arc<str>) -> Result<Vec<String>, Error>
where
    E: Engine,
    X: Executor<'c, Database = E::Database>,
    for<'q> String: Decode<'q, E::Database> + Type<E::Database>,
    <E::Database as Database>::Arguments: IntoArguments<E::Database>,
    usize: sqlx::ColumnIndex<<E::Database as Database>::Row>,
{
    sqlx::query_scalar(statement(text))
        .fetch_all(executor)
        .await
        .map_err(|error| E::error(Operation::Groups, error))
}

/// The retired subscriptions of `group`, in the statement's order. Parameters: the group; the
/// statement returns one text column.
pub async fn retired<'c, E, X>(
    executor: X,
    text: &Arc<str>,
    group: &str,
) -> Result<Vec<String>, Error>
where
    E: Engine,
    X: Executor<'c, Database = E::Database>,
    for<'q> &'q str: Encode<'q, E::Database> + Type<E::Database>,
    for<'q> String: Decode<'q, E::Database> + Type<E::Database>,
    <E::Database as Database>::Arguments: IntoArguments<E::Database>,
    usize: sqlx::ColumnIndex<<E::Database as Database>::Row>,
{
    sqlx::query_scalar(statement(text))
        .bind(group)
        .fetch_all(executor)
        .await
        .map_err(|error| E::error(Operation::Retired, error))
}

/// A subscription's key, bound in this order: group, subscription.
pub type SubscriptionKey<'a> = (&'a str, &'a str);

/// Whether the subscription has a tombstone, and whether it has checkpoints: the engine's
/// `presence` statement (parameters: the key), run inside the caller's transaction so that
/// nothing changes before it acts on the answer.
async fn presence<E>(
    connection: &mut <E::Database as Database>::Connection,
    operation: Operation,
    text: &Arc<str>,
    (group, subscription): SubscriptionKey<'_>,
) -> Result<(bool, bool), Error>
where
    E: Engine,
    for<'c> &'c mut <E::Database as Database>::Connection: Executor<'c, Database = E::Database>,
    for<'q> &'q str: Encode<'q, E::Database> + Type<E::Database>,
    <E::Database as Database>::Arguments: IntoArguments<E::Database>,
    for<'r> (bool, bool): sqlx::FromRow<'r, <E::Database as Database>::Row>,
{
    sqlx::query_as(statement(text))
        .bind(group)
        .bind(subscription)
        .fetch_one(connection)
        .await
        .map_err(|error| E::error(operation, error))
}

/// `start_at` inside the transaction the engine began (one that keeps what `presence` reads
/// from changing until it ends): refuses a retired or existing subscription, else runs
/// `insert` (parameters: the key, then `positions`, the engine's encoding of every partition's
/// position).
pub async fn start_at_in<E>(
    connection: &mut <E::Database as Database>::Connection,
    (presence_text, insert): (&Arc<str>, &Arc<str>),
    key: SubscriptionKey<'_>,
    positions: String,
) -> Result<(), Error>
where
    E: Engine,
    for<'c> &'c mut <E::Database as Database>::Connection: Executor<'c, Database = E::Database>,
    for<'q> &'q str: Encode<'q, E::Database> + Type<E::Database>,
    for<'q> String: Encode<'q, E::Database> + Type<E::Database>,
    <E::Database as Database>::Arguments: IntoArguments<E::Database>,
    for<'r> (bool, bool): sqlx::FromRow<'r, <E::Database as Database>::Row>,
{
    let operation = Operation::StartAt;
    let (group, subscription) = key;
    match presence::<E>(&mut *connection, operation, presence_text, key).await? {
        (true, _) => Err(Error::retired(group, subscription)),
        (false, true) => Err(Error::exists(group, subscription)),
        (false, false) => sqlx::query(statement(insert))
            .bind(group)
            .bind(subscription)
            .bind(positions)
            .execute(connection)
            .await
            .map(drop)
            .map_err(|error| E::error(operation, error)),
    }
}

/// `purge` inside the transaction the engine began: a retired subscription loses its
/// tombstone and anything left of it (`statements`, each with the key as parameters); a live
/// one is refused; nothing at all is fine.
pub async fn purge_in<E>(
    connection: &mut <E::Database as Database>::Connection,
    presence_text: &Arc<str>,
    statements: &[&Arc<str>],
    key: SubscriptionKey<'_>,
) -> Result<(), Error>
where
    E: Engine,
    for<'c> &'c mut <E::Database as Database>::Connection: Executor<'c, Database = E::Database>,
    for<'q> &'q str: Encode<'q, E::Database> + Type<E::Database>,
    <E::Database as Database>::Arguments: IntoArguments<E::Database>,
    for<'r> (bool, bool): sqlx::FromRow<'r, <E::Database as Database>::Row>,
{
    let operation = Operation::Purge;
    match presence::<E>(&mut *connection, operation, presence_text, key).await? {
        (false, true) => Err(Error::not_retired(key.0, key.1)),
        (false, false) => Ok(()),
        (true, _) => run_each::<E>(connection, operation, statements, key).await,
    }
}

/// Runs each of `statements` (parameters: the key) in turn on `connection`: `retire`'s
/// tombstone and deletion inside the engine's transaction, and `purge`'s.
pub async fn run_each<E>(
    connection: &mut <E::Database as Database>::Connection,
    operation: Operation,
    statements: &[&Arc<str>],
    (group, subscription): SubscriptionKey<'_>,
) -> Result<(), Error>
where
    E: Engine,
    for<'c> &'c mut <E::Database as Database>::Connection: Executor<'c, Database = E::Database>,
    for<'q> &'q str: Encode<'q, E::Database> + Type<E::Database>,
    <E::Database as Database>::Arguments: IntoArguments<E::Database>,
{
    for text in statements {
        sqlx::query(statement(text))
            .bind(group)
            .bind(subscription)
            .execute(&mut *connection)
            .await
            .map_err(|error| E::error(operation, error))?;
    }
    Ok(())
}

/// The operations API's statements of an engine whose `start_at`, `retire` and `purge` are
/// each one transaction begun with the engine's [`BEGIN`](Engine::BEGIN) (SQLite's `BEGIN
/// IMMEDIATE` takes the write lock first; MySQL's `BEGIN` at `REPEATABLE READ` reads with
/// locking reads), so what they read cannot change before they write, and each is
/// all-or-nothing. Each is the engine's text; parameters as each function of this module says.
#[derive(Debug)]
pub struct AdminStatements {
    /// Every group: see [`groups`].
    pub groups: Arc<str>,
    /// The retired subscriptions of a group: see [`retired`].
    pub retired: Arc<str>,
    /// Whether a subscription has a tombstone, and checkpoints (see [`start_at_in`]).
    pub presence: Arc<str>,
    /// Creates a subscription's checkpoints from JSON positions (see [`start_at_in`]).
    pub start_at: Arc<str>,
    /// `retire`: writes the tombstone (see [`run_each`]).
    pub retire_tombstone: Arc<str>,
    /// `retire` and `purge`: deletes the subscription's checkpoints.
    pub delete_subscription: Arc<str>,
    /// `purge`: deletes the tombstone.
    pub purge_tombstone: Arc<str>,
    /// `purge`: deletes the subscription's leases.
    pub purge_leases: Arc<str>,
    /// `purge`: deletes the subscription's lease owners.
    pub purge_lease_owners: Arc<str>,
}

impl<E> Admin<E> for AdminStatements
where
    E: Engine,
    for<'c> &'c mut Connection<E>: Executor<'c, Database = E::Database>,
    for<'q> &'q str: Encode<'q, E::Database> + Type<E::Database>,
    for<'q> String: Encode<'q, E::Database> + Decode<'q, E::Database> + Type<E::Database>,
    <E::Database as Database>::Arguments: IntoArguments<E::Database>,
    usize: sqlx::ColumnIndex<<E::Database as Database>::Row>,
    for<'r> (bool, bool): sqlx::FromRow<'r, <E::Database as Database>::Row>,
{
    async fn groups(&self, connection: &mut Connection<E>) -> Result<Vec<String>, Error> {
        groups::<E, _>(connection, &self.groups).await
    }

    async fn retired(
        &self,
        connection: &mut Connection<E>,
        group: &str,
    ) -> Result<Vec<String>, Error> {
        retired::<E, _>(connection, &self.retired, group).await
    }

    /// One transaction: refuses a retired or existing subscription, else creates every
    /// checkpoint.
    async fn start_at(
        &self,
        connection: &mut Connection<E>,
        group: &str,
        subscription: &str,
        positions: &[(u32, u64)],
    ) -> Result<(), Error> {
        let operation = Operation::StartAt;
        let mut transaction = begin::<E>(connection, operation).await?;
        let statements = (&self.presence, &self.start_at);
        let positions = crate::json::positions_json(positions);
        let key = (group, subscription);
        let outcome = start_at_in::<E>(&mut transaction, statements, key, positions).await;
        finish::<E, ()>(transaction, operation, outcome).await
    }

    /// One transaction: writes the tombstone and deletes the checkpoints.
    async fn retire(
        &self,
        connection: &mut Connection<E>,
        group: &str,
        subscription: &str,
        _timeout: Option<std::time::Duration>,
    ) -> Result<(), Error> {
        let operation = Operation::Retire;
        let mut transaction = begin::<E>(connection, operation).await?;
        let statements = [&self.retire_tombstone, &self.delete_subscription];
        let key = (group, subscription);
        let outcome = run_each::<E>(&mut transaction, operation, &statements, key).await;
        finish::<E, ()>(transaction, operation, outcome).await
    }

    /// One transaction: a retired subscription loses its tombstone and anything left of it
    /// (checkpoints, leases, heartbeats); a live one is refused; nothing at all is fine.
    async fn purge(
        &self,
        connection: &mut Connection<E>,
        group: &str,
        subscription: &str,
    ) -> Result<(), Error> {
        let operation = Operation::Purge;
        let mut transaction = begin::<E>(connection, operation).await?;
        let statements = [
            &self.purge_tombstone,
            &self.delete_subscription,
            &self.purge_leases,
            &self.purge_lease_owners,
        ];
        let key = (group, subscription);
        let outcome = purge_in::<E>(&mut transaction, &self.presence, &statements, key).await;
        finish::<E, ()>(transaction, operation, outcome).await
    }
}
