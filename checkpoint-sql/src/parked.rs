//! The requests of [`ParkedStore`](checkpoint_core::parked::ParkedStore) every SQL engine
//! sends the same way: one statement each on `<table>_parked`, on any sqlx executor.

use std::sync::Arc;

use checkpoint_core::parked::{ParkedEntry, time_from_millis};
use checkpoint_core::stored::{SqlColumns, UnexpectedValue};
use checkpoint_core::{Error, Operation};
use sqlx::{Database, Decode, Encode, Executor, IntoArguments, Type};

use crate::engine::{Connection, Engine};
use crate::requests::Parked;
use crate::statement;

/// A row of the engine's `parked` statement: subscription, partition, position, error,
/// attempts, parked_at (milliseconds since the Unix epoch), retry requested.
pub type ParkedRow = (String, i64, i64, String, i64, i64, bool);

/// Records `entry`, or replaces its record. Parameters: group, subscription, partition,
/// position, error (text), attempts, parked_at (milliseconds since the Unix epoch).
pub async fn park<'c, E, X>(
    executor: X,
    text: &Arc<str>,
    group: &str,
    entry: &ParkedEntry,
) -> Result<(), Error>
where
    E: Engine,
    X: Executor<'c, Database = E::Database>,
    for<'q> &'q str: Encode<'q, E::Database> + Type<E::Database>,
    for<'q> i64: Encode<'q, E::Database> + Type<E::Database>,
    <E::Database as Database>::Arguments: IntoArguments<E::Database>,
{
    sqlx::query(statement(text))
        .bind(group)
        .bind(entry.subscription.as_str())
        .bind(i64::from(entry.partition))
        .bind(SqlColumns::position_to_db(entry.position))
        .bind(entry.error.as_str())
        .bind(i64::from(entry.attempts))
        .bind(entry.parked_at_millis())
        .execute(executor)
        .await
        .map_err(|error| E::error(Operation::Park, error))?;
    Ok(())
}

/// Every entry parked under `group`, in the statement's order. Parameters: the group; the
/// statement returns a [`ParkedRow`] per entry.
pub async fn parked<'c, E, X>(
    executor: X,
    text: &Arc<str>,
    group: &str,
) -> Result<Vec<ParkedEntry>, Error>
where
    E: Engine,
    X: Executor<'c, Database = E::Database>,
    for<'q> &'q str: Encode<'q, E::Database> + Type<E::Database>,
    <E::Database as Database>::Arguments: IntoArguments<E::Database>,
    for<'r> ParkedRow: sqlx::FromRow<'r, <E::Database as Database>::Row>,
    for<'q> i64: Decode<'q, E::Database>,
{
    let rows: Vec<ParkedRow> = sqlx::query_as(statement(text))
        .bind(group)
        .fetch_all(executor)
        .await
        .map_err(|error| E::error(Operation::Parked, error))?;
    rows.into_iter().map(parked_entry::<E>).collect()
}

/// Runs the engine's `statement` for `operation` (an `UPDATE` or `DELETE` by the parked
/// entry's whole key: retry_parked, unpark) and says whether it touched a row: the key is the
/// primary key, so at most one. Parameters: group, subscription, partition, position.
pub async fn on_parked_key<'c, E, X>(
    executor: X,
    (operation, text): (Operation, &Arc<str>),
    (group, subscription): (&str, &str),
    partition: u32,
    position: u64,
) -> Result<bool, Error>
where
    E: Engine,
    X: Executor<'c, Database = E::Database>,
    for<'q> &'q str: Encode<'q, E::Database> + Type<E::Database>,
    for<'q> i64: Encode<'q, E::Database> + Type<E::Database>,
    <E::Database as Database>::Arguments: IntoArguments<E::Database>,
{
    let done = sqlx::query(statement(text))
        .bind(group)
        .bind(subscription)
        .bind(i64::from(partition))
        .bind(SqlColumns::position_to_db(position))
        .execute(executor)
        .await
        .map_err(|error| E::error(operation, error))?;
    Ok(E::rows_affected(&done) > 0)
}

/// A [`ParkedRow`] as the entry it records, each value checked.
fn parked_entry<E: Engine>(row: ParkedRow) -> Result<ParkedEntry, Error> {
    let (subscription, partition, position, error, attempts, parked_at, retry_requested) = row;
    let operation = Operation::Parked;
    let columns = E::COLUMNS;
    let attempts = u32::try_from(attempts).map_err(|_| {
        UnexpectedValue::new("attempts", attempts.to_string())
            .into_error(columns.backend, operation)
    })?;
    Ok(ParkedEntry {
        subscription,
        partition: columns.partition(operation, partition)?,
        position: columns.position(operation, position)?,
        error,
        attempts,
        parked_at: time_from_millis(parked_at),
        retry_requested,
    })
}

/// The parked entries' statements of one table (`park`, `parked`, `retry_parked`, `unpark`),
/// each engine's text, sent the same way by every engine.
#[derive(Debug)]
pub struct ParkedStatements {
    /// Records an entry or replaces its record: see [`park`].
    pub park: Arc<str>,
    /// Every entry of a group: see [`parked`].
    pub list: Arc<str>,
    /// Sets an entry's retry request: see [`on_parked_key`].
    pub retry: Arc<str>,
    /// Removes an entry: see [`on_parked_key`].
    pub unpark: Arc<str>,
}

impl<E> Parked<E> for ParkedStatements
where
    E: Engine,
    for<'c> &'c mut Connection<E>: Executor<'c, Database = E::Database>,
    for<'q> &'q str: Encode<'q, E::Database> + Type<E::Database>,
    for<'q> i64: Encode<'q, E::Database> + Type<E::Database> + Decode<'q, E::Database>,
    <E::Database as Database>::Arguments: IntoArguments<E::Database>,
    for<'r> ParkedRow: sqlx::FromRow<'r, <E::Database as Database>::Row>,
{
    async fn park(
        &self,
        connection: &mut Connection<E>,
        group: &str,
        entry: &ParkedEntry,
    ) -> Result<(), Error> {
        park::<E, _>(connection, &self.park, group, entry).await
    }

    async fn parked(
        &self,
        connection: &mut Connection<E>,
        group: &str,
    ) -> Result<Vec<ParkedEntry>, Error> {
        parked::<E, _>(connection, &self.list, group).await
    }

    async fn retry_parked(
        &self,
        connection: &mut Connection<E>,
        key: (&str, &str),
        partition: u32,
        position: u64,
    ) -> Result<bool, Error> {
        let statement = (Operation::RetryParked, &self.retry);
        on_parked_key::<E, _>(connection, statement, key, partition, position).await
    }

    async fn unpark(
        &self,
        connection: &mut Connection<E>,
        key: (&str, &str),
        partition: u32,
        position: u64,
    ) -> Result<bool, Error> {
        let statement = (Operation::Unpark, &self.unpark);
        on_parked_key::<E, _>(connection, statement, key, partition, position).await
    }
}
