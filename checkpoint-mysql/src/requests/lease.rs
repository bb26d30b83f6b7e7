//! [`LeaseStore`](checkpoint_core::LeaseStore)'s requests: each operation is one transaction.
//!
//! The first statement of each, `sql/lease_clock.sql`, reads the server's clock once (integer
//! milliseconds of `UTC_TIMESTAMP(6)`) and whether the subscription is retired; every later
//! statement gets that instant as a parameter, so one clock, the server's, judges every
//! expiry, whatever client sends the call. The writes lock the rows they touch (InnoDB row
//! locks, in partition order), so two owners never both hold a partition.

use checkpoint_core::lease::{Acquired, HeldLease, LeaseTable, Released};
use checkpoint_core::{Error, Operation};
use checkpoint_sql::json::partitions_json;
use checkpoint_sql::lease::{LeaseKey, LeaseRow, duration_ms, lease_table, rest};
use checkpoint_sql::requests::Leases;
use sqlx::mysql::MySqlConnection;
use std::time::Duration;

use super::{Requests, begin, finish, sql};
use crate::BACKEND;
use crate::MysqlEngine;
use crate::error::backend;
use crate::layout::COLUMNS;

/// A row of `lease_held.sql`: partition, epoch, handover requester.
type HeldRow = (i64, i64, Option<String>);

/// A lease's `epoch` column read back.
fn epoch(operation: Operation, value: i64) -> Result<u64, Error> {
    checkpoint_sql::lease::epoch(BACKEND, operation, value)
}

impl Leases<MysqlEngine> for Requests {
    /// One transaction: refuses a retired subscription; starts or extends the heartbeat,
    /// extends the owner's live leases, grants what is free; `granted` every lease the owner
    /// now holds live, sorted, `refused` the rest of `requested`, sorted.
    async fn acquire(
        &self,
        connection: &mut MySqlConnection,
        key: LeaseKey<'_>,
        requested: &[u32],
        duration: Duration,
        _timeout: Option<Duration>,
    ) -> Result<Acquired, Error> {
        let operation = Operation::Acquire;
        let duration_ms = duration_ms(duration);
        let mut transaction = begin(connection, operation).await?;
        let outcome = self
            .acquire_locked(&mut transaction, key, requested, duration_ms)
            .await;
        finish(transaction, operation, outcome).await
    }

    /// One transaction: refuses a retired subscription, then an owner whose heartbeat is not
    /// live ([`Error::NotHeld`]); else extends the heartbeat and every live lease of the owner.
    async fn renew(
        &self,
        connection: &mut MySqlConnection,
        key: LeaseKey<'_>,
        duration: Duration,
    ) -> Result<Vec<HeldLease>, Error> {
        let operation = Operation::Renew;
        let duration_ms = duration_ms(duration);
        let mut transaction = begin(connection, operation).await?;
        let outcome = self.renew_locked(&mut transaction, key, duration_ms).await;
        finish(transaction, operation, outcome).await
    }

    /// One transaction: frees each of `requested` the owner holds live; the rest is
    /// `not_held`.
    async fn release(
        &self,
        connection: &mut MySqlConnection,
        key: LeaseKey<'_>,
        requested: &[u32],
    ) -> Result<Released, Error> {
        let operation = Operation::Release;
        let mut transaction = begin(connection, operation).await?;
        let outcome = async {
            let (now, _) = self
                .clock(&mut transaction, operation, key.group, key.subscription)
                .await?;
            let released = self
                .free(&mut transaction, operation, key, now, Some(requested))
                .await?;
            let not_held = rest(requested, &released);
            Ok(Released { released, not_held })
        }
        .await;
        finish(transaction, operation, outcome).await
    }

