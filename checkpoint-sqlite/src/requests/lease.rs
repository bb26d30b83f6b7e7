//! [`LeaseStore`](checkpoint_core::LeaseStore)'s requests. What each sends to sqlx's worker
//! thread, the one exchange an embedded database has (see the crate doc's cost table):
//!
//! - `acquire`, `renew`, `leave`: a transaction, `BEGIN IMMEDIATE` (it takes the database's
//!   write lock first, so acquirers in any task or process take turns and what a transaction
//!   reads cannot change before it writes), **one request** holding all its statements
//!   (`sql/lease_acquire.sql`, `lease_renew.sql`, `lease_leave.sql`: sqlx's SQLite driver runs
//!   a text of several statements in turn, binding each one's `?N` from the one argument
//!   list), `COMMIT`;
//! - `release`, `request_handover`, `leases`: one statement in autocommit (a write statement
//!   takes the write lock when it starts, as `BEGIN IMMEDIATE` would; a read one has one
//!   snapshot).
//!
//! SQLite's clock is read once per call (integer milliseconds of `unixepoch('subsec')`), by the
//! statement that first needs it; a later statement of the same request gets that instant from
//! the heartbeat the first one wrote (its expiry less the duration), so one instant judges
//! every expiry, whatever process sends the call.

use checkpoint_core::lease::{Acquired, HeldLease, LeaseTable, Released};
use checkpoint_core::{Error, Operation, UnexpectedValue};
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

/// A row of `lease_acquire.sql` or `lease_renew.sql`: partition, epoch, handover requester; or
/// one of the markers below in place of the partition (a partition is never negative).
type HeldRow = (i64, i64, Option<String>);

/// The row the heartbeat's statement returns when it wrote the heartbeat.
const HEARTBEAT_WRITTEN: i64 = -1;

/// `lease_renew.sql`'s first row: its second column says whether the subscription is retired.
const TOMBSTONE_READ: i64 = -2;

/// A row of `sql/leases.sql`: kind (0 a lease, 1 an owner), partition, owner, epoch, expiry,
/// handover requester, and the instant that judged them.
type TableRow = (
    i64,
    Option<i64>,
    String,
    Option<i64>,
    i64,
    Option<String>,
    i64,
);

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

