//! [`LeaseStore`](checkpoint_core::LeaseStore)'s requests: each operation is one transaction,
//! `BEGIN IMMEDIATE` for those that write (it takes the database's write lock first, so
//! acquirers in any task or process take turns and what a transaction reads cannot change
//! before it writes), a plain `BEGIN` (one snapshot) for `leases`.
//!
//! The first statement of each transaction, `sql/lease_clock.sql`, reads SQLite's clock once
//! (integer milliseconds of `unixepoch('subsec')`) and whether the subscription is retired;
//! every later statement gets that instant as a parameter, so one clock, the host's, judges
//! every expiry, whatever process sends the call.

use checkpoint_core::lease::{Acquired, HeldLease, LeaseTable, Released};
use checkpoint_core::{Error, Operation};
use sqlx::Connection;
use sqlx::sqlite::SqliteConnection;

use super::{Requests, begin_immediate, finish, sql};
use crate::SqliteEngine;
use crate::error::backend;
use checkpoint_sql::json::partitions_json;
use checkpoint_sql::lease::{LeaseKey, LeaseRow, duration_ms, lease_table, rest};
use checkpoint_sql::requests::Leases;
use std::time::Duration;

use crate::BACKEND;
use crate::layout::COLUMNS;

/// A lease's `epoch` column read back.
fn epoch(operation: Operation, value: i64) -> Result<u64, Error> {
    checkpoint_sql::lease::epoch(BACKEND, operation, value)
}

/// A row of `lease_extend.sql` or `lease_grant.sql`: partition, epoch, handover requester.
type HeldRow = (i64, i64, Option<String>);

/// A [`HeldRow`] read back, through the rules of [`checkpoint_core::stored`].
fn held_lease(
    operation: Operation,
    (partition, stored_epoch, handover): HeldRow,
) -> Result<HeldLease, Error> {
    Ok(HeldLease {
        partition: COLUMNS.partition(operation, partition)?,
        epoch: epoch(operation, stored_epoch)?,
        handover_requested_by: handover,
    })
}

/// The partitions an `UPDATE .. RETURNING partition_id` freed, read back and sorted.
fn partitions(operation: Operation, rows: Vec<i64>) -> Result<Vec<u32>, Error> {
    let mut partitions = rows
        .into_iter()
        .map(|partition| COLUMNS.partition(operation, partition))
        .collect::<Result<Vec<u32>, Error>>()?;
    partitions.sort_unstable();
    Ok(partitions)
}

impl Leases<SqliteEngine> for Requests {
    /// One transaction: refuses a retired subscription; starts or extends the heartbeat,
    /// extends the owner's live leases, grants what is free; `granted` sorted, `refused` the
    /// rest of `requested`, sorted.
    async fn acquire(
        &self,
        connection: &mut SqliteConnection,
        key: LeaseKey<'_>,
        requested: &[u32],
        duration: Duration,
        _timeout: Option<Duration>,
    ) -> Result<Acquired, Error> {
        let operation = Operation::Acquire;
        let duration_ms = duration_ms(duration);
        let mut transaction = begin_immediate(connection, operation).await?;
        let outcome = self
            .acquire_locked(&mut transaction, key, requested, duration_ms)
            .await;
        finish(transaction, operation, outcome).await
    }

    /// One transaction: refuses a retired subscription, then an owner whose heartbeat is not
    /// live ([`Error::NotHeld`]); else extends the heartbeat and every live lease of the owner.
    async fn renew(
        &self,
        connection: &mut SqliteConnection,
        key: LeaseKey<'_>,
        duration: Duration,
    ) -> Result<Vec<HeldLease>, Error> {
        let operation = Operation::Renew;
        let duration_ms = duration_ms(duration);
        let mut transaction = begin_immediate(connection, operation).await?;
        let outcome = self.renew_locked(&mut transaction, key, duration_ms).await;
        finish(transaction, operation, outcome).await
    }

