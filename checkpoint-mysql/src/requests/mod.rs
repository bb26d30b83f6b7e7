//! The one door to the database: every request the store sends, and how each is sent and its
//! reply read. `store.rs`, `admin.rs`, `lease.rs`, `parked.rs` and `transaction.rs` are the
//! store's door and call one function here; nothing else in the crate talks to the server.
//!
//! - [`hot_path`]: the operations of [`CheckpointStore`](checkpoint_core::CheckpointStore) and
//!   [`ExclusiveCheckpointStore`](checkpoint_core::ExclusiveCheckpointStore);
//! - [`admin`]: [`CheckpointAdmin`](checkpoint_core::CheckpointAdmin)'s statements and
//!   transactions;
//! - [`lease`]: [`LeaseStore`](checkpoint_core::LeaseStore)'s transactions;
//! - [`parked`]: [`ParkedStore`](checkpoint_core::parked::ParkedStore)'s statements, one each;
//! - [`migration`]: the statements that create the tables.
//!
//! The statements live in `sql/*.sql` beside the crate with `{table}`-style placeholders. The
//! table name is the only text ever spliced into them, and only after [`TableName::parse`] has
//! checked that it is a plain identifier; every value goes in as a bind parameter.

mod hot_path;
mod lease;
mod migration;

use std::sync::Arc;

use checkpoint_core::{Error, Operation};
use sqlx::mysql::MySqlConnection;
use sqlx::{AssertSqlSafe, MySql, Transaction};

use checkpoint_sql::admin::AdminStatements;
use checkpoint_sql::parked::ParkedStatements;
use checkpoint_sql::requests::Statements;

use crate::MysqlEngine;
use crate::layout::TableName;

/// Every statement of the store, for one table.
#[derive(Debug)]
pub struct Requests {
    /// `sql/schema.sql`, one `CREATE TABLE IF NOT EXISTS` per table, which
    /// [`migrate`](crate::MysqlCheckpointStore::migrate) runs one after the other.
    create_tables: Vec<Arc<str>>,
    list: Arc<str>,
    load: Arc<str>,
    load_locking: Arc<str>,
    save: Arc<str>,
    save_all: Arc<str>,
    claim: Arc<str>,
    claim_read: Arc<str>,
    advance: Arc<str>,
    /// The operations API's statements (`sql/groups.sql`, `retired.sql`, `presence.sql`,
    /// `start_at.sql`, `retire_tombstone.sql`, `delete_subscription.sql`, `purge_*.sql`).
    admin: AdminStatements,
    lease: LeaseRequests,
    /// `sql/park.sql`, `parked.sql`, `retry_parked.sql`, `unpark.sql`.
    parked: ParkedStatements,
}

/// The statements of the leases (`sql/lease_*.sql`, `sql/leases.sql`).
#[derive(Debug)]
struct LeaseRequests {
    clock: Arc<str>,
    join: Arc<str>,
    beat: Arc<str>,
    extend: Arc<str>,
    grant: Arc<str>,
    held: Arc<str>,
    owned: Arc<str>,
    free: Arc<str>,
    owner_delete: Arc<str>,
    handover: Arc<str>,
    leases: Arc<str>,
    owners: Arc<str>,
}

