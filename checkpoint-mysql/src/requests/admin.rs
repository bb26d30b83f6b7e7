//! [`CheckpointAdmin`](checkpoint_core::CheckpointAdmin)'s requests.
//!
//! `groups` and `retired` are one `SELECT`. `start_at`, `retire` and `purge` each run in one
//! transaction whose reads are locking reads: what they read is the newest committed data,
//! and the rows and gaps they read stay locked until they commit, so it cannot change before
//! they write; they are all-or-nothing.

use std::time::Duration;

use checkpoint_core::{Error, Operation};
use checkpoint_sql::admin;
use checkpoint_sql::json::positions_json;
use sqlx::mysql::MySqlConnection;

use checkpoint_sql::requests::Admin;

use super::{Requests, begin, finish};
use crate::engine::MysqlEngine;

impl Admin<MysqlEngine> for Requests {
    /// Every group, of checkpoints and of tombstones, sorted (`sql/groups.sql`).
    async fn groups(&self, connection: &mut MySqlConnection) -> Result<Vec<String>, Error> {
        admin::groups::<MysqlEngine, _>(connection, &self.groups).await
    }

    /// The retired subscriptions of `group`, sorted (`sql/retired.sql`).
    async fn retired(
        &self,
        connection: &mut MySqlConnection,
        group: &str,
    ) -> Result<Vec<String>, Error> {
        admin::retired::<MysqlEngine, _>(connection, &self.retired, group).await
    }

    /// One transaction: refuses a retired or existing subscription, else creates every
    /// checkpoint.
    async fn start_at(
        &self,
        connection: &mut MySqlConnection,
        group: &str,
        subscription: &str,
        positions: &[(u32, u64)],
    ) -> Result<(), Error> {
        let operation = Operation::StartAt;
        let mut transaction = begin(connection, operation).await?;
        let statements = (&self.presence, &self.start_at);
        let key = (group, subscription);
        let positions = positions_json(positions);
        let outcome =
            admin::start_at_in::<MysqlEngine>(&mut transaction, statements, key, positions).await;
        finish(transaction, operation, outcome).await
    }

    /// One transaction: writes the tombstone and deletes the checkpoints.
    async fn retire(
        &self,
        connection: &mut MySqlConnection,
        group: &str,
        subscription: &str,
        _timeout: Option<Duration>,
    ) -> Result<(), Error> {
        let operation = Operation::Retire;
        let mut transaction = begin(connection, operation).await?;
        let statements = [&self.retire_tombstone, &self.delete_subscription];
        let key = (group, subscription);
        let outcome =
            admin::run_each::<MysqlEngine>(&mut transaction, operation, &statements, key).await;
        finish(transaction, operation, outcome).await
    }

    /// One transaction: a retired subscription loses its tombstone and anything left of
    /// it (checkpoints, leases, heartbeats); a live one is refused; nothing at all is fine.
    async fn purge(
        &self,
        connection: &mut MySqlConnection,
        group: &str,
        subscription: &str,
    ) -> Result<(), Error> {
        let operation = Operation::Purge;
        let mut transaction = begin(connection, operation).await?;
        let statements = [
            &self.purge_tombstone,
            &self.delete_subscription,
            &self.purge_leases,
            &self.purge_lease_owners,
        ];
        let key = (group, subscription);
        let outcome =
            admin::purge_in::<MysqlEngine>(&mut transaction, &self.presence, &statements, key)
                .await;
        finish(transaction, operation, outcome).await
    }
}
