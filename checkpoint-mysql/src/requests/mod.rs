//! The one door to the database: every request the store sends, and how each is sent and its
//! reply read. `store.rs`, `admin.rs`, `lease.rs`, `parked.rs` and `transaction.rs` are the
//! store's door and call one function here; nothing else in the crate talks to the server.
//!
//! - [`hot_path`]: the operations of [`CheckpointStore`](checkpoint_core::CheckpointStore) and
//!   [`ExclusiveCheckpointStore`](checkpoint_core::ExclusiveCheckpointStore);
//! - [`admin`]: [`CheckpointAdmin`](checkpoint_core::CheckpointAdmin)'s statements and
//!   transactions;
//! - [`lease`]: [`LeaseStore`](checkpoint_core::LeaseStore)'s calls of the lease procedures;
//! - [`parked`]: [`ParkedStore`](checkpoint_core::parked::ParkedStore)'s statements, one each;
//! - [`migration`]: the statements that create the tables and the procedures.
//!
//! The statements live in `sql/*.sql` beside the crate, the procedures in `sql/procedures/`,
//! with `{table}`-style placeholders. The table name (and the procedures' names made from it)
//! is the only text ever spliced into them, and only after [`TableName::parse`] has checked
//! that it is a plain identifier; every value goes in as a bind parameter.

mod hot_path;
mod lease;
mod migration;

use std::sync::Arc;

use checkpoint_core::Error;
use sqlx::AssertSqlSafe;
use sqlx::mysql::MySqlConnection;

use checkpoint_sql::admin::AdminStatements;
use checkpoint_sql::parked::ParkedStatements;
use checkpoint_sql::requests::Statements;

use crate::MysqlEngine;
use crate::layout::{PROCEDURES, TableName};