    /// One transaction: frees every lease the owner holds live and deletes its heartbeat.
    async fn leave(
        &self,
        connection: &mut MySqlConnection,
        key: LeaseKey<'_>,
    ) -> Result<Vec<u32>, Error> {
        let operation = Operation::Leave;
        let mut transaction = begin(connection, operation).await?;
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
                .map_err(|error| backend(operation, error))?;
            self.free(&mut transaction, operation, key, now, None).await
        }
        .await;
        finish(transaction, operation, outcome).await
    }

    /// One read transaction (one snapshot, one reading of the clock): the live leases and the
    /// live owners.
    async fn leases(
        &self,
        connection: &mut MySqlConnection,
        group: &str,
        subscription: &str,
    ) -> Result<LeaseTable, Error> {
        let operation = Operation::Leases;
        let failed = |error| backend(operation, error);
        let mut transaction = begin(connection, operation).await?;
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
        connection: &mut MySqlConnection,
        key: LeaseKey<'_>,
        requested: &[u32],
    ) -> Result<(), Error> {
        let operation = Operation::RequestHandover;
        let mut transaction = begin(connection, operation).await?;
        let outcome = async {
            let (now, _) = self
                .clock(&mut transaction, operation, key.group, key.subscription)
                .await?;
            let mut partitions = requested.to_vec();
            partitions.sort_unstable();
            sqlx::query(sql(&self.lease.handover))
                .bind(partitions_json(&partitions))
                .bind(key.owner)
                .bind(key.group)
                .bind(key.subscription)
                .bind(key.owner)
                .bind(now)
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
    /// `lease_clock.sql`: the server's clock in milliseconds, and whether the subscription is
    /// retired.
    async fn clock(
        &self,
        connection: &mut MySqlConnection,
        operation: Operation,
        group: &str,
        subscription: &str,
    ) -> Result<(i64, bool), Error> {
        let (now, retired): (i64, i64) = sqlx::query_as(sql(&self.lease.clock))
            .bind(group)
            .bind(subscription)
            .fetch_one(connection)
            .await
            .map_err(|error| backend(operation, error))?;
        Ok((now, retired != 0))
    }

    /// `lease_extend.sql`: extends every live lease of the owner to `expires`.
    async fn extend(
        &self,
        connection: &mut MySqlConnection,
        operation: Operation,
        key: LeaseKey<'_>,
        (now, expires): (i64, i64),
    ) -> Result<(), Error> {
        sqlx::query(sql(&self.lease.extend))
            .bind(expires)
            .bind(key.group)
            .bind(key.subscription)
            .bind(key.owner)
            .bind(now)
            .execute(connection)
            .await
            .map(drop)
            .map_err(|error| backend(operation, error))
    }

    /// `lease_held.sql`: the leases the owner holds live, by partition.
    async fn held(
        &self,
        connection: &mut MySqlConnection,
        operation: Operation,
        key: LeaseKey<'_>,
        now: i64,
    ) -> Result<Vec<HeldLease>, Error> {
        let rows: Vec<HeldRow> = sqlx::query_as(sql(&self.lease.held))
            .bind(key.group)
            .bind(key.subscription)
            .bind(key.owner)
            .bind(now)
            .fetch_all(connection)
            .await
            .map_err(|error| backend(operation, error))?;
        rows.into_iter()
            .map(|(partition, stored_epoch, handover)| {
                Ok(HeldLease {
                    partition: COLUMNS.partition(operation, partition)?,
                    epoch: epoch(operation, stored_epoch)?,
                    handover_requested_by: handover,
                })
            })
            .collect()
    }

    /// [`acquire`](Self::acquire)'s statements, inside its transaction.
    async fn acquire_locked(
        &self,
        connection: &mut MySqlConnection,
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
        self.extend(&mut *connection, operation, key, (now, expires))
            .await?;
        if !requested.is_empty() {
            sqlx::query(sql(&self.lease.grant))
                .bind(key.group)
                .bind(key.subscription)
                .bind(key.owner)
                .bind(expires)
                .bind(partitions_json(requested))
                .bind(now)
                .bind(now)
                .bind(now)
                .execute(&mut *connection)
                .await
                .map_err(failed)?;
        }
        let granted = self.held(&mut *connection, operation, key, now).await?;
        let held: Vec<u32> = granted.iter().map(|lease| lease.partition).collect();
        let refused = rest(requested, &held);
        Ok(Acquired { granted, refused })
    }

    /// [`renew`](Self::renew)'s statements, inside its transaction.
    async fn renew_locked(
        &self,
        connection: &mut MySqlConnection,
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
            .bind(expires)
            .bind(key.group)
            .bind(key.subscription)
            .bind(key.owner)
            .bind(now)
            .execute(&mut *connection)
            .await
            .map_err(|error| backend(operation, error))?;
        if beat.rows_affected() == 0 {
            return Err(Error::not_held(key.group, key.subscription, key.owner));
        }
        self.extend(&mut *connection, operation, key, (now, expires))
            .await?;
        self.held(&mut *connection, operation, key, now).await
    }

    /// `lease_owned.sql` then `lease_free.sql`: frees those of `partitions` (all when `None`)
    /// the owner holds live; returns them, sorted.
    async fn free(
        &self,
        connection: &mut MySqlConnection,
        operation: Operation,
        key: LeaseKey<'_>,
        now: i64,
        partitions: Option<&[u32]>,
    ) -> Result<Vec<u32>, Error> {
        let failed = |error| backend(operation, error);
        let filter = partitions.map(partitions_json);
        let rows: Vec<i64> = sqlx::query_scalar(sql(&self.lease.owned))
            .bind(key.group)
            .bind(key.subscription)
            .bind(key.owner)
            .bind(now)
            .bind(filter.as_deref())
            .bind(filter.as_deref().unwrap_or("[]"))
            .fetch_all(&mut *connection)
            .await
            .map_err(failed)?;
        let mut owned = rows
            .into_iter()
            .map(|partition| COLUMNS.partition(operation, partition))
            .collect::<Result<Vec<u32>, Error>>()?;
        owned.sort_unstable();
        if owned.is_empty() {
            return Ok(owned);
        }
        sqlx::query(sql(&self.lease.free))
            .bind(partitions_json(&owned))
            .bind(now)
            .bind(key.group)
            .bind(key.subscription)
            .bind(key.owner)
            .bind(now)
            .execute(connection)
            .await
            .map_err(failed)?;
        Ok(owned)
    }
}