    /// One transaction: frees each of `requested` the owner holds live; the rest is
    /// `not_held`.
    async fn release(
        &self,
        connection: &mut SqliteConnection,
        key: LeaseKey<'_>,
        requested: &[u32],
    ) -> Result<Released, Error> {
        let operation = Operation::Release;
        let mut transaction = begin_immediate(connection, operation).await?;
        let outcome = async {
            let (now, _) = self
                .clock(&mut transaction, operation, key.group, key.subscription)
                .await?;
            let rows: Vec<i64> = sqlx::query_scalar(sql(&self.lease.release))
                .bind(key.group)
                .bind(key.subscription)
                .bind(key.owner)
                .bind(now)
                .bind(partitions_json(requested))
                .fetch_all(&mut *transaction)
                .await
                .map_err(|error| backend(operation, error))?;
            let released = partitions(operation, rows)?;
            let not_held = rest(requested, &released);
            Ok(Released { released, not_held })
        }
        .await;
        finish(transaction, operation, outcome).await
    }

    /// One transaction: frees every lease the owner holds live and deletes its heartbeat.
    async fn leave(
        &self,
        connection: &mut SqliteConnection,
        key: LeaseKey<'_>,
    ) -> Result<Vec<u32>, Error> {
        let operation = Operation::Leave;
        let failed = |error| backend(operation, error);
        let mut transaction = begin_immediate(connection, operation).await?;
        let outcome = async {
            let (now, _) = self
                .clock(&mut transaction, operation, key.group, key.subscription)
                .await?;
            sqlx::query(sql(&self.lease.owner_delete))
                .bind(key.group)
                .bind(key.subscription)
                .bind(key.owner)
                .execute(&mut *transaction)
                .await
                .map_err(failed)?;
            let rows: Vec<i64> = sqlx::query_scalar(sql(&self.lease.leave))
                .bind(key.group)
                .bind(key.subscription)
                .bind(key.owner)
                .bind(now)
                .fetch_all(&mut *transaction)
                .await
                .map_err(failed)?;
            partitions(operation, rows)
        }
        .await;
        finish(transaction, operation, outcome).await
    }

    /// One read transaction (one snapshot, one reading of the clock): the live leases and the
    /// live owners.
    async fn leases(
        &self,
        connection: &mut SqliteConnection,
        group: &str,
        subscription: &str,
    ) -> Result<LeaseTable, Error> {
        let operation = Operation::Leases;
        let failed = |error| backend(operation, error);
        let mut transaction = connection.begin().await.map_err(failed)?;
        let outcome = async {
            let (now, _) = self
                .clock(&mut transaction, operation, group, subscription)
                .await?;
            let rows: Vec<LeaseRow> = sqlx::query_as(sql(&self.lease.leases))
                .bind(group)
                .bind(subscription)
                .bind(now)
                .fetch_all(&mut *transaction)
                .await
                .map_err(failed)?;
            let owners: Vec<(String, i64)> = sqlx::query_as(sql(&self.lease.owners))
                .bind(group)
                .bind(subscription)
                .bind(now)
                .fetch_all(&mut *transaction)
                .await
                .map_err(failed)?;
            lease_table(COLUMNS, operation, now, rows, owners)
        }
        .await;
        finish(transaction, operation, outcome).await
    }

    /// One transaction: marks each of `requested` held live by another owner than the
    /// requester (`key.owner`).
    async fn request_handover(
        &self,
        connection: &mut SqliteConnection,
        key: LeaseKey<'_>,
        requested: &[u32],
    ) -> Result<(), Error> {
        let operation = Operation::RequestHandover;
        let mut transaction = begin_immediate(connection, operation).await?;
        let outcome = async {
            let (now, _) = self
                .clock(&mut transaction, operation, key.group, key.subscription)
                .await?;
            sqlx::query(sql(&self.lease.handover))
                .bind(key.group)
                .bind(key.subscription)
                .bind(key.owner)
                .bind(now)
                .bind(partitions_json(requested))
                .execute(&mut *transaction)
                .await
                .map(drop)
                .map_err(|error| backend(operation, error))
        }
        .await;
        finish(transaction, operation, outcome).await
    }
}

