//! The hot path's requests every SQL engine sends the same way: one statement each, on any
//! sqlx executor (a pool, or `&mut` the caller's connection or transaction), its reply read.
//!
//! The statement of each is the engine's; its parameters, in order, are listed on each
//! function. A checkpoint's key binds as `group` (text), `subscription` (text), `partition`
//! (64-bit integer); positions bind and read as 64-bit integers (see
//! `checkpoint_core::stored::SqlColumns`).

use std::sync::Arc;

use checkpoint_core::stored::SqlColumns;
use checkpoint_core::{Checkpoint, Error, Fingerprint, Operation};
use sqlx::{Database, Decode, Encode, Executor, IntoArguments, Type};

use crate::{Engine, statement};

/// A checkpoint's key, bound in this order.
pub type Key<'a> = (&'a str, &'a str, u32);

/// The checkpoint's position, `None` when there is none. Parameters: the key. `operation` is
/// the caller's (a load, or the read after a failed compare-and-set).
pub async fn load<'c, E, X>(
    executor: X,
    text: &Arc<str>,
    operation: Operation,
    (group, subscription, partition): Key<'_>,
) -> Result<Option<u64>, Error>
where
    E: Engine,
    X: Executor<'c, Database = E::Database>,
    for<'q> &'q str: Encode<'q, E::Database> + Type<E::Database>,
    for<'q> i64: Encode<'q, E::Database> + Type<E::Database> + Decode<'q, E::Database>,
    <E::Database as Database>::Arguments: IntoArguments<E::Database>,
    usize: sqlx::ColumnIndex<<E::Database as Database>::Row>,
{
    let stored: Option<i64> = sqlx::query_scalar(statement(text))
        .bind(group)
        .bind(subscription)
        .bind(i64::from(partition))
        .fetch_optional(executor)
        .await
        .map_err(|error| E::error(operation, error))?;
    stored
        .map(|position| E::COLUMNS.position(operation, position))
        .transpose()
}

/// Every checkpoint of `group`. Parameters: the group. The statement returns `subscription`,
/// `partition`, `position`.
pub async fn list<'c, E, X>(
    executor: X,
    text: &Arc<str>,
    group: &str,
) -> Result<Vec<Checkpoint>, Error>
where
    E: Engine,
    X: Executor<'c, Database = E::Database>,
    for<'q> &'q str: Encode<'q, E::Database> + Type<E::Database>,
    for<'q> i64: Decode<'q, E::Database> + Type<E::Database>,
    for<'q> String: Decode<'q, E::Database> + Type<E::Database>,
    <E::Database as Database>::Arguments: IntoArguments<E::Database>,
    for<'r> (String, i64, i64): sqlx::FromRow<'r, <E::Database as Database>::Row>,
{
    let rows: Vec<(String, i64, i64)> = sqlx::query_as(statement(text))
        .bind(group)
        .fetch_all(executor)
        .await
        .map_err(|error| E::error(Operation::List, error))?;
    rows.into_iter()
        .map(|(subscription, partition, position)| {
            let partition = E::COLUMNS.partition(Operation::List, partition)?;
            let position = E::COLUMNS.position(Operation::List, position)?;
            Ok(Checkpoint::new(subscription, partition, position))
        })
        .collect()
}

/// Moves the checkpoint forward, or leaves it where it is when it is ahead or retired.
/// Parameters: the key, the position.
pub async fn save<'c, E, X>(
    executor: X,
    text: &Arc<str>,
    (group, subscription, partition): Key<'_>,
    position: u64,
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
        .bind(subscription)
        .bind(i64::from(partition))
        .bind(SqlColumns::position_to_db(position))
        .execute(executor)
        .await
        .map_err(|error| E::error(Operation::Save, error))?;
    Ok(())
}

