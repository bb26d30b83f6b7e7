//! [`Engine`]: what a SQL engine supplies to [`SqlStore`](crate::SqlStore): its sqlx
//! database, its table name, its statements, how it reads errors, how it opens a pool, and when
//! a failed request may run again.

use std::fmt;
use std::future::Future;
use std::path::Path;
use std::time::Duration;

use checkpoint_core::stored::SqlColumns;
use checkpoint_core::{Error, Operation};
use sqlx::{Database, Pool};

use crate::requests::{Admin, HotPath, Leases, Parked, Statements};

/// The caller's connection of an engine: what the `*_in` methods take (`&mut *transaction`).
pub type Connection<E> = <<E as Engine>::Database as Database>::Connection;

/// The connection settings of an engine, parsed from a URL or built in code.
pub type ConnectOptions<E> = <Connection<E> as sqlx::Connection>::Options;

/// A SQL engine, as [`SqlStore`](crate::SqlStore) and the shared requests need it.
///
/// PostgreSQL, SQLite and MySQL are the engines of this workspace (`checkpoint-postgres`,
/// `checkpoint-sqlite`, `checkpoint-mysql`); each crate names its store
/// `type XCheckpointStore = SqlStore<XEngine>`, as sqlx names `PgPool = Pool<Postgres>`.
pub trait Engine: Sized + Send + Sync + 'static {
    /// The engine's sqlx database.
    type Database: sqlx::Database;

    /// A table name the engine accepts (checked by [`parse_table`](Self::parse_table)), shown
    /// in spans as the store's place.
    type Table: Clone + fmt::Debug + fmt::Display + Send + Sync + 'static;

    /// Every statement of the store for one table, and the requests that send them.
    type Requests: Statements<Self> + HotPath<Self> + Leases<Self>;

    /// The operations API's statements: [`AdminStatements`](crate::admin::AdminStatements)
    /// for an engine whose admin transactions begin with [`BEGIN`](Self::BEGIN) (SQLite,
    /// MySQL), or the engine's own requests (PostgreSQL's locks differ).
    type Admin: Admin<Self> + Send + Sync + 'static;

    /// The parked entries' statements: [`ParkedStatements`](crate::parked::ParkedStatements)
    /// for every engine of this workspace (named here so that its requests' bounds on the
    /// database are checked once, for the engine).
    type Parked: Parked<Self> + Send + Sync + 'static;

    /// The backend's name in every span and error (`"postgres"`, `"sqlite"`, `"mysql"`).
    const BACKEND: &'static str;

    /// The rules for values read back, naming the backend in their errors.
    const COLUMNS: SqlColumns;

    /// The statement that begins a transactional handler's transaction
    /// ([`TransactionalStore`](checkpoint_core::transactional::TransactionalStore)), and the
    /// operations API's transactions of [`AdminStatements`](crate::admin::AdminStatements).
    const BEGIN: &'static str;

    /// The table a new store uses.
    fn default_table() -> Self::Table;

    /// `name` as a table of this engine, or [`Error::InvalidInput`] naming the `table` setting.
    ///
    /// # Errors
    ///
    /// Whatever the engine refuses as a name.
    fn parse_table(name: &str) -> Result<Self::Table, Error>;

    /// The contract's error for a failed request of `operation`: retryable or not, by the
    /// engine's own reading of the error.
    fn error(operation: Operation, error: sqlx::Error) -> Error;

    /// How many rows a statement changed (sqlx has no trait for it: each driver's result has
    /// its own method).
    fn rows_affected(result: &<Self::Database as sqlx::Database>::QueryResult) -> u64;

    /// A pool of the engine's recommended settings for `options` (hooks, sizes, session
    /// settings), its first connection opened.
    fn connect(
        options: ConnectOptions<Self>,
    ) -> impl Future<Output = Result<Pool<Self::Database>, Error>> + Send;

    /// Whether a request of `operation` on the store's own pool that failed with `error`,
    /// after `failures` earlier failures of the same call, runs again, and how. The store's
    /// timeout bounds every run of a call together. Never for the `*_in` family: the caller's
    /// transaction is the caller's.
    fn again(operation: Operation, error: &Error, failures: u32) -> Option<Again> {
        let _ = (operation, error, failures);
        None
    }
}

/// How a failed request runs again (see [`Engine::again`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Again {
    /// After this pause, on a connection from the pool (a deadlock's victim, rolled back whole).
    AfterPause(Duration),
    /// At once, on a pooled connection that answers a ping, the dead ones met on the way closed
    /// (the request's connection had died: a server restart, an idle connection cut).
    OnLiveConnection,
}

/// An engine kept in a local file (SQLite): [`SqlStore`](crate::SqlStore) opens a path.
pub trait FileEngine: Engine {
    /// The recommended settings for the database file at `path` (see the engine's crate doc).
    fn file_options(path: &Path) -> ConnectOptions<Self>;
}
