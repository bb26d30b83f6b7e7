//! [`CheckpointAdmin`] on PostgreSQL: the operations API, over the tombstone table
//! `<table>_retired` (see the crate doc, "Retired subscriptions").

use async_trait::async_trait;
use checkpoint_core::validation::{validate_group, validate_key, validate_start_at};
use checkpoint_core::{CheckpointAdmin, Error, Operation};
use sqlx::Connection;
use sqlx::postgres::PgConnection;

use crate::BACKEND;
use crate::error::{backend, is_unique_violation};
use crate::layout::position_to_db;
use crate::requests::{RETIRE_LOCK_TIMEOUT, START_AT_LOCK, sql};
use crate::store::PostgresCheckpointStore;

#[async_trait]
impl CheckpointAdmin for PostgresCheckpointStore {
    /// One statement: a loose index scan of the checkpoint table (one index probe per group)
    /// and the tombstone table, merged and sorted by bytes. Every group, in one reply.
    #[tracing::instrument(
        name = "checkpoint.groups",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = %self.table, count)
    )]
    async fn groups(&self) -> Result<Vec<String>, Error> {
        self.pooled_once_more_if_lost(Operation::Groups, |mut connection| async move {
            let groups = sqlx::query_scalar(sql(&self.requests.groups))
                .fetch_all(&mut *connection)
                .await
                .map_err(|error| backend(Operation::Groups, error));
            if let Ok(groups) = &groups {
                tracing::Span::current().record("count", groups.len());
            }
            connection.release(groups)
        })
        .await
    }

    /// One transaction that creates every checkpoint or none: the name's advisory lock (see
    /// `sql/start_at_lock.sql`), then `sql/start_at.sql`. Not run a second time on a lost
    /// connection: had the first attempt committed, the second would report the caller's own
    /// checkpoints as [`Error::Exists`].
    #[tracing::instrument(
        name = "checkpoint.start_at",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = %self.table, partitions = positions.len())
    )]
    async fn start_at(
        &self,
        group: &str,
        subscription: &str,
        positions: &[(u32, u64)],
    ) -> Result<(), Error> {
        validate_start_at(group, subscription, positions)?;
        let partitions: Vec<i64> = positions
            .iter()
            .map(|&(partition, _)| i64::from(partition))
            .collect();
        let positions: Vec<i64> = positions
            .iter()
            .map(|&(_, position)| position_to_db(position))
            .collect();
        let (partitions, positions) = (&partitions, &positions);
        self.pooled(Operation::StartAt, |mut connection| async move {
            let started = self
                .start_at_on(&mut connection, group, subscription, partitions, positions)
                .await;
            let started = match started {
                Ok((true, _)) => Err(Error::retired(group, subscription)),
                Ok((false, true)) => Err(Error::exists(group, subscription)),
                Ok((false, false)) => Ok(()),
                // A checkpoint created by a concurrent save: the whole statement rolled back.
                Err(error) if is_unique_violation(&error) => {
                    Err(Error::exists(group, subscription))
                }
                Err(error) => Err(backend(Operation::StartAt, error)),
            };
            connection.release(started)
        })
        .await
    }

    /// One transaction of five round trips: `BEGIN`, bound the lock wait, lock the table against
    /// writers, write the tombstone and delete the checkpoints, commit. Idempotent, so run
    /// once more on a lost connection.
    #[tracing::instrument(
        name = "checkpoint.retire",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = %self.table)
    )]
    async fn retire(&self, group: &str, subscription: &str) -> Result<(), Error> {
        validate_key(group, subscription)?;
        self.pooled_once_more_if_lost(Operation::Retire, |mut connection| async move {
            let retired = self.retire_on(&mut connection, group, subscription).await;
            connection.release(retired)
        })
        .await
    }

    #[tracing::instrument(
        name = "checkpoint.retired",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = %self.table, count)
    )]
    async fn retired(&self, group: &str) -> Result<Vec<String>, Error> {
        validate_group(group)?;
        self.pooled_once_more_if_lost(Operation::Retired, |mut connection| async move {
            let retired = sqlx::query_scalar(sql(&self.requests.retired))
                .bind(group)
                .fetch_all(&mut *connection)
                .await
                .map_err(|error| backend(Operation::Retired, error));
            if let Ok(retired) = &retired {
                tracing::Span::current().record("count", retired.len());
            }
            connection.release(retired)
        })
        .await
    }

    /// One statement (see `sql/purge.sql`).
    #[tracing::instrument(
        name = "checkpoint.purge",
        level = "debug",
        skip_all,
        fields(backend = BACKEND, table = %self.table)
    )]
    async fn purge(&self, group: &str, subscription: &str) -> Result<(), Error> {
        validate_key(group, subscription)?;
        self.pooled_once_more_if_lost(Operation::Purge, |mut connection| async move {
            let purged: Result<(bool, bool), Error> = sqlx::query_as(sql(&self.requests.purge))
                .bind(group)
                .bind(subscription)
                .fetch_one(&mut *connection)
                .await
                .map_err(|error| backend(Operation::Purge, error));
            let purged = match purged {
                Ok((false, true)) => Err(Error::not_retired(group, subscription)),
                Ok(_) => Ok(()),
                Err(error) => Err(error),
            };
            connection.release(purged)
        })
        .await
    }
}

impl PostgresCheckpointStore {
    /// Start_at's transaction on `connection`: whether the name is retired, and whether it
    /// was live (then nothing was created). Dropped uncommitted on an error, which rolls back.
    async fn start_at_on(
        &self,
        connection: &mut PgConnection,
        group: &str,
        subscription: &str,
        partitions: &[i64],
        positions: &[i64],
    ) -> Result<(bool, bool), sqlx::Error> {
        let mut transaction = connection.begin().await?;
        sqlx::query(START_AT_LOCK)
            .bind(group)
            .bind(subscription)
            .execute(&mut *transaction)
            .await?;
        let (retired, live, _created): (bool, bool, i64) =
            sqlx::query_as(sql(&self.requests.start_at))
                .bind(group)
                .bind(subscription)
                .bind(partitions)
                .bind(positions)
                .fetch_one(&mut *transaction)
                .await?;
        transaction.commit().await?;
        Ok((retired, live))
    }

    /// Retire's transaction on `connection` (see `sql/retire_lock.sql` for why the lock).
    async fn retire_on(
        &self,
        connection: &mut PgConnection,
        group: &str,
        subscription: &str,
    ) -> Result<(), Error> {
        let failed = |error| backend(Operation::Retire, error);
        let mut transaction = connection.begin().await.map_err(failed)?;
        if let Some(timeout) = self.timeout {
            sqlx::query(RETIRE_LOCK_TIMEOUT)
                .bind(format!("{}ms", timeout.as_millis().max(1)))
                .execute(&mut *transaction)
                .await
                .map_err(failed)?;
        }
        sqlx::query(sql(&self.requests.retire_lock))
            .execute(&mut *transaction)
            .await
            .map_err(failed)?;
        sqlx::query(sql(&self.requests.retire))
            .bind(group)
            .bind(subscription)
            .execute(&mut *transaction)
            .await
            .map_err(failed)?;
        transaction.commit().await.map_err(failed)
    }
}
