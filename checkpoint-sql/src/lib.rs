//! What the SQL checkpoint stores share: the requests whose logic is the same on every engine,
//! written once over sqlx's generic [`Database`](sqlx::Database).
//!
//! An engine (`checkpoint-postgres`, `checkpoint-sqlite`, `checkpoint-mysql`) implements [`Engine`]: its sqlx
//! database, how it turns a [`sqlx::Error`] into the contract's `Error`
//! (which errors a retry may help is the engine's knowledge), and the columns' rules for values
//! read back. It keeps its own SQL text, each statement with the parameters these requests
//! bind, in the order each function documents; what differs between engines beyond the text
//! (PostgreSQL's arrays or SQLite's JSON for a batch, a compare-and-set that reads back in the
//! same statement or in a second one) stays in the engine's crate.
//!
//! [`sql_doors!`]: a store's five door impls over its pool, each method one call of the
//! engine's requests; [`in_family!`]: its `*_in` methods on the caller's connection;
//! [`transactional_store!`]: its `TransactionalStore` impl;
//! [`hot_path`]: `load`, `list`, `save`, `claim` and `advance`; [`admin`]: `groups` and
//! `retired`, and `start_at`, `retire` and `purge` inside an engine's transaction ([`finish`] ends it); [`json`]: batches as one JSON parameter; [`lease`]: lease values in milliseconds;
//! [`parked`]: `park`, `parked`, and the
//! updates by a parked entry's key (`retry_parked`, `unpark`); each on a pool or on the
//! caller's connection (any sqlx executor).

use std::sync::Arc;

use checkpoint_core::stored::SqlColumns;
use checkpoint_core::{Error, Operation};
use sqlx::AssertSqlSafe;

pub mod admin;
mod doors;
pub mod hot_path;
mod in_family;
pub mod json;
pub mod lease;
pub mod parked;
mod transactional;

/// A SQL engine, as the shared requests need it.
pub trait Engine {
    /// The engine's sqlx database.
    type Database: sqlx::Database;

    /// The rules for values read back, naming the backend in their errors.
    const COLUMNS: SqlColumns;

    /// The contract's error for a failed request of `operation`: retryable or not, by the
    /// engine's own reading of the error.
    fn error(operation: Operation, error: sqlx::Error) -> Error;

    /// How many rows a statement changed (sqlx has no trait for it: each driver's result has
    /// its own method).
    fn rows_affected(result: &<Self::Database as sqlx::Database>::QueryResult) -> u64;
}

/// A statement ready for `sqlx::query`: the engine's text, shared, not copied, on each call.
///
/// Sound for the engines of this workspace because the only dynamic part of their statements
/// is a table name each checks when the store is made.
fn statement(text: &Arc<str>) -> AssertSqlSafe<Arc<str>> {
    AssertSqlSafe(Arc::clone(text))
}

/// Commits `transaction` when `outcome` is `Ok`, rolls it back otherwise, and returns
/// `outcome` (or the failure to end the transaction). An abandoned call drops the
/// transaction, which sqlx rolls back.
pub async fn finish<E: Engine, T>(
    transaction: sqlx::Transaction<'_, E::Database>,
    operation: Operation,
    outcome: Result<T, Error>,
) -> Result<T, Error> {
    match outcome {
        Ok(value) => {
            transaction
                .commit()
                .await
                .map_err(|error| E::error(operation, error))?;
            Ok(value)
        }
        Err(error) => {
            transaction
                .rollback()
                .await
                .map_err(|error| E::error(operation, error))?;
            Err(error)
        }
    }
}