/// Every statement of the store, for one table.
#[derive(Debug)]
pub struct Requests {
    /// `sql/schema.sql`, one `CREATE TABLE IF NOT EXISTS` per table, which
    /// [`migrate`](crate::MysqlCheckpointStore::migrate) runs one after the other.
    create_tables: Vec<Arc<str>>,
    /// `sql/procedures/*.sql`, one `CREATE PROCEDURE` each (in [`PROCEDURES`]' order), which
    /// `migrate` runs after the tables.
    create_procedures: Vec<Arc<str>>,
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

/// The `CALL` of each lease procedure (`sql/procedures/`), one prepared statement each.
#[derive(Debug)]
struct LeaseRequests {
    acquire: Arc<str>,
    renew: Arc<str>,
    release: Arc<str>,
    leave: Arc<str>,
    handover: Arc<str>,
    leases: Arc<str>,
}

/// The text of each procedure of [`PROCEDURES`], in that order.
const PROCEDURE_TEXTS: [&str; 7] = [
    include_str!("../../sql/procedures/acquire.sql"),
    include_str!("../../sql/procedures/renew.sql"),
    include_str!("../../sql/procedures/release.sql"),
    include_str!("../../sql/procedures/leave.sql"),
    include_str!("../../sql/procedures/handover.sql"),
    include_str!("../../sql/procedures/leases.sql"),
    include_str!("../../sql/procedures/groups.sql"),
];

impl Statements<MysqlEngine> for Requests {
    /// Every request's text for `table`, its names spliced in once.
    fn for_table(table: &TableName) -> Self {
        let mut names = vec![
            ("{table}".to_owned(), table.quoted("")),
            ("{retired}".to_owned(), table.quoted("_retired")),
            (
                "{leases_by_owner}".to_owned(),
                table.quoted("_leases_by_owner"),
            ),
            ("{leases}".to_owned(), table.quoted("_leases")),
            ("{lease_owners}".to_owned(), table.quoted("_lease_owners")),
            ("{parked}".to_owned(), table.quoted("_parked")),
        ];
        for operation in PROCEDURES {
            names.push((
                format!("{{{operation}_procedure}}"),
                table.procedure(operation),
            ));
        }
        let build = |template: &str| -> Arc<str> {
            let mut text = template.to_owned();
            for (placeholder, name) in &names {
                text = text.replace(placeholder.as_str(), name);
            }
            text.into()
        };
        let call = |operation: &str, parameters: usize| -> Arc<str> {
            let marks = vec!["?"; parameters].join(", ");
            format!("CALL {}({marks})", table.procedure(operation)).into()
        };
        Self {
            create_tables: schema_statements(include_str!("../../sql/schema.sql"))
                .map(build)
                .collect(),
            create_procedures: PROCEDURE_TEXTS.into_iter().map(build).collect(),
            list: build(include_str!("../../sql/list.sql")),
            load: build(include_str!("../../sql/load.sql")),
            load_locking: build(include_str!("../../sql/load_locking.sql")),
            save: build(include_str!("../../sql/save.sql")),
            save_all: build(include_str!("../../sql/save_all.sql")),
            claim: build(include_str!("../../sql/claim.sql")),
            claim_read: build(include_str!("../../sql/claim_read.sql")),
            advance: build(include_str!("../../sql/advance.sql")),
            admin: AdminStatements {
                groups: call("groups", 0),
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
                acquire: call("acquire", 5),
                renew: call("renew", 4),
                release: call("release", 4),
                leave: call("leave", 3),
                handover: call("handover", 4),
                leases: call("leases", 2),
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

    /// `sql/schema.sql` then `sql/procedures/` rendered for the table, one statement after the
    /// other, as the `mysql` client runs a file: the procedures' bodies hold `;`, so they are
    /// ended by `$$` under `DELIMITER $$` (a client command, not SQL: `migrate` sends each
    /// statement on its own and needs none).
    fn schema_sql(&self) -> String {
        let mut statements: Vec<String> = self
            .create_tables
            .iter()
            .map(|statement| format!("{statement};\n"))
            .collect();
        statements.push("DELIMITER $$\n".to_owned());
        for procedure in &self.create_procedures {
            statements.push(format!("{}$$\n", procedure.trim_end()));
        }
        statements.push("DELIMITER ;\n".to_owned());
        statements.join("\n")
    }

    fn parked(&self) -> &ParkedStatements {
        &self.parked
    }

    fn admin(&self) -> &AdminStatements {
        &self.admin
    }

    async fn migrate(&self, connection: &mut MySqlConnection) -> Result<(), Error> {
        self.create_tables(connection).await?;
        self.create_procedures(connection).await
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splices_the_quoted_names_everywhere() {
        let requests = Requests::for_table(&TableName::parse("my_table").unwrap());
        assert_eq!(requests.create_tables.len(), 5);
        assert_eq!(requests.create_procedures.len(), PROCEDURES.len());
        let mut all: Vec<&Arc<str>> = requests.create_tables.iter().collect();
        all.extend(&requests.create_procedures);
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
            &lease.acquire,
            &lease.renew,
            &lease.release,
            &lease.leave,
            &lease.handover,
            &lease.leases,
        ]);
        let parked = &requests.parked;
        all.extend([&parked.park, &parked.list, &parked.retry, &parked.unpark]);
        for statement in all {
            assert!(statement.contains("`my_table"), "{statement}");
            assert!(!statement.contains('{'), "{statement}");
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
        // Each procedure is created under the name its CALL uses, and runs with the caller's
        // privileges.
        for (operation, procedure) in PROCEDURES.iter().zip(&requests.create_procedures) {
            let name = format!("CREATE PROCEDURE `my_table_{operation}_v1`(");
            assert!(procedure.contains(&name), "{operation}: {procedure}");
            assert!(
                procedure.contains("\nSQL SECURITY INVOKER\n"),
                "{operation}"
            );
        }
        assert_eq!(&*lease.acquire, "CALL `my_table_acquire_v1`(?, ?, ?, ?, ?)");
        assert_eq!(&*requests.admin.groups, "CALL `my_table_groups_v1`()");
    }

    /// FNV-1a over the procedures' text, their comment lines left out: a checksum that does
    /// not depend on the Rust release (std's hashers may change between releases).
    fn procedures_checksum() -> u64 {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for text in PROCEDURE_TEXTS {
            let code = text
                .lines()
                .filter(|line| !line.trim_start().starts_with("--"));
            for byte in code.flat_map(|line| line.bytes().chain([b'\n'])) {
                hash = (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
        hash
    }

    /// A procedure of a version never changes once released: a database that has it keeps the
    /// text it was created with (`migrate` leaves an existing one alone), and processes of an
    /// older release may be calling it. So this fails when a procedure's code changes under
    /// the same version: give the procedures a new [`PROCEDURE_VERSION`](crate::layout) and
    /// record the new checksum with it.
    #[test]
    fn a_procedure_changes_only_with_a_new_version() {
        let recorded = ("v1", 0xd2be_29a8_fab8_8af2);
        assert_eq!(
            (crate::layout::PROCEDURE_VERSION, procedures_checksum()),
            recorded,
            "a procedure changed: give it a new version and record the new checksum"
        );
    }

    #[test]
    fn schema_sql_ends_each_procedure_under_its_own_delimiter() {
        let requests = Requests::for_table(&TableName::parse("my_table").unwrap());
        let schema = requests.schema_sql();
        let (tables, procedures) = schema.split_once("DELIMITER $$\n").unwrap();
        assert_eq!(tables.matches("CREATE TABLE IF NOT EXISTS").count(), 5);
        assert!(procedures.ends_with("DELIMITER ;\n"), "{procedures}");
        assert_eq!(procedures.matches("END$$\n").count(), PROCEDURES.len());
        assert_eq!(procedures.matches("$$").count(), PROCEDURES.len());
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