impl Requests {
    /// `lease_clock.sql`: SQLite's clock in milliseconds, and whether the subscription is
    /// retired.
    async fn clock(
        &self,
        connection: &mut SqliteConnection,
        operation: Operation,
        group: &str,
        subscription: &str,
    ) -> Result<(i64, bool), Error> {
        sqlx::query_as(sql(&self.lease.clock))
            .bind(group)
            .bind(subscription)
            .fetch_one(connection)
            .await
            .map_err(|error| backend(operation, error))
    }

    /// `lease_extend.sql`: extends every live lease of the owner to `expires`; returns them.
    async fn extend(
        &self,
        connection: &mut SqliteConnection,
        operation: Operation,
        key: LeaseKey<'_>,
        now: i64,
        expires: i64,
    ) -> Result<Vec<HeldLease>, Error> {
        let rows: Vec<HeldRow> = sqlx::query_as(sql(&self.lease.extend))
            .bind(key.group)
            .bind(key.subscription)
            .bind(key.owner)
            .bind(now)
            .bind(expires)
            .fetch_all(connection)
            .await
            .map_err(|error| backend(operation, error))?;
        rows.into_iter()
            .map(|row| held_lease(operation, row))
            .collect()
    }

    /// [`acquire`](Self::acquire)'s statements, inside its transaction.
    async fn acquire_locked(
        &self,
        connection: &mut SqliteConnection,
        key: LeaseKey<'_>,
        requested: &[u32],
        duration_ms: i64,
    ) -> Result<Acquired, Error> {
        let operation = Operation::Acquire;
        let failed = |error| backend(operation, error);
        let (now, retired) = self
            .clock(&mut *connection, operation, key.group, key.subscription)
            .await?;
        if retired {
            return Err(Error::retired(key.group, key.subscription));
        }
        let expires = now.saturating_add(duration_ms);
        sqlx::query(sql(&self.lease.join))
            .bind(key.group)
            .bind(key.subscription)
            .bind(key.owner)
            .bind(expires)
            .execute(&mut *connection)
            .await
            .map_err(failed)?;
        let mut granted = self
            .extend(&mut *connection, operation, key, now, expires)
            .await?;
        if !requested.is_empty() {
            let rows: Vec<HeldRow> = sqlx::query_as(sql(&self.lease.grant))
                .bind(key.group)
                .bind(key.subscription)
                .bind(key.owner)
                .bind(now)
                .bind(expires)
                .bind(partitions_json(requested))
                .fetch_all(&mut *connection)
                .await
                .map_err(failed)?;
            for row in rows {
                granted.push(held_lease(operation, row)?);
            }
        }
        granted.sort();
        let held: Vec<u32> = granted.iter().map(|lease| lease.partition).collect();
        let refused = rest(requested, &held);
        Ok(Acquired { granted, refused })
    }

    /// [`renew`](Self::renew)'s statements, inside its transaction.
    async fn renew_locked(
        &self,
        connection: &mut SqliteConnection,
        key: LeaseKey<'_>,
        duration_ms: i64,
    ) -> Result<Vec<HeldLease>, Error> {
        let operation = Operation::Renew;
        let (now, retired) = self
            .clock(&mut *connection, operation, key.group, key.subscription)
            .await?;
        if retired {
            return Err(Error::retired(key.group, key.subscription));
        }
        let expires = now.saturating_add(duration_ms);
        let beat = sqlx::query(sql(&self.lease.beat))
            .bind(key.group)
            .bind(key.subscription)
            .bind(key.owner)
            .bind(now)
            .bind(expires)
            .execute(&mut *connection)
            .await
            .map_err(|error| backend(operation, error))?;
        if beat.rows_affected() == 0 {
            return Err(Error::not_held(key.group, key.subscription, key.owner));
        }
        let mut held = self
            .extend(&mut *connection, operation, key, now, expires)
            .await?;
        held.sort();
        Ok(held)
    }
}