impl Statements<MysqlEngine> for Requests {
    /// Every request's text for `table`, its names spliced in once.
    fn for_table(table: &TableName) -> Self {
        let names = [
            ("{table}", table.quoted("")),
            ("{retired}", table.quoted("_retired")),
            ("{leases_by_owner}", table.quoted("_leases_by_owner")),
            ("{leases}", table.quoted("_leases")),
            ("{lease_owners}", table.quoted("_lease_owners")),
            ("{parked}", table.quoted("_parked")),
        ];
        let build = |template: &str| -> Arc<str> {
            let mut text = template.to_owned();
            for (placeholder, name) in &names {
                text = text.replace(placeholder, name);
            }
            text.into()
        };
        Self {
            create_tables: schema_statements(include_str!("../../sql/schema.sql"))
                .map(build)
                .collect(),
            list: build(include_str!("../../sql/list.sql")),
            load: build(include_str!("../../sql/load.sql")),
            load_locking: build(include_str!("../../sql/load_locking.sql")),
            save: build(include_str!("../../sql/save.sql")),
            save_all: build(include_str!("../../sql/save_all.sql")),
            claim: build(include_str!("../../sql/claim.sql")),
            claim_read: build(include_str!("../../sql/claim_read.sql")),
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
                clock: build(include_str!("../../sql/lease_clock.sql")),
                join: build(include_str!("../../sql/lease_join.sql")),
                beat: build(include_str!("../../sql/lease_beat.sql")),
                extend: build(include_str!("../../sql/lease_extend.sql")),
                grant: build(include_str!("../../sql/lease_grant.sql")),
                held: build(include_str!("../../sql/lease_held.sql")),
                owned: build(include_str!("../../sql/lease_owned.sql")),
                free: build(include_str!("../../sql/lease_free.sql")),
                owner_delete: build(include_str!("../../sql/lease_owner_delete.sql")),
                handover: build(include_str!("../../sql/lease_handover.sql")),
                leases: build(include_str!("../../sql/leases.sql")),
                owners: build(include_str!("../../sql/lease_owners.sql")),
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

    /// `sql/schema.sql` rendered for the table, one statement after the other.
    fn schema_sql(&self) -> String {
        let statements: Vec<String> = self
            .create_tables
            .iter()
            .map(|statement| format!("{statement};\n"))
            .collect();
        statements.join("\n")
    }

    fn parked(&self) -> &ParkedStatements {
        &self.parked
    }

    fn admin(&self) -> &AdminStatements {
        &self.admin
    }

    async fn migrate(&self, connection: &mut MySqlConnection) -> Result<(), Error> {
        self.create_tables(connection).await
    }
}

/// The statements of `sql/schema.sql`, one per table (each ends with `;` at a line's end).
fn schema_statements(schema: &str) -> impl Iterator<Item = &str> {
    schema
        .split(";\n")
        .map(str::trim)
        .filter(|statement| !statement.is_empty())
}

/// A statement ready for `sqlx::query`.
///
/// Sound because the only dynamic part of every statement is a [`TableName`], checked by
/// [`TableName::parse`]; the `Arc` is shared, not copied, on each call.
fn sql(statement: &Arc<str>) -> AssertSqlSafe<Arc<str>> {
    AssertSqlSafe(Arc::clone(statement))
}

/// A transaction on `connection`, at the session's isolation level (REPEATABLE READ on the
/// store's own connections).
async fn begin(
    connection: &mut MySqlConnection,
    operation: Operation,
) -> Result<Transaction<'_, MySql>, Error> {
    checkpoint_sql::begin::<MysqlEngine>(connection, operation).await
}

/// Commits `transaction` when `outcome` is `Ok`, rolls it back otherwise (the shared
/// [`checkpoint_sql::finish`], for this engine).
async fn finish<T>(
    transaction: Transaction<'_, MySql>,
    operation: Operation,
    outcome: Result<T, Error>,
) -> Result<T, Error> {
    checkpoint_sql::finish::<MysqlEngine, T>(transaction, operation, outcome).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splices_the_quoted_names_everywhere() {
        let requests = Requests::for_table(&TableName::parse("my_table").unwrap());
        assert_eq!(requests.create_tables.len(), 5);
        let mut all: Vec<&Arc<str>> = requests.create_tables.iter().collect();
        all.extend([
            &requests.list,
            &requests.load,
            &requests.load_locking,
            &requests.save,
            &requests.save_all,
            &requests.claim,
            &requests.claim_read,
            &requests.advance,
            &requests.admin.groups,
            &requests.admin.retired,
            &requests.admin.presence,
            &requests.admin.start_at,
            &requests.admin.retire_tombstone,
            &requests.admin.delete_subscription,
            &requests.admin.purge_tombstone,
            &requests.admin.purge_leases,
            &requests.admin.purge_lease_owners,
        ]);
        let lease = &requests.lease;
        all.extend([
            &lease.clock,
            &lease.join,
            &lease.beat,
            &lease.extend,
            &lease.grant,
            &lease.held,
            &lease.owned,
            &lease.free,
            &lease.owner_delete,
            &lease.handover,
            &lease.leases,
            &lease.owners,
        ]);
        let parked = &requests.parked;
        all.extend([&parked.park, &parked.list, &parked.retry, &parked.unpark]);
        for statement in all {
            assert!(statement.contains("`my_table"), "{statement}");
            assert!(!statement.contains("{table}"), "{statement}");
            assert!(!statement.contains("{retired}"), "{statement}");
            assert!(!statement.contains("{lease"), "{statement}");
            assert!(!statement.contains("{parked}"), "{statement}");
        }
        // Every statement that can create a checkpoint checks the tombstone table.
        for statement in [
            &requests.save,
            &requests.save_all,
            &requests.claim,
            &requests.admin.presence,
        ] {
            assert!(statement.contains("`my_table_retired`"), "{statement}");
        }
    }

    #[test]
    fn the_readme_shows_the_tables_migrate_creates() {
        let schema = include_str!("../../sql/schema.sql");
        let readme = include_str!("../../README.md");
        assert!(
            readme.contains(&format!("```sql\n{schema}```")),
            "README.md's schema differs from sql/schema.sql"
        );
    }
}
