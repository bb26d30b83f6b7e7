//! [`CheckpointAdmin`](checkpoint_core::CheckpointAdmin)'s requests.
//!
//! `groups` and `retired` are one `SELECT`. `start_at`, `retire` and `purge` each run in one
//! transaction whose reads are locking reads: what they read is the newest committed data,
//! and the rows and gaps they read stay locked until they commit, so it cannot change before
//! they write; they are all-or-nothing.

use std::sync::Arc;

use checkpoint_core::{Error, Operation};
use checkpoint_sql::admin;
use checkpoint_sql::json::positions_json;
use sqlx::mysql::MySqlConnection;

use super::{MysqlEngine, Requests, begin, finish, sql};
use crate::error::backend;

impl Requests {
    /// Every group, of checkpoints and of tombstones, sorted (`sql/groups.sql`).
    pub(crate) async fn groups(
        &self,
        connection: &mut MySqlConnection,
    ) -> Result<Vec<String>, Error> {
        admin::groups::<MysqlEngine, _>(connection, &self.groups).await
    }

    /// The retired subscriptions of `group`, sorted (`sql/retired.sql`).
    pub(crate) async fn retired(
        &self,
        connection: &mut MySqlConnection,
        group: &str,
    ) -> Result<Vec<String>, Error> {
        admin::retired::<MysqlEngine, _>(connection, &self.retired, group).await
    }

    /// One transaction: refuses a retired or existing subscription, else creates every
    /// checkpoint.
    pub(crate) async fn start_at(
        &self,
        connection: &mut MySqlConnection,
        group: &str,
        subscription: &str,
        positions: &[(u32, u64)],
    ) -> Result<(), Error> {
        let operation = Operation::StartAt;
        let mut transaction = begin(connection, operation).await?;
        let outcome = match self
            .presence(&mut transaction, operation, group, subscription)
            .await
        {
            Ok((true, _)) => Err(Error::retired(group, subscription)),
            Ok((false, true)) => Err(Error::exists(group, subscription)),
            Ok((false, false)) => sqlx::query(sql(&self.start_at))
                .bind(group)
                .bind(subscription)
                .bind(positions_json(positions))
                .execute(&mut *transaction)
                .await
                .map(drop)
                .map_err(|error| backend(operation, error)),
            Err(error) => Err(error),
        };
        finish(transaction, operation, outcome).await
    }

    /// One transaction: writes the tombstone and deletes the checkpoints.
    pub(crate) async fn retire(
        &self,
        connection: &mut MySqlConnection,
        group: &str,
        subscription: &str,
    ) -> Result<(), Error> {
        let operation = Operation::Retire;
        let mut transaction = begin(connection, operation).await?;
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

    /// One transaction: a retired subscription loses its tombstone and anything left of it
    /// (checkpoints, leases, heartbeats); a live one is refused; nothing at all is fine.
    pub(crate) async fn purge(
        &self,
        connection: &mut MySqlConnection,
        group: &str,
        subscription: &str,
    ) -> Result<(), Error> {
        let operation = Operation::Purge;
        let mut transaction = begin(connection, operation).await?;
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

    /// Whether the subscription has a tombstone, and whether it has checkpoints, by locking
    /// reads (`sql/presence.sql`).
    async fn presence(
        &self,
        connection: &mut MySqlConnection,
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
    connection: &mut MySqlConnection,
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
