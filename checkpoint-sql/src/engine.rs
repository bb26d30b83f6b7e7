//! [`Engine`] and its request traits: what a SQL engine supplies to [`SqlStore`](crate::SqlStore): its sqlx
//! database, its table name, its statements, how it reads errors, how it opens a pool, and when
//! a failed request may run again.

use std::fmt;
use std::future::Future;
use std::path::Path;
use std::time::Duration;

use checkpoint_core::parked::ParkedEntry;
use checkpoint_core::stored::SqlColumns;
use checkpoint_core::{
    Acquired, Checkpoint, Error, Fingerprint, HeldLease, LeaseTable, Operation, Released,
};
use sqlx::{Database, Pool};

use crate::lease::LeaseKey;

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

// What an engine's statements do on a connection: one trait per concern, as the engine's
// `requests/` files are split (their documentation: the `requests` module). They live beside
// `Engine` because each names the other (an engine's associated types are bounded by them,
// and each is generic over the engine).

/// The statements for one table, and the migration that creates its tables.
pub trait Statements<E: Engine>: Send + Sync + Sized + 'static {
    /// Every statement's text for `table`, its name spliced in once.
    fn for_table(table: &E::Table) -> Self;

    /// The text `save` sends, rendered for the table.
    fn save_sql(&self) -> &str;

    /// The text `list` sends, rendered for the table.
    fn list_sql(&self) -> &str;

    /// The schema `migrate` creates, as SQL a reviewer reads.
    fn schema_sql(&self) -> String;

    /// The parked entries' statements.
    fn parked(&self) -> &E::Parked;

    /// The operations API's statements.
    fn admin(&self) -> &E::Admin;

    /// Creates the tables unless they exist.
    fn migrate(
        &self,
        connection: &mut Connection<E>,
    ) -> impl Future<Output = Result<(), Error>> + Send;
}

/// The hot path: [`CheckpointStore`](checkpoint_core::CheckpointStore) and
/// [`ExclusiveCheckpointStore`](checkpoint_core::ExclusiveCheckpointStore).
pub trait HotPath<E: Engine> {
    /// Every checkpoint of `group`.
    fn list(
        &self,
        connection: &mut Connection<E>,
        group: &str,
    ) -> impl Future<Output = Result<Vec<Checkpoint>, Error>> + Send;

    /// The checkpoint's position, if any.
    fn load(
        &self,
        connection: &mut Connection<E>,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> impl Future<Output = Result<Option<u64>, Error>> + Send;

    /// Moves the checkpoint forward, or leaves it where it is.
    fn save(
        &self,
        connection: &mut Connection<E>,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> impl Future<Output = Result<(), Error>> + Send;

    /// Saves a non-empty batch.
    fn save_all(
        &self,
        connection: &mut Connection<E>,
        group: &str,
        checkpoints: &[Checkpoint],
    ) -> impl Future<Output = Result<(), Error>> + Send;

    /// The stored position, the checkpoint created on first use.
    fn claim(
        &self,
        connection: &mut Connection<E>,
        group: &str,
        subscription: &str,
        partition: u32,
        fingerprint: Fingerprint,
        initial_position: u64,
    ) -> impl Future<Output = Result<u64, Error>> + Send;

    /// The compare-and-set advance.
    fn advance(
        &self,
        connection: &mut Connection<E>,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
    ) -> impl Future<Output = Result<(), Error>> + Send;
}

/// [`CheckpointAdmin`](checkpoint_core::CheckpointAdmin).
pub trait Admin<E: Engine> {
    /// Every group.
    fn groups(
        &self,
        connection: &mut Connection<E>,
    ) -> impl Future<Output = Result<Vec<String>, Error>> + Send;

    /// Creates a subscription's checkpoints, refusing a retired or existing one.
    fn start_at(
        &self,
        connection: &mut Connection<E>,
        group: &str,
        subscription: &str,
        positions: &[(u32, u64)],
    ) -> impl Future<Output = Result<(), Error>> + Send;

    /// Writes the tombstone and deletes the checkpoints; `timeout` is the store's (a request
    /// that waits for a lock within it).
    fn retire(
        &self,
        connection: &mut Connection<E>,
        group: &str,
        subscription: &str,
        timeout: Option<Duration>,
    ) -> impl Future<Output = Result<(), Error>> + Send;

    /// The retired subscriptions of `group`.
    fn retired(
        &self,
        connection: &mut Connection<E>,
        group: &str,
    ) -> impl Future<Output = Result<Vec<String>, Error>> + Send;

    /// Removes a retired subscription's tombstone and whatever is left of it.
    fn purge(
        &self,
        connection: &mut Connection<E>,
        group: &str,
        subscription: &str,
    ) -> impl Future<Output = Result<(), Error>> + Send;
}

/// [`LeaseStore`](checkpoint_core::LeaseStore).
pub trait Leases<E: Engine> {
    /// Takes or keeps leases on `partitions`; `timeout` is the store's (a request that waits
    /// for a lock within it).
    fn acquire(
        &self,
        connection: &mut Connection<E>,
        key: LeaseKey<'_>,
        partitions: &[u32],
        duration: Duration,
        timeout: Option<Duration>,
    ) -> impl Future<Output = Result<Acquired, Error>> + Send;

    /// Extends every live lease of the owner.
    fn renew(
        &self,
        connection: &mut Connection<E>,
        key: LeaseKey<'_>,
        duration: Duration,
    ) -> impl Future<Output = Result<Vec<HeldLease>, Error>> + Send;

    /// Gives up the owner's leases on `partitions`.
    fn release(
        &self,
        connection: &mut Connection<E>,
        key: LeaseKey<'_>,
        partitions: &[u32],
    ) -> impl Future<Output = Result<Released, Error>> + Send;

    /// Gives up every lease and the heartbeat of the owner.
    fn leave(
        &self,
        connection: &mut Connection<E>,
        key: LeaseKey<'_>,
    ) -> impl Future<Output = Result<Vec<u32>, Error>> + Send;

    /// The subscription's leases and owners.
    fn leases(
        &self,
        connection: &mut Connection<E>,
        group: &str,
        subscription: &str,
    ) -> impl Future<Output = Result<LeaseTable, Error>> + Send;

    /// Marks `partitions` as asked for by the key's owner.
    fn request_handover(
        &self,
        connection: &mut Connection<E>,
        key: LeaseKey<'_>,
        partitions: &[u32],
    ) -> impl Future<Output = Result<(), Error>> + Send;
}

/// [`ParkedStore`](checkpoint_core::parked::ParkedStore).
pub trait Parked<E: Engine> {
    /// Records `entry`, or replaces its record.
    fn park(
        &self,
        connection: &mut Connection<E>,
        group: &str,
        entry: &ParkedEntry,
    ) -> impl Future<Output = Result<(), Error>> + Send;

    /// Every entry parked under `group`.
    fn parked(
        &self,
        connection: &mut Connection<E>,
        group: &str,
    ) -> impl Future<Output = Result<Vec<ParkedEntry>, Error>> + Send;

    /// Sets the entry's retry request; whether it was parked.
    fn retry_parked(
        &self,
        connection: &mut Connection<E>,
        key: (&str, &str),
        partition: u32,
        position: u64,
    ) -> impl Future<Output = Result<bool, Error>> + Send;

    /// Removes the entry; whether it was parked.
    fn unpark(
        &self,
        connection: &mut Connection<E>,
        key: (&str, &str),
        partition: u32,
        position: u64,
    ) -> impl Future<Output = Result<bool, Error>> + Send;
}
