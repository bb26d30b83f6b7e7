//! One checkpoint store for every SQL engine: [`SqlStore<E>`](SqlStore), generic over an
//! [`Engine`] that supplies its sqlx database, its table names, its statements and the requests
//! that send them, how its errors read, how it opens a pool and when a failed request runs
//! again. The engines of this workspace name their stores as sqlx names its pools
//! (`PgPool = Pool<Postgres>`):
//!
//! ```text
//! checkpoint_sqlite::SqliteCheckpointStore     = SqlStore<SqliteEngine>
//! checkpoint_postgres::PostgresCheckpointStore = SqlStore<PostgresEngine>
//! checkpoint_mysql::MysqlCheckpointStore       = SqlStore<MysqlEngine>
//! ```
//!
//! Written here once, for all of them: the store's settings and migration ([`SqlStore`]), the
//! five doors of the contract's traits (each one call of the engine's requests on a pooled
//! connection, closed rather than returned when a call is abandoned mid-request), the `*_in`
//! family on the caller's transaction, and
//! [`TransactionalStore`](checkpoint_core::transactional::TransactionalStore). An engine's
//! requests implement [`requests`]' traits, most of them through the requests shared here,
//! generic over sqlx's [`Database`](sqlx::Database): [`hot_path`] (`load`, `list`, `save`,
//! `claim`, the update-then-read `advance`), [`admin`] (`groups`, `retired`, and `start_at`,
//! `retire` and `purge` inside the engine's transaction, [`finish`] ending it), [`parked`]
//! (every engine's [`ParkedStatements`](parked::ParkedStatements)), [`json`] (batches as one
//! JSON parameter) and [`lease`] (lease values in milliseconds).
//!
//! Not a store to use by this name: depend on `checkpoint-sqlite`, `checkpoint-postgres` or
//! `checkpoint-mysql`.

use std::sync::Arc;

use checkpoint_core::{Error, Operation};
use sqlx::AssertSqlSafe;

pub mod admin;
mod checkout;
mod doors;
mod engine;
pub mod hot_path;
mod in_family;
pub mod json;
pub mod lease;
pub mod parked;
pub mod requests;
mod store;
mod transactional;

pub use engine::{Again, ConnectOptions, Connection, Engine, FileEngine};
pub use store::SqlStore;

/// A statement ready for `sqlx::query`: the engine's text, shared, not copied, on each call.
///
/// Sound for the engines of this workspace because the only dynamic part of their statements
/// is a table name each checks when the store is made.
fn statement(text: &Arc<str>) -> AssertSqlSafe<Arc<str>> {
    AssertSqlSafe(Arc::clone(text))
}

/// A transaction on `connection`, begun with the engine's [`BEGIN`](Engine::BEGIN) (SQLite's
/// `BEGIN IMMEDIATE` holds the write lock from its first statement).
pub async fn begin<E: Engine>(
    connection: &mut Connection<E>,
    operation: Operation,
) -> Result<sqlx::Transaction<'_, E::Database>, Error> {
    use sqlx::Connection as _;
    connection
        .begin_with(AssertSqlSafe(E::BEGIN))
        .await
        .map_err(|error| E::error(operation, error))
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
