//! [`CheckpointAdmin`](checkpoint_core::CheckpointAdmin)'s requests.
//!
//! `groups` and `retired` are one `SELECT`. `start_at`, `retire` and `purge` each run in one
//! `BEGIN IMMEDIATE` transaction: it takes the database's write lock first, so what they read
//! cannot change before they write, and they are all-or-nothing.

use std::time::Duration;

use checkpoint_core::{Error, Operation};
use sqlx::sqlite::SqliteConnection;

use checkpoint_sql::admin;

use checkpoint_sql::json::positions_json;

use checkpoint_sql::requests::Admin;

use super::{Requests, begin_immediate, finish};
use crate::engine::SqliteEngine;

impl Admin<SqliteEngine> for Requests {
    /// Every group, of checkpoints and of tombstones, sorted (`sql/groups.sql`).
    async fn groups(&self, connection: &mut SqliteConnection) -> Result<Vec<String>, Error> {
        admin::groups::<SqliteEngine, _>(connection, &self.groups).await
    }

    /// The retired subscriptions of `group`, sorted (`sql/retired.sql`).
    async fn retired(
        &self,
        connection: &mut SqliteConnection,
        group: &str,
    ) -> Result<Vec<String>, Error> {
        admin::retired::<SqliteEngine, _>(connection, &self.retired, group).await
    }

    /// Under the write lock: refuses a retired or existing subscription, else creates every
    /// checkpoint.
    async fn start_at(
        &self,
        connection: &mut SqliteConnection,
        group: &str,
        subscription: &str,
        positions: &[(u32, u64)],
    ) -> Result<(), Error> {
        let operation = Operation::StartAt;
        let mut transaction = begin_immediate(connection, operation).await?;
        let statements = (&self.presence, &self.start_at);
        let key = (group, subscription);
        let positions = positions_json(positions);
        let outcome =
            admin::start_at_in::<SqliteEngine>(&mut transaction, statements, key, positions).await;
        finish(transaction, operation, outcome).await
    }

    /// Under the write lock: writes the tombstone and deletes the checkpoints.
    async fn retire(
        &self,
        connection: &mut SqliteConnection,
        group: &str,
        subscription: &str,
        _timeout: Option<Duration>,
    ) -> Result<(), Error> {
        let operation = Operation::Retire;
        let mut transaction = begin_immediate(connection, operation).await?;
        let statements = [&self.retire_tombstone, &self.delete_subscription];
        let key = (group, subscription);
        let outcome =
            admin::run_each::<SqliteEngine>(&mut transaction, operation, &statements, key).await;
        finish(transaction, operation, outcome).await
    }

    /// Under the write lock: a retired subscription loses its tombstone and anything left of
    /// it (checkpoints, leases, heartbeats); a live one is refused; nothing at all is fine.
    async fn purge(
        &self,
        connection: &mut SqliteConnection,
        group: &str,
        subscription: &str,
    ) -> Result<(), Error> {
        let operation = Operation::Purge;
        let mut transaction = begin_immediate(connection, operation).await?;
        let statements = [
            &self.purge_tombstone,
            &self.delete_subscription,
            &self.purge_leases,
            &self.purge_lease_owners,
        ];
        let key = (group, subscription);
        let outcome =
            admin::purge_in::<SqliteEngine>(&mut transaction, &self.presence, &statements, key)
                .await;
        finish(transaction, operation, outcome).await
    }
}