/// The leases of `rows` (what follows the markers), read back and sorted.
fn held_leases(
    operation: Operation,
    rows: impl Iterator<Item = HeldRow>,
) -> Result<Vec<HeldLease>, Error> {
    let mut held = rows
        .map(|row| held_lease(operation, row))
        .collect::<Result<Vec<HeldLease>, Error>>()?;
    held.sort();
    Ok(held)
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

/// The table from the rows of `sql/leases.sql`.
fn table(operation: Operation, rows: Vec<TableRow>) -> Result<LeaseTable, Error> {
    // No row: nothing is live, and the instant judges nothing.
    let now = rows.first().map_or(0, |row| row.6);
    let mut leases: Vec<LeaseRow> = Vec::new();
    let mut owners: Vec<(String, i64)> = Vec::new();
    for (kind, partition, owner, stored_epoch, expires, handover, _) in rows {
        match (kind, partition, stored_epoch) {
            (0, Some(partition), Some(stored_epoch)) => {
                leases.push((partition, owner, stored_epoch, expires, handover));
            }
            _ => owners.push((owner, expires)),
        }
    }
    lease_table(COLUMNS, operation, now, leases, owners)
}

impl Leases<SqliteEngine> for Requests {
    /// One transaction (`BEGIN IMMEDIATE`, one request, `COMMIT`): refuses a retired
    /// subscription; starts or extends the heartbeat, extends the owner's live leases, grants
    /// what is free; `granted` sorted, `refused` the rest of `requested`, sorted.
    async fn acquire(
        &self,
        connection: &mut SqliteConnection,
        key: LeaseKey<'_>,
        requested: &[u32],
        duration: Duration,
        _timeout: Option<Duration>,
    ) -> Result<Acquired, Error> {
        let operation = Operation::Acquire;
        let mut transaction = begin_immediate(connection, operation).await?;
        let outcome = async {
            let rows: Vec<HeldRow> = sqlx::query_as(sql(&self.lease.acquire))
                .bind(key.group)
                .bind(key.subscription)
                .bind(key.owner)
                .bind(duration_ms(duration))
                .bind(partitions_json(requested))
                .fetch_all(&mut *transaction)
                .await
                .map_err(|error| backend(operation, error))?;
            let mut rows = rows.into_iter().peekable();
            // No heartbeat written: the subscription is retired (rolled back by `finish`).
            if rows.next_if(|row| row.0 == HEARTBEAT_WRITTEN).is_none() {
                return Err(Error::retired(key.group, key.subscription));
            }
            let granted = held_leases(operation, rows)?;
            let held: Vec<u32> = granted.iter().map(|lease| lease.partition).collect();
            let refused = rest(requested, &held);
            Ok(Acquired { granted, refused })
        }
        .await;
        finish(transaction, operation, outcome).await
    }

    /// One transaction (`BEGIN IMMEDIATE`, one request, `COMMIT`): refuses a retired
    /// subscription, then an owner whose heartbeat is not live ([`Error::NotHeld`]), each
    /// rolled back; else extends the heartbeat and every live lease of the owner.
    async fn renew(
        &self,
        connection: &mut SqliteConnection,
        key: LeaseKey<'_>,
        duration: Duration,
    ) -> Result<Vec<HeldLease>, Error> {
        let operation = Operation::Renew;
        let mut transaction = begin_immediate(connection, operation).await?;
        let outcome = async {
            let rows: Vec<HeldRow> = sqlx::query_as(sql(&self.lease.renew))
                .bind(key.group)
                .bind(key.subscription)
                .bind(key.owner)
                .bind(duration_ms(duration))
                .fetch_all(&mut *transaction)
                .await
                .map_err(|error| backend(operation, error))?;
            let mut rows = rows.into_iter().peekable();
            let Some((_, retired, _)) = rows.next_if(|row| row.0 == TOMBSTONE_READ) else {
                return Err(
                    UnexpectedValue::new("renew's first row", "another row or none")
                        .into_error(BACKEND, operation),
                );
            };
            if retired != 0 {
                return Err(Error::retired(key.group, key.subscription));
            }
            if rows.next_if(|row| row.0 == HEARTBEAT_WRITTEN).is_none() {
                return Err(Error::not_held(key.group, key.subscription, key.owner));
            }
            held_leases(operation, rows)
        }
        .await;
        finish(transaction, operation, outcome).await
    }

    /// One statement in autocommit: frees each of `requested` the owner holds live; the rest
    /// is `not_held`.
    async fn release(
        &self,
        connection: &mut SqliteConnection,
        key: LeaseKey<'_>,
        requested: &[u32],
    ) -> Result<Released, Error> {
        let operation = Operation::Release;
        let rows: Vec<i64> = sqlx::query_scalar(sql(&self.lease.release))
            .bind(key.group)
            .bind(key.subscription)
            .bind(key.owner)
            .bind(partitions_json(requested))
            .fetch_all(connection)
            .await
            .map_err(|error| backend(operation, error))?;
        let released = partitions(operation, rows)?;
        let not_held = rest(requested, &released);
        Ok(Released { released, not_held })
    }

    /// One transaction (`BEGIN IMMEDIATE`, one request, `COMMIT`): deletes the owner's
    /// heartbeat and frees every lease it holds live.
    async fn leave(
        &self,
        connection: &mut SqliteConnection,
        key: LeaseKey<'_>,
    ) -> Result<Vec<u32>, Error> {
        let operation = Operation::Leave;
        let mut transaction = begin_immediate(connection, operation).await?;
        let outcome = async {
            let rows: Vec<i64> = sqlx::query_scalar(sql(&self.lease.leave))
                .bind(key.group)
                .bind(key.subscription)
                .bind(key.owner)
                .fetch_all(&mut *transaction)
                .await
                .map_err(|error| backend(operation, error))?;
            partitions(operation, rows)
        }
        .await;
        finish(transaction, operation, outcome).await
    }

    /// One statement in autocommit (one snapshot, one reading of the clock): the live leases
    /// and the live owners.
    async fn leases(
        &self,
        connection: &mut SqliteConnection,
        group: &str,
        subscription: &str,
    ) -> Result<LeaseTable, Error> {
        let operation = Operation::Leases;
        let rows: Vec<TableRow> = sqlx::query_as(sql(&self.lease.leases))
            .bind(group)
            .bind(subscription)
            .fetch_all(connection)
            .await
            .map_err(|error| backend(operation, error))?;
        table(operation, rows)
    }

    /// One statement in autocommit: marks each of `requested` held live by another owner than
    /// the requester (`key.owner`).
    async fn request_handover(
        &self,
        connection: &mut SqliteConnection,
        key: LeaseKey<'_>,
        requested: &[u32],
    ) -> Result<(), Error> {
        let operation = Operation::RequestHandover;
        sqlx::query(sql(&self.lease.handover))
            .bind(key.group)
            .bind(key.subscription)
            .bind(key.owner)
            .bind(partitions_json(requested))
            .execute(connection)
            .await
            .map(drop)
            .map_err(|error| backend(operation, error))
    }
}
