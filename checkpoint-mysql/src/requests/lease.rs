//! [`LeaseStore`](checkpoint_core::LeaseStore)'s requests: each operation is one `CALL` of its
//! procedure (`sql/procedures/`), one prepared statement, one round trip.
//!
//! Each procedure is one transaction that reads the server's clock once (integer milliseconds
//! of `UTC_TIMESTAMP(6)`) and judges every expiry by that instant, whatever client sends the
//! call. The writes lock the rows they touch (InnoDB row locks, in partition order), so two
//! owners never both hold a partition. A procedure answers with result sets: `acquire` and
//! `renew` first a status (granted, retired, not held: a refusal is an answer, not an error
//! whose message would have to be read), then the leases held; `release` and `leave` the
//! partitions freed; `leases` the clock, the leases and the owners. A failure inside rolls the
//! transaction back and reaches the client as the server's own error (`RESIGNAL`), so a
//! deadlock's victim is still error 1213, which the engine's rerun policy recognises.

use checkpoint_core::lease::{Acquired, HeldLease, LeaseTable, Released};
use checkpoint_core::stored::UnexpectedValue;
use checkpoint_core::{Error, Operation};
use checkpoint_sql::json::partitions_json;
use checkpoint_sql::lease::{LeaseKey, LeaseRow, duration_ms, lease_table, rest};
use checkpoint_sql::requests::Leases;
use futures_util::TryStreamExt;
use sqlx::mysql::{MySqlConnection, MySqlRow};
use sqlx::{Either, Execute, Executor, FromRow, MySql};
use std::time::Duration;

use super::{Requests, sql};
use crate::BACKEND;
use crate::MysqlEngine;
use crate::error::backend;
use crate::layout::COLUMNS;

/// A row of the held leases: partition, epoch, handover requester.
type HeldRow = (i64, i64, Option<String>);

/// The first answer of `acquire` and `renew`: the leases follow.
const GRANTED: i64 = 0;
/// The first answer of `acquire` and `renew`: the subscription is retired, nothing written.
const RETIRED: i64 = 1;
/// The first answer of `renew`: the owner's heartbeat expired or never existed, nothing written.
const NOT_HELD: i64 = 2;

impl Leases<MysqlEngine> for Requests {
    /// Refuses a retired subscription; starts or extends the heartbeat, extends the owner's
    /// live leases, grants what is free; `granted` every lease the owner now holds live,
    /// sorted, `refused` the rest of `requested`, sorted.
    async fn acquire(
        &self,
        connection: &mut MySqlConnection,
        key: LeaseKey<'_>,
        requested: &[u32],
        duration: Duration,
        _timeout: Option<Duration>,
    ) -> Result<Acquired, Error> {
        let operation = Operation::Acquire;
        let call = sqlx::query(sql(&self.lease.acquire))
            .bind(key.group)
            .bind(key.subscription)
            .bind(key.owner)
            .bind(partitions_json(requested))
            .bind(duration_ms(duration));
        let sets = result_sets(connection, operation, call).await?;
        let granted = held_after_status(operation, key, &sets)?;
        let held: Vec<u32> = granted.iter().map(|lease| lease.partition).collect();
        let refused = rest(requested, &held);
        Ok(Acquired { granted, refused })
    }

    /// Refuses a retired subscription, then an owner whose heartbeat is not live
    /// ([`Error::NotHeld`]); else extends the heartbeat and every live lease of the owner.
    async fn renew(
        &self,
        connection: &mut MySqlConnection,
        key: LeaseKey<'_>,
        duration: Duration,
    ) -> Result<Vec<HeldLease>, Error> {
        let operation = Operation::Renew;
        let call = sqlx::query(sql(&self.lease.renew))
            .bind(key.group)
            .bind(key.subscription)
            .bind(key.owner)
            .bind(duration_ms(duration));
        let sets = result_sets(connection, operation, call).await?;
        held_after_status(operation, key, &sets)
    }

    /// Frees each of `requested` the owner holds live; the rest is `not_held`.
    async fn release(
        &self,
        connection: &mut MySqlConnection,
        key: LeaseKey<'_>,
        requested: &[u32],
    ) -> Result<Released, Error> {
        let operation = Operation::Release;
        let call = sqlx::query(sql(&self.lease.release))
            .bind(key.group)
            .bind(key.subscription)
            .bind(key.owner)
            .bind(partitions_json(requested));
        let sets = result_sets(connection, operation, call).await?;
        let released = partitions(operation, nth(operation, &sets, 0)?)?;
        let not_held = rest(requested, &released);
        Ok(Released { released, not_held })
    }

    /// Frees every lease the owner holds live and deletes its heartbeat.
    async fn leave(
        &self,
        connection: &mut MySqlConnection,
        key: LeaseKey<'_>,
    ) -> Result<Vec<u32>, Error> {
        let operation = Operation::Leave;
        let call = sqlx::query(sql(&self.lease.leave))
            .bind(key.group)
            .bind(key.subscription)
            .bind(key.owner);
        let sets = result_sets(connection, operation, call).await?;
        partitions(operation, nth(operation, &sets, 0)?)
    }

