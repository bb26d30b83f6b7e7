//! [`ParkedStore`](checkpoint_core::parked::ParkedStore)'s requests: one statement each on
//! `<table>_parked`, in autocommit mode.

use std::sync::Arc;

use checkpoint_core::parked::{ParkedEntry, time_from_millis};
use checkpoint_core::stored::SqlColumns;
use checkpoint_core::{Error, Operation};
use sqlx::sqlite::SqliteConnection;

use super::{Requests, sql};
use crate::error::backend;
use crate::layout::{COLUMNS, attempts};

/// A row of `sql/parked.sql`: subscription, partition, position, error, attempts, parked_at
/// (milliseconds since the Unix epoch), retry requested.
type ParkedRow = (String, i64, i64, String, i64, i64, bool);

impl Requests {
    /// Records `entry`, or replaces its record (`sql/park.sql`).
    pub(crate) async fn park(
        &self,
        connection: &mut SqliteConnection,
        group: &str,
        entry: &ParkedEntry,
    ) -> Result<(), Error> {
        sqlx::query(sql(&self.parked.park))
            .bind(group)
            .bind(&entry.subscription)
            .bind(i64::from(entry.partition))
            .bind(SqlColumns::position_to_db(entry.position))
            .bind(&entry.error)
            .bind(i64::from(entry.attempts))
            .bind(entry.parked_at_millis())
            .execute(connection)
            .await
            .map_err(|error| backend(Operation::Park, error))?;
        Ok(())
    }

    /// Every entry parked under `group`, sorted. Records the span field `count` of the
    /// calling operation.
    pub(crate) async fn parked(
        &self,
        connection: &mut SqliteConnection,
        group: &str,
    ) -> Result<Vec<ParkedEntry>, Error> {
        let rows: Vec<ParkedRow> = sqlx::query_as(sql(&self.parked.list))
            .bind(group)
            .fetch_all(connection)
            .await
            .map_err(|error| backend(Operation::Parked, error))?;
        rows.into_iter().map(parked_entry).collect()
    }

    /// Sets the entry's retry request; whether it was parked.
    pub(crate) async fn retry_parked(
        &self,
        connection: &mut SqliteConnection,
        (group, subscription): (&str, &str),
        partition: u32,
        position: u64,
    ) -> Result<bool, Error> {
        let statement = (Operation::RetryParked, &self.parked.retry);
        on_parked_key(
            connection,
            statement,
            (group, subscription),
            partition,
            position,
        )
        .await
    }

    /// Removes the entry; whether it was parked.
    pub(crate) async fn unpark(
        &self,
        connection: &mut SqliteConnection,
        (group, subscription): (&str, &str),
        partition: u32,
        position: u64,
    ) -> Result<bool, Error> {
        let statement = (Operation::Unpark, &self.parked.unpark);
        on_parked_key(
            connection,
            statement,
            (group, subscription),
            partition,
            position,
        )
        .await
    }
}

/// Runs `statement` (an `UPDATE` or `DELETE` by the parked entry's whole key) and says whether
/// it changed a row: the key is the primary key, so at most one.
async fn on_parked_key(
    connection: &mut SqliteConnection,
    (operation, statement): (Operation, &Arc<str>),
    (group, subscription): (&str, &str),
    partition: u32,
    position: u64,
) -> Result<bool, Error> {
    let done = sqlx::query(sql(statement))
        .bind(group)
        .bind(subscription)
        .bind(i64::from(partition))
        .bind(SqlColumns::position_to_db(position))
        .execute(connection)
        .await
        .map_err(|error| backend(operation, error))?;
    Ok(done.rows_affected() > 0)
}

/// A row of `sql/parked.sql` as the entry it records, each value checked.
fn parked_entry(row: ParkedRow) -> Result<ParkedEntry, Error> {
    let (subscription, partition, position, error, stored_attempts, parked_at, retry_requested) =
        row;
    let operation = Operation::Parked;
    Ok(ParkedEntry {
        subscription,
        partition: COLUMNS.partition(operation, partition)?,
        position: COLUMNS.position(operation, position)?,
        error,
        attempts: attempts(operation, stored_attempts)?,
        parked_at: time_from_millis(parked_at),
        retry_requested,
    })
}
