//! [`CheckpointAdmin`] on SQLite: the operations API, over the tombstone table
//! `<table>_retired` (see the crate doc, "Retired subscriptions").
//!
//! `groups` and `retired` are one `SELECT`. `start_at`, `retire` and `purge` each run in one
//! `BEGIN IMMEDIATE` transaction: it takes the database's write lock first, so what they read
//! cannot change before they write, and they are all-or-nothing.

use async_trait::async_trait;
use checkpoint_core::validation::{validate_group, validate_key, validate_start_at};
use checkpoint_core::{CheckpointAdmin, Error, Operation};
use std::sync::Arc;

use sqlx::sqlite::SqliteConnection;
use sqlx::{Sqlite, Transaction};

use crate::BACKEND;
use crate::error::backend;
use crate::requests::{positions_json, sql};
use crate::store::SqliteCheckpointStore;

#[async_trait]
impl CheckpointAdmin for SqliteCheckpointStore {
    #[tracing::instrument(
        name = "checkpoint.groups",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = self.table())
    )]
    async fn groups(&self) -> Result<Vec<String>, Error> {
        self.timed(Operation::Groups, async {
            sqlx::query_scalar(sql(&self.requests.groups))
                .fetch_all(&self.pool)
                .await
                .map_err(|error| backend(Operation::Groups, error))
        })
        .await
    }

    #[tracing::instrument(
        name = "checkpoint.start_at",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = self.table(), group = group, subscription = subscription, partitions = positions.len())
    )]
    async fn start_at(
        &self,
        group: &str,
        subscription: &str,
        positions: &[(u32, u64)],
    ) -> Result<(), Error> {
        validate_start_at(group, subscription, positions)?;
        let positions = positions_json(positions);
        self.timed(Operation::StartAt, async {
            let mut transaction = self.begin_immediate(Operation::StartAt).await?;
            let outcome = self
                .start_at_on(&mut transaction, group, subscription, &positions)
                .await;
            finish(transaction, Operation::StartAt, outcome).await
        })
        .await
    }

    #[tracing::instrument(
        name = "checkpoint.retire",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = self.table(), group = group, subscription = subscription)
    )]
    async fn retire(&self, group: &str, subscription: &str) -> Result<(), Error> {
        validate_key(group, subscription)?;
        self.timed(Operation::Retire, async {
            let mut transaction = self.begin_immediate(Operation::Retire).await?;
            let statements = [
                &self.requests.retire_tombstone,
                &self.requests.delete_subscription,
            ];
            let outcome = self
                .run_on(
                    &mut transaction,
                    Operation::Retire,
                    &statements,
                    group,
                    subscription,
                )
                .await;
            finish(transaction, Operation::Retire, outcome).await
        })
        .await
    }

    #[tracing::instrument(
        name = "checkpoint.retired",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = self.table(), group = group)
    )]
    async fn retired(&self, group: &str) -> Result<Vec<String>, Error> {
        validate_group(group)?;
        self.timed(Operation::Retired, async {
            sqlx::query_scalar(sql(&self.requests.retired))
                .bind(group)
                .fetch_all(&self.pool)
                .await
                .map_err(|error| backend(Operation::Retired, error))
        })
        .await
    }

    #[tracing::instrument(
        name = "checkpoint.purge",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = self.table(), group = group, subscription = subscription)
    )]
    async fn purge(&self, group: &str, subscription: &str) -> Result<(), Error> {
        validate_key(group, subscription)?;
        self.timed(Operation::Purge, async {
            let mut transaction = self.begin_immediate(Operation::Purge).await?;
            let outcome = self.purge_on(&mut transaction, group, subscription).await;
            finish(transaction, Operation::Purge, outcome).await
        })
        .await
    }
}

impl SqliteCheckpointStore {
    /// A `BEGIN IMMEDIATE` transaction on a pooled connection: it holds the database's write
    /// lock from its first statement (waiting for it up to the busy timeout).
    async fn begin_immediate(
        &self,
        operation: Operation,
    ) -> Result<Transaction<'static, Sqlite>, Error> {
        self.pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(|error| backend(operation, error))
    }

    /// start_at under the write lock: refuses a retired or existing subscription, else
    /// creates every checkpoint.
    async fn start_at_on(
        &self,
        connection: &mut SqliteConnection,
        group: &str,
        subscription: &str,
        positions: &str,
    ) -> Result<(), Error> {
        let operation = Operation::StartAt;
        match self
            .presence(connection, operation, group, subscription)
            .await?
        {
            (true, _) => Err(Error::retired(group, subscription)),
            (false, true) => Err(Error::exists(group, subscription)),
            (false, false) => {
                sqlx::query(sql(&self.requests.start_at))
                    .bind(group)
                    .bind(subscription)
                    .bind(positions)
                    .execute(connection)
                    .await
                    .map_err(|error| backend(operation, error))?;
                Ok(())
            }
        }
    }

    /// purge under the write lock: a retired subscription loses its tombstone and anything
    /// left of it; a live one is refused; nothing at all is fine.
    async fn purge_on(
        &self,
        connection: &mut SqliteConnection,
        group: &str,
        subscription: &str,
    ) -> Result<(), Error> {
        let operation = Operation::Purge;
        match self
            .presence(connection, operation, group, subscription)
            .await?
        {
            (false, true) => Err(Error::not_retired(group, subscription)),
            (false, false) => Ok(()),
            (true, _) => {
                let statements = [
                    &self.requests.purge_tombstone,
                    &self.requests.delete_subscription,
                ];
                self.run_on(connection, operation, &statements, group, subscription)
                    .await
            }
        }
    }

    /// Runs each statement (parameters: group, subscription) in turn on `connection`.
    async fn run_on(
        &self,
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

    /// Whether the subscription has a tombstone, and whether it has checkpoints.
    async fn presence(
        &self,
        connection: &mut SqliteConnection,
        operation: Operation,
        group: &str,
        subscription: &str,
    ) -> Result<(bool, bool), Error> {
        sqlx::query_as(sql(&self.requests.presence))
            .bind(group)
            .bind(subscription)
            .fetch_one(connection)
            .await
            .map_err(|error| backend(operation, error))
    }
}

/// Commits `transaction` when `outcome` is `Ok`, rolls it back otherwise. (An abandoned call
/// drops the transaction, which sqlx rolls back.)
async fn finish<T>(
    transaction: Transaction<'static, Sqlite>,
    operation: Operation,
    outcome: Result<T, Error>,
) -> Result<T, Error> {
    let failed = |error| backend(operation, error);
    match outcome {
        Ok(value) => {
            transaction.commit().await.map_err(failed)?;
            Ok(value)
        }
        Err(error) => {
            transaction.rollback().await.map_err(failed)?;
            Err(error)
        }
    }
}
