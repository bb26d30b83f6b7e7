//! [`CheckpointAdmin`](checkpoint_core::CheckpointAdmin)'s requests: one statement each for
//! `groups`, `retired` and `purge`; a transaction each for `start_at` and `retire`.

use std::time::Duration;

use checkpoint_core::stored::SqlColumns;
use checkpoint_core::{Error, Operation};
use sqlx::Connection;
use sqlx::postgres::PgConnection;

use checkpoint_sql::admin;

use super::{RETIRE_LOCK_TIMEOUT, Requests, START_AT_LOCK, sql};
use crate::PostgresEngine;
use crate::error::{backend, is_unique_violation};
use checkpoint_sql::requests::Admin;

impl Admin<PostgresEngine> for Requests {
    /// Every group, of checkpoints and of tombstones, sorted (`sql/groups.sql`).
    async fn groups(&self, connection: &mut PgConnection) -> Result<Vec<String>, Error> {
        admin::groups::<PostgresEngine, _>(connection, &self.groups).await
    }

    /// The retired subscriptions of `group`, sorted (`sql/retired.sql`).
    async fn retired(
        &self,
        connection: &mut PgConnection,
        group: &str,
    ) -> Result<Vec<String>, Error> {
        admin::retired::<PostgresEngine, _>(connection, &self.retired, group).await
    }

    /// Deletes the tombstone and anything left of a retired subscription; a live one is
    /// [`Error::NotRetired`], an unknown one is fine.
    async fn purge(
        &self,
        connection: &mut PgConnection,
        group: &str,
        subscription: &str,
    ) -> Result<(), Error> {
        let (purged, live): (bool, bool) = sqlx::query_as(sql(&self.purge))
            .bind(group)
            .bind(subscription)
            .fetch_one(connection)
            .await
            .map_err(|error| backend(Operation::Purge, error))?;
        if !purged && live {
            return Err(Error::not_retired(group, subscription));
        }
        Ok(())
    }

    /// Creates every checkpoint of a new subscription, or none: [`Error::Retired`] for a
    /// tombstone, [`Error::Exists`] for a checkpoint of the name (one a concurrent save
    /// created included).
    async fn start_at(
        &self,
        connection: &mut PgConnection,
        group: &str,
        subscription: &str,
        positions: &[(u32, u64)],
    ) -> Result<(), Error> {
        match self
            .start_at_transaction(connection, group, subscription, positions)
            .await
        {
            Ok((true, _)) => Err(Error::retired(group, subscription)),
            Ok((false, true)) => Err(Error::exists(group, subscription)),
            Ok((false, false)) => Ok(()),
            // A checkpoint created by a concurrent save: the whole statement rolled back.
            Err(error) if is_unique_violation(&error) => Err(Error::exists(group, subscription)),
            Err(error) => Err(backend(Operation::StartAt, error)),
        }
    }

    /// Retire's transaction: `BEGIN`, bound the wait for the lock by `lock_timeout` (when the
    /// store has a timeout), lock the table against writers (see `sql/retire_lock.sql` for
    /// why), write the tombstone and delete the checkpoints, `COMMIT`.
    async fn retire(
        &self,
        connection: &mut PgConnection,
        group: &str,
        subscription: &str,
        lock_timeout: Option<Duration>,
    ) -> Result<(), Error> {
        let failed = |error| backend(Operation::Retire, error);
        let mut transaction = connection.begin().await.map_err(failed)?;
        if let Some(timeout) = lock_timeout {
            sqlx::query(RETIRE_LOCK_TIMEOUT)
                .bind(format!("{}ms", timeout.as_millis().max(1)))
                .execute(&mut *transaction)
                .await
                .map_err(failed)?;
        }
        sqlx::query(sql(&self.retire_lock))
            .execute(&mut *transaction)
            .await
            .map_err(failed)?;
        sqlx::query(sql(&self.retire))
            .bind(group)
            .bind(subscription)
            .execute(&mut *transaction)
            .await
            .map_err(failed)?;
        transaction.commit().await.map_err(failed)
    }
}

impl Requests {
    /// Start_at's transaction: the name's advisory lock (see `sql/start_at_lock.sql`), then
    /// `sql/start_at.sql`. Returns whether the name is retired, and whether it was live (then
    /// nothing was created). Dropped uncommitted on an error, which rolls back.
    async fn start_at_transaction(
        &self,
        connection: &mut PgConnection,
        group: &str,
        subscription: &str,
        positions: &[(u32, u64)],
    ) -> Result<(bool, bool), sqlx::Error> {
        let partitions: Vec<i64> = positions
            .iter()
            .map(|&(partition, _)| i64::from(partition))
            .collect();
        let positions: Vec<i64> = positions
            .iter()
            .map(|&(_, position)| SqlColumns::position_to_db(position))
            .collect();
        let mut transaction = connection.begin().await?;
        sqlx::query(START_AT_LOCK)
            .bind(group)
            .bind(subscription)
            .execute(&mut *transaction)
            .await?;
        let (retired, live, _created): (bool, bool, i64) = sqlx::query_as(sql(&self.start_at))
            .bind(group)
            .bind(subscription)
            .bind(partitions)
            .bind(positions)
            .fetch_one(&mut *transaction)
            .await?;
        transaction.commit().await?;
        Ok((retired, live))
    }
}
