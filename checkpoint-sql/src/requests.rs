//! What an engine's statements do on a connection: one trait per concern, as the engine's
//! `requests/` files are split (the hot path, the operations API, leases, parked entries, and
//! the statements themselves). [`SqlStore`](crate::SqlStore) calls them on a pooled connection
//! or on the caller's; each engine implements them, mostly through this crate's shared
//! requests ([`hot_path`](crate::hot_path), [`admin`](crate::admin), [`parked`](crate::parked)).
//!
//! Each method's arguments are already checked by the front (`checkpoint_core::door`).

use std::future::Future;
use std::time::Duration;

use checkpoint_core::parked::ParkedEntry;
use checkpoint_core::{Acquired, Checkpoint, Error, Fingerprint, HeldLease, LeaseTable, Released};

use crate::engine::{Connection, Engine};
use crate::lease::LeaseKey;

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
