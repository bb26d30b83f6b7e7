//! The one door to the database: every request the store sends, and how each is sent and its
//! reply read. `store.rs`, `admin.rs` and `transaction.rs` validate, open a span and call one
//! function here; nothing else in the crate talks to SQLite.
//!
//! - [`hot_path`]: the operations of [`CheckpointStore`](checkpoint_core::CheckpointStore) and
//!   [`ExclusiveCheckpointStore`](checkpoint_core::ExclusiveCheckpointStore);
//! - [`admin`]: [`CheckpointAdmin`](checkpoint_core::CheckpointAdmin)'s statements and
//!   transactions;
//! - [`lease`]: [`LeaseStore`](checkpoint_core::LeaseStore)'s transactions;
//! - [`parked`]: [`ParkedStore`](checkpoint_core::parked::ParkedStore)'s statements, one each;
//! - [`migration`]: the transaction that creates the tables.
//!
//! The statements live in `sql/*.sql` beside the crate with a `{table}` placeholder. The table
//! name is the only text ever spliced into them, and only after [`TableName::parse`] has
//! checked that it is a plain identifier; every value goes in as a bind parameter.

mod hot_path;
mod lease;
mod migration;

use std::sync::Arc;

use checkpoint_core::{Error, Operation};
use sqlx::sqlite::SqliteConnection;
use sqlx::{AssertSqlSafe, Sqlite, Transaction};

use checkpoint_sql::admin::AdminStatements;
use checkpoint_sql::parked::ParkedStatements;
use checkpoint_sql::requests::Statements;

use crate::SqliteEngine;
use crate::layout::TableName;

/// Every statement of the store, for one table.
#[derive(Debug)]
pub struct Requests {
    /// `sql/schema.sql` (the checkpoint table, its tombstone table, the lease tables and the
    /// parked entries' table), which
    /// [`migrate`](crate::SqliteCheckpointStore::migrate) runs.
    create_table: Arc<str>,
    list: Arc<str>,
    load: Arc<str>,
    save: Arc<str>,
    save_all: Arc<str>,
    claim: Arc<str>,
    advance: Arc<str>,
    /// The operations API's statements (`sql/groups.sql`, `retired.sql`, `presence.sql`,
    /// `start_at.sql`, `retire_tombstone.sql`, `delete_subscription.sql`, `purge_*.sql`).
    admin: AdminStatements,
    lease: LeaseRequests,
    /// `sql/park.sql`, `parked.sql`, `retry_parked.sql`, `unpark.sql`.
    parked: ParkedStatements,
}

/// The requests of the leases (`sql/lease_*.sql`, `sql/leases.sql`). `acquire`, `renew` and
/// `leave` hold several statements each, sent as one request (sqlx's SQLite driver runs them in
/// turn, each binding its `?N` from the one argument list).
#[derive(Debug)]
struct LeaseRequests {
    acquire: Arc<str>,
    renew: Arc<str>,
    release: Arc<str>,
    leave: Arc<str>,
    handover: Arc<str>,
    leases: Arc<str>,
}

impl Statements<SqliteEngine> for Requests {
    /// Every request's text for `table`, its name spliced in once.
    fn for_table(table: &TableName) -> Self {
        let quoted = table.quoted();
        let retired = table.retired_quoted();
        let leases = table.leases_quoted();
        let lease_owners = table.lease_owners_quoted();
        let leases_by_owner = table.leases_by_owner_quoted();
        let parked = table.parked_quoted();
        let build = |template: &str| -> Arc<str> {
            template
                .replace("{table}", &quoted)
                .replace("{retired}", &retired)
                .replace("{leases_by_owner}", &leases_by_owner)
                .replace("{leases}", &leases)
                .replace("{lease_owners}", &lease_owners)
                .replace("{parked}", &parked)
                .into()
        };
        Self {
            create_table: build(include_str!("../../sql/schema.sql")),
            list: build(include_str!("../../sql/list.sql")),
            load: build(include_str!("../../sql/load.sql")),
            save: build(include_str!("../../sql/save.sql")),
            save_all: build(include_str!("../../sql/save_all.sql")),
            claim: build(include_str!("../../sql/claim.sql")),
            advance: build(include_str!("../../sql/advance.sql")),
            admin: AdminStatements {
                groups: build(include_str!("../../sql/groups.sql")),
                retired: build(include_str!("../../sql/retired.sql")),
                presence: build(include_str!("../../sql/presence.sql")),
                start_at: build(include_str!("../../sql/start_at.sql")),
                retire_tombstone: build(include_str!("../../sql/retire_tombstone.sql")),
                delete_subscription: build(include_str!("../../sql/delete_subscription.sql")),
                purge_tombstone: build(include_str!("../../sql/purge_tombstone.sql")),
                purge_leases: build(include_str!("../../sql/purge_leases.sql")),
                purge_lease_owners: build(include_str!("../../sql/purge_lease_owners.sql")),
            },
            lease: LeaseRequests {
                acquire: build(include_str!("../../sql/lease_acquire.sql")),
                renew: build(include_str!("../../sql/lease_renew.sql")),
                release: build(include_str!("../../sql/lease_release.sql")),
                leave: build(include_str!("../../sql/lease_leave.sql")),
                handover: build(include_str!("../../sql/lease_handover.sql")),
                leases: build(include_str!("../../sql/leases.sql")),
            },
            parked: ParkedStatements {
                park: build(include_str!("../../sql/park.sql")),
                list: build(include_str!("../../sql/parked.sql")),
                retry: build(include_str!("../../sql/retry_parked.sql")),
                unpark: build(include_str!("../../sql/unpark.sql")),
            },
        }
    }

