//! The reads of [`CheckpointAdmin`](checkpoint_core::CheckpointAdmin) every SQL engine sends
//! the same way: one `SELECT` of names each, on any sqlx executor.

use std::sync::Arc;

use checkpoint_core::{Error, Operation};
use sqlx::{Database, Decode, Encode, Executor, IntoArguments, Type};

use crate::{Engine, statement};

/// Every group, of checkpoints and of tombstones, in the statement's order. No parameter; the
/// statement returns one text column.
pub async fn groups<'c, E, X>(executor: X, text: &Arc<str>) -> Result<Vec<String>, Error>
where
    E: Engine,
    X: Executor<'c, Database = E::Database>,
    for<'q> String: Decode<'q, E::Database> + Type<E::Database>,
    <E::Database as Database>::Arguments: IntoArguments<E::Database>,
    usize: sqlx::ColumnIndex<<E::Database as Database>::Row>,
{
    sqlx::query_scalar(statement(text))
        .fetch_all(executor)
        .await
        .map_err(|error| E::error(Operation::Groups, error))
}

/// The retired subscriptions of `group`, in the statement's order. Parameters: the group; the
/// statement returns one text column.
pub async fn retired<'c, E, X>(
    executor: X,
    text: &Arc<str>,
    group: &str,
) -> Result<Vec<String>, Error>
where
    E: Engine,
    X: Executor<'c, Database = E::Database>,
    for<'q> &'q str: Encode<'q, E::Database> + Type<E::Database>,
    for<'q> String: Decode<'q, E::Database> + Type<E::Database>,
    <E::Database as Database>::Arguments: IntoArguments<E::Database>,
    usize: sqlx::ColumnIndex<<E::Database as Database>::Row>,
{
    sqlx::query_scalar(statement(text))
        .bind(group)
        .fetch_all(executor)
        .await
        .map_err(|error| E::error(Operation::Retired, error))
}