/// The stored position, the checkpoint created at `initial_position` with `fingerprint` on
/// first use. Parameters: the key, the initial position, the fingerprint (bytes). The
/// statement returns the position and the stored fingerprint, and no row when the
/// subscription is retired: [`Error::Retired`]; another fingerprint is
/// [`Error::QueryChanged`].
pub async fn claim<'c, E, X>(
    executor: X,
    text: &Arc<str>,
    (group, subscription, partition): Key<'_>,
    fingerprint: Fingerprint,
    initial_position: u64,
) -> Result<u64, Error>
where
    E: Engine,
    X: Executor<'c, Database = E::Database>,
    for<'q> &'q str: Encode<'q, E::Database> + Type<E::Database>,
    for<'q> &'q [u8]: Encode<'q, E::Database> + Type<E::Database>,
    for<'q> i64: Encode<'q, E::Database> + Type<E::Database>,
    <E::Database as Database>::Arguments: IntoArguments<E::Database>,
    for<'r> ClaimedRow: sqlx::FromRow<'r, <E::Database as Database>::Row>,
{
    let claimed: Option<ClaimedRow> = sqlx::query_as(statement(text))
        .bind(group)
        .bind(subscription)
        .bind(i64::from(partition))
        .bind(SqlColumns::position_to_db(initial_position))
        .bind(fingerprint.as_bytes().as_slice())
        .fetch_optional(executor)
        .await
        .map_err(|error| E::error(Operation::Claim, error))?;
    claimed_position::<E>((group, subscription), claimed, fingerprint)
}

/// A claimed checkpoint's row: its position and stored fingerprint.
pub type ClaimedRow = (i64, Option<Vec<u8>>);

/// What a claim answers from the row it read back (for an engine whose claim reads in a
/// statement of its own): the position, [`Error::Retired`] for no row, [`Error::QueryChanged`]
/// for another fingerprint.
pub fn claimed_position<E: Engine>(
    (group, subscription): (&str, &str),
    claimed: Option<ClaimedRow>,
    fingerprint: Fingerprint,
) -> Result<u64, Error> {
    let Some((position, stored)) = claimed else {
        return Err(Error::retired(group, subscription));
    };
    let position = E::COLUMNS.position(Operation::Claim, position)?;
    let stored = E::COLUMNS.claimed_fingerprint(Operation::Claim, stored.as_deref())?;
    if stored != fingerprint {
        return Err(Error::QueryChanged {
            stored,
            requested: fingerprint,
        });
    }
    Ok(position)
}

/// An advance retries its compare-and-set at most this many times, and only when the
/// checkpoint reached `from` between its update and its read (see [`advance`]).
const ADVANCE_ATTEMPTS: usize = 3;

/// The compare-and-set of an engine whose update cannot also say where a row it did not
/// change is: `update` (parameters: the key, `from`, `to`; it changes the row only when it is
/// at `from`), and only when it changes nothing, `read` (a [`load`] statement; a locking read
/// inside a transaction) on the same connection, for [`Error::Moved`].
pub async fn advance<E>(
    connection: &mut <E::Database as Database>::Connection,
    (update, read): (&Arc<str>, &Arc<str>),
    key: Key<'_>,
    from: u64,
    to: u64,
) -> Result<(), Error>
where
    E: Engine,
    for<'c> &'c mut <E::Database as Database>::Connection: Executor<'c, Database = E::Database>,
    for<'q> &'q str: Encode<'q, E::Database> + Type<E::Database>,
    for<'q> i64: Encode<'q, E::Database> + Type<E::Database> + Decode<'q, E::Database>,
    <E::Database as Database>::Arguments: IntoArguments<E::Database>,
    usize: sqlx::ColumnIndex<<E::Database as Database>::Row>,
{
    let (group, subscription, partition) = key;
    let mut current = None;
    for _ in 0..ADVANCE_ATTEMPTS {
        let done = sqlx::query(statement(update))
            .bind(group)
            .bind(subscription)
            .bind(i64::from(partition))
            .bind(SqlColumns::position_to_db(from))
            .bind(SqlColumns::position_to_db(to))
            .execute(&mut *connection)
            .await
            .map_err(|error| E::error(Operation::Advance, error))?;
        if E::rows_affected(&done) > 0 {
            return Ok(());
        }
        current = load::<E, _>(&mut *connection, read, Operation::Advance, key).await?;
        if current != Some(from) {
            return Err(Error::Moved {
                expected: from,
                current,
            });
        }
        // Another writer moved the checkpoint up to `from` between the two statements
        // (positions only move forward, so this happens at most once): the compare-and-set
        // may succeed now.
    }
    Err(Error::Moved {
        expected: from,
        current,
    })
}