    fn save_sql(&self) -> &str {
        &self.save
    }

    fn list_sql(&self) -> &str {
        &self.list
    }

    /// `sql/schema.sql`, as the README shows it.
    fn schema_sql(&self) -> String {
        self.create_table.to_string()
    }

    fn parked(&self) -> &ParkedStatements {
        &self.parked
    }

    fn admin(&self) -> &AdminStatements {
        &self.admin
    }

    async fn migrate(&self, connection: &mut SqliteConnection) -> Result<(), Error> {
        self.create_tables(connection).await
    }
}

/// A statement ready for `sqlx::query`.
///
/// Sound because the only dynamic part of every statement is a [`TableName`], checked by
/// [`TableName::parse`]; the `Arc` is shared, not copied, on each call.
fn sql(statement: &Arc<str>) -> AssertSqlSafe<Arc<str>> {
    AssertSqlSafe(Arc::clone(statement))
}

/// A `BEGIN IMMEDIATE` transaction on `connection` (the engine's `BEGIN`): it holds the
/// database's write lock from its first statement (waiting for it up to the busy timeout).
async fn begin_immediate(
    connection: &mut SqliteConnection,
    operation: Operation,
) -> Result<Transaction<'_, Sqlite>, Error> {
    checkpoint_sql::begin::<SqliteEngine>(connection, operation).await
}

/// Commits `transaction` when `outcome` is `Ok`, rolls it back otherwise (the shared
/// [`checkpoint_sql::finish`], for this engine).
async fn finish<T>(
    transaction: Transaction<'_, Sqlite>,
    operation: Operation,
    outcome: Result<T, Error>,
) -> Result<T, Error> {
    checkpoint_sql::finish::<SqliteEngine, T>(transaction, operation, outcome).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splices_the_quoted_name_everywhere() {
        let requests = Requests::for_table(&TableName::parse("my_table").unwrap());
        for statement in [
            &requests.create_table,
            &requests.list,
            &requests.load,
            &requests.save,
            &requests.save_all,
            &requests.claim,
            &requests.advance,
            &requests.admin.groups,
            &requests.admin.presence,
            &requests.admin.start_at,
            &requests.admin.delete_subscription,
        ] {
            assert!(statement.contains("\"my_table\""), "{statement}");
            assert!(!statement.contains("{table}"), "{statement}");
            assert!(!statement.contains("{retired}"), "{statement}");
        }
        // Every statement that can create a checkpoint checks the tombstone table (start_at
        // through `presence` in its transaction), and those of the tombstones name it.
        for statement in [
            &requests.save,
            &requests.save_all,
            &requests.claim,
            &requests.admin.retired,
            &requests.admin.retire_tombstone,
            &requests.admin.purge_tombstone,
        ] {
            assert!(statement.contains("\"my_table_retired\""), "{statement}");
        }
        let parked = &requests.parked;
        for statement in [
            &requests.create_table,
            &parked.park,
            &parked.list,
            &parked.retry,
            &parked.unpark,
        ] {
            assert!(statement.contains("\"my_table_parked\""), "{statement}");
            assert!(!statement.contains('{'), "{statement}");
        }
    }

    #[test]
    fn splices_the_quoted_names_into_the_lease_requests() {
        let requests = Requests::for_table(&TableName::parse("my_table").unwrap());
        let lease = &requests.lease;
        for statement in [
            &requests.create_table,
            &requests.admin.purge_leases,
            &lease.acquire,
            &lease.renew,
            &lease.release,
            &lease.leave,
            &lease.handover,
            &lease.leases,
        ] {
            assert!(statement.contains("\"my_table_leases\""), "{statement}");
        }
        for statement in [
            &requests.create_table,
            &requests.admin.purge_lease_owners,
            &lease.acquire,
            &lease.renew,
            &lease.leave,
            &lease.leases,
        ] {
            assert!(
                statement.contains("\"my_table_lease_owners\""),
                "{statement}"
            );
        }
        assert!(
            requests
                .create_table
                .contains("\"my_table_leases_by_owner\"")
        );
        for statement in [&lease.acquire, &lease.renew] {
            assert!(statement.contains("\"my_table_retired\""), "{statement}");
        }
        for statement in [
            &lease.acquire,
            &lease.renew,
            &lease.release,
            &lease.leave,
            &lease.handover,
            &lease.leases,
        ] {
            assert!(!statement.contains('{'), "{statement}");
        }
    }

    #[test]
    fn the_readme_shows_the_table_migrate_creates() {
        let requests = Requests::for_table(&TableName::default_table());
        let ddl: Vec<&str> = requests
            .create_table
            .lines()
            .filter(|line| !line.starts_with("--"))
            .collect();
        let readme = include_str!("../../README.md");
        assert!(
            readme.contains(&format!("```sql\n{}\n```", ddl.join("\n"))),
            "README.md's schema differs from sql/schema.sql"
        );
    }
}
