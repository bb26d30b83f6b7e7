//! [`CheckpointAdmin`](checkpoint_core::CheckpointAdmin)'s requests.
//!
//! `groups` and `retired` are one `SELECT`. `start_at`, `retire` and `purge` each run in one
//! `BEGIN IMMEDIATE` transaction: it takes the database's write lock first, so what they read
//! cannot change before they write, and they are all-or-nothing.

use std::sync::Arc;

use checkpoint_core::{Error, Operation};
use sqlx::sqlite::SqliteConnection;

use checkpoint_sql::admin;

use checkpoint_sql::json::positions_json;

use super::{Requests, SqliteEngine, begin_immediate, finish, sql};
use crate::error::backend;

impl Requests {
    /// Every group, of checkpoints and of tombstones, sorted (`sql/groups.sql`).
    pub(crate) async fn groups(
        &self,
        connection: &mut SqliteConnection,
    ) -> Result<Vec<String>, Error> {
        admin::groups::<SqliteEngine, _>(connection, &self.groups).await
    }

    /// The retired subscriptions of `group`, sorted (`sql/retired.sql`).
    pub(crate) async fn retired(
        &self,
        connection: &mut SqliteConnection,
        group: &str,
    ) -> Result<Vec<String>, Error> {
        admin::retired::<SqliteEngine, _>(connection, &self.retired, group).await
    }

    /// Under the write lock: refuses a retired or existing subscription, else creates every
    /// checkpoint.
    pub(crate) async fn start_at(
        &self,
        connection: &mut SqliteConnection,
        group: &str,
        subscription: &str,
        positions: &[(u32, u64)],
    ) -> Result<(), Error> {
        let operation = Operation::StartAt;
        let positions = positions_json(positions);
        let mut transaction = begin_immediate(connection, operation).await?;
        let outcome = match self
            .presence(&mut transaction, operation, group, subscription)
            .await
        {
            Ok((true, _)) => Err(Error::retired(group, subscription)),
            Ok((false, true)) => Err(Error::exists(group, subscription)),
            Ok((false, false)) => sqlx::query(sql(&self.start_at))
                .bind(group)
                .bind(subscription)
                .bind(positions)
                .execute(&mut *transaction)
                .await
                .map(drop)
                .map_err(|error| backend(operation, error)),
            Err(error) => Err(error),
        };
        finish(transaction, operation, outcome).await
    }

    /// Under the write lock: writes the tombstone and deletes the checkpoints.
    pub(crate) async fn retire(
        &self,
        connection: &mut SqliteConnection,
        group: &str,
        subscription: &str,
    ) -> Result<(), Error> {
        let operation = Operation::Retire;
        let mut transaction = begin_immediate(connection, operation).await?;
        let statements = [&self.retire_tombstone, &self.delete_subscription];
        let outcome = run_each(
            &mut transaction,
            operation,
            &statements,
            group,
            subscription,
        )
        .await;
        finish(transaction, operation, outcome).await
    }

    /// Under the write lock: a retired subscription loses its tombstone and anything left of
    /// it (checkpoints, leases, heartbeats); a live one is refused; nothing at all is fine.
    pub(crate) async fn purge(
        &self,
        connection: &mut SqliteConnection,
        group: &str,
        subscription: &str,
    ) -> Result<(), Error> {
        let operation = Operation::Purge;
        let mut transaction = begin_immediate(connection, operation).await?;
        let outcome = match self
            .presence(&mut transaction, operation, group, subscription)
            .await
        {
            Ok((false, true)) => Err(Error::not_retired(group, subscription)),
            Ok((false, false)) => Ok(()),
            Ok((true, _)) => {
                let statements = [
                    &self.purge_tombstone,
                    &self.delete_subscription,
                    &self.purge_leases,
                    &self.purge_lease_owners,
                ];
                run_each(
                    &mut transaction,
                    operation,
                    &statements,
                    group,
                    subscription,
                )
                .await
            }
            Err(error) => Err(error),
        };
        finish(transaction, operation, outcome).await
    }

    /// Whether the subscription has a tombstone, and whether it has checkpoints.
    async fn presence(
        &self,
        connection: &mut SqliteConnection,
        operation: Operation,
        group: &str,
        subscription: &str,
    ) -> Result<(bool, bool), Error> {
        sqlx::query_as(sql(&self.presence))
            .bind(group)
            .bind(subscription)
            .fetch_one(connection)
            .await
            .map_err(|error| backend(operation, error))
    }
}

/// Runs each statement (parameters: group, subscription) in turn on `connection`.
async fn run_each(
    connection: &mut SqliteConnection,
    operation: Operation,
    statements: &[&Arc<str>],
    group: &str,
    subscription: &str,
) -> Result<(), Error> {
    for statement in statements {
        sqlx::query(sql(statement))
            .bind(group)
            .bind(subscription)
            .execute(&mut *connection)
            .await
            .map_err(|error| backend(operation, error))?;
    }
    Ok(())
}