    /// One read-only transaction (one snapshot, one reading of the clock): the live leases and
    /// the live owners.
    async fn leases(
        &self,
        connection: &mut MySqlConnection,
        group: &str,
        subscription: &str,
    ) -> Result<LeaseTable, Error> {
        let operation = Operation::Leases;
        let call = sqlx::query(sql(&self.lease.leases))
            .bind(group)
            .bind(subscription);
        let sets = result_sets(connection, operation, call).await?;
        let (now,): (i64,) = decode(operation, first_row(operation, &sets, 0)?)?;
        let rows = decode_all::<LeaseRow>(operation, nth(operation, &sets, 1)?)?;
        let owners = decode_all::<(String, i64)>(operation, nth(operation, &sets, 2)?)?;
        lease_table(COLUMNS, operation, now, rows, owners)
    }

    /// Marks each of `requested` held live by another owner than the requester (`key.owner`).
    async fn request_handover(
        &self,
        connection: &mut MySqlConnection,
        key: LeaseKey<'_>,
        requested: &[u32],
    ) -> Result<(), Error> {
        let operation = Operation::RequestHandover;
        // Sorted, so that the rows are locked in partition order.
        let mut partitions = requested.to_vec();
        partitions.sort_unstable();
        let call = sqlx::query(sql(&self.lease.handover))
            .bind(key.group)
            .bind(key.subscription)
            .bind(key.owner)
            .bind(partitions_json(&partitions));
        result_sets(connection, operation, call).await.map(drop)
    }
}

/// Every result set `call` answers, each a list of rows, in order; the `CALL`'s own final
/// status (after the procedure's result sets) is not one. Read to the end, so that an error
/// the server sends after a result set (a failed `COMMIT`, a deadlock) fails the call.
async fn result_sets<'q>(
    connection: &mut MySqlConnection,
    operation: Operation,
    call: impl Execute<'q, MySql> + 'q,
) -> Result<Vec<Vec<MySqlRow>>, Error> {
    let mut stream = connection.fetch_many(call);
    let (mut sets, mut rows) = (Vec::new(), Vec::new());
    while let Some(item) = stream
        .try_next()
        .await
        .map_err(|error| backend(operation, error))?
    {
        match item {
            // Every result set, and the CALL itself, ends with a status of its own.
            Either::Left(_) => sets.push(std::mem::take(&mut rows)),
            Either::Right(row) => rows.push(row),
        }
    }
    sets.pop();
    Ok(sets)
}

/// The `index`th result set of a procedure's answer (an error naming what came instead if the
/// procedure answered fewer).
fn nth(operation: Operation, sets: &[Vec<MySqlRow>], index: usize) -> Result<&[MySqlRow], Error> {
    sets.get(index).map(Vec::as_slice).ok_or_else(|| {
        UnexpectedValue::new("result sets", format!("{} of them", sets.len()))
            .into_error(BACKEND, operation)
    })
}

/// The first row of the `index`th result set.
fn first_row(
    operation: Operation,
    sets: &[Vec<MySqlRow>],
    index: usize,
) -> Result<&MySqlRow, Error> {
    nth(operation, sets, index)?.first().ok_or_else(|| {
        UnexpectedValue::new("result sets", format!("result set {index} empty"))
            .into_error(BACKEND, operation)
    })
}

/// One row read as `T`.
fn decode<T: for<'r> FromRow<'r, MySqlRow>>(
    operation: Operation,
    row: &MySqlRow,
) -> Result<T, Error> {
    T::from_row(row).map_err(|error| backend(operation, error))
}

/// Every row read as `T`.
fn decode_all<T: for<'r> FromRow<'r, MySqlRow>>(
    operation: Operation,
    rows: &[MySqlRow],
) -> Result<Vec<T>, Error> {
    rows.iter().map(|row| decode(operation, row)).collect()
}

/// A result set of partitions (one column, already sorted by the procedure).
fn partitions(operation: Operation, rows: &[MySqlRow]) -> Result<Vec<u32>, Error> {
    rows.iter()
        .map(|row| {
            let (partition,): (i64,) = decode(operation, row)?;
            COLUMNS.partition(operation, partition)
        })
        .collect()
}

/// The answer of `acquire` and `renew`: the status, then (granted) the leases the owner holds
/// live, by partition.
fn held_after_status(
    operation: Operation,
    key: LeaseKey<'_>,
    sets: &[Vec<MySqlRow>],
) -> Result<Vec<HeldLease>, Error> {
    let (status,): (i64,) = decode(operation, first_row(operation, sets, 0)?)?;
    match status {
        GRANTED => {}
        RETIRED => return Err(Error::retired(key.group, key.subscription)),
        NOT_HELD => return Err(Error::not_held(key.group, key.subscription, key.owner)),
        other => {
            return Err(
                UnexpectedValue::new("status", other.to_string()).into_error(BACKEND, operation)
            );
        }
    }
    decode_all::<HeldRow>(operation, nth(operation, sets, 1)?)?
        .into_iter()
        .map(|(partition, stored_epoch, handover)| {
            Ok(HeldLease {
                partition: COLUMNS.partition(operation, partition)?,
                epoch: checkpoint_sql::lease::epoch(BACKEND, operation, stored_epoch)?,
                handover_requested_by: handover,
            })
        })
        .collect()
}
