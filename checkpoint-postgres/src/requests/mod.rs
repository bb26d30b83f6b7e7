//! The one door to the server: every request the store sends, and how each is sent and its
//! reply read. `store.rs`, `admin.rs` and `transaction.rs` validate, open a span and call one
//! function here; nothing else in the crate talks to PostgreSQL.
//!
//! - [`hot_path`]: the operations of [`CheckpointStore`](checkpoint_core::CheckpointStore) and
//!   [`ExclusiveCheckpointStore`](checkpoint_core::ExclusiveCheckpointStore), one statement each;
//! - [`admin`]: [`CheckpointAdmin`](checkpoint_core::CheckpointAdmin)'s statements and
//!   transactions;
//! - [`lease`]: [`LeaseStore`](checkpoint_core::LeaseStore)'s statements, one each;
//! - [`parked`]: [`ParkedStore`](checkpoint_core::parked::ParkedStore)'s statements, one each;
//! - [`migration`]: the transaction that creates the tables;
//! - [`pool`]: a connection from the pool for one call, under the store's timeout, and what
//!   happens to it when the call ends or is abandoned.
//!
//! The text lives in `sql/*.sql` with `{table}`, `{retired}`, `{leases}`, `{owners}`,
//! `{parked}` and `{by_owner}` (the lease table's index) placeholders (`{schema}` in
//! `create_schema.sql`). It is replaced by the quoted name once, when the store is configured,
//! after [`TableName`] has validated it; every value a call passes is a bind parameter. That is
//! why wrapping the text in [`sqlx::AssertSqlSafe`] is sound.

mod admin;
mod hot_path;
mod lease;
mod migration;

use std::sync::Arc;

use sqlx::AssertSqlSafe;

use checkpoint_core::Error;
use checkpoint_sql::parked::ParkedStatements;
use checkpoint_sql::requests::Statements;
use sqlx::postgres::PgConnection;

use crate::PostgresEngine;
use crate::layout::TableName;

/// Serialises concurrent migrations of one table (see the file's header).
const MIGRATE_LOCK: &str = include_str!("../../sql/migrate_lock.sql");

/// Whether the table exists, before the migration creates anything.
const TABLE_EXISTS: &str = include_str!("../../sql/table_exists.sql");

/// Whether the lease tables have the current layout, or the first one (see the file's header).
const LEASE_LAYOUT: &str = include_str!("../../sql/lease_layout.sql");

/// Whether the table's schema exists, before the migration creates it.
const SCHEMA_EXISTS: &str = include_str!("../../sql/schema_exists.sql");

/// The first statement of retire's transaction: bounds the wait for its table lock.
const RETIRE_LOCK_TIMEOUT: &str = include_str!("../../sql/retire_lock_timeout.sql");

/// The first statement of start_at's transaction: concurrent start_ats of one name take turns.
const START_AT_LOCK: &str = include_str!("../../sql/start_at_lock.sql");

/// One SQL text per request, for one table.
#[derive(Debug)]
pub struct Requests {
    /// `sql/upgrade_leases.sql`: lease tables of the first layout brought to the current one.
    upgrade_leases: Arc<str>,
    /// The lease table's index by owner, qualified and quoted, which the migration looks for.
    by_owner: String,
    /// `sql/schema.sql` (the checkpoint table and its tombstone table), also what
    /// [`schema_sql`](crate::PostgresCheckpointStore::schema_sql) prints.
    create_table: Arc<str>,
    /// `sql/create_schema.sql`, for a schema-qualified table name only.
    create_schema: Option<Arc<str>>,
    /// The table as configured (`schema.table`), the key of the migration's advisory lock.
    table: String,
    /// The table's quoted name, its tombstone table's, its lease tables' and its parked
    /// entries' table's, which the migration looks for.
    quoted: [String; 5],
    /// The schema of a schema-qualified table, which the migration creates when missing.
    schema: Option<String>,
    save: Arc<str>,
    save_all: Arc<str>,
    load: Arc<str>,
    list: Arc<str>,
    claim: Arc<str>,
    advance: Arc<str>,
    groups: Arc<str>,
    start_at: Arc<str>,
    retire_lock: Arc<str>,
    retire: Arc<str>,
    retired: Arc<str>,
    purge: Arc<str>,
    acquire: Arc<str>,
    renew: Arc<str>,
    release: Arc<str>,
    leave: Arc<str>,
    leases: Arc<str>,
    request_handover: Arc<str>,
    /// `sql/park.sql`, `parked.sql`, `retry_parked.sql`, `unpark.sql`.
    parked: ParkedStatements,
}

impl Statements<PostgresEngine> for Requests {
    /// Every request's text for `table`, its name spliced in once.
    fn for_table(table: &TableName) -> Self {
        let quoted = table.quoted();
        let retired = table.retired_quoted();
        let leases = table.leases_quoted();
        let owners = table.owners_quoted();
        let parked = table.parked_quoted();
        let (by_owner, by_owner_qualified) = table.by_owner_index();
        let render = |template: &str| -> Arc<str> {
            template
                .replace("{table}", &quoted)
                .replace("{retired}", &retired)
                .replace("{leases}", &leases)
                .replace("{owners}", &owners)
                .replace("{parked}", &parked)
                .replace("{by_owner}", &by_owner)
                .into()
        };
        Self {
            create_table: render(include_str!("../../sql/schema.sql")),
            upgrade_leases: render(include_str!("../../sql/upgrade_leases.sql")),
            by_owner: by_owner_qualified,
            create_schema: table.schema().map(|schema| {
                include_str!("../../sql/create_schema.sql")
                    .trim_end()
                    .replace("{schema}", &format!("\"{schema}\""))
                    .into()
            }),
            table: table.to_string(),
            quoted: [
                quoted.clone(),
                retired.clone(),
                leases.clone(),
                owners.clone(),
                parked.clone(),
            ],
            schema: table.schema().map(str::to_owned),
            save: render(include_str!("../../sql/save.sql")),
            save_all: render(include_str!("../../sql/save_all.sql")),
            load: render(include_str!("../../sql/load.sql")),
            list: render(include_str!("../../sql/list.sql")),
            claim: render(include_str!("../../sql/claim.sql")),
            advance: render(include_str!("../../sql/advance.sql")),
            groups: render(include_str!("../../sql/groups.sql")),
            start_at: render(include_str!("../../sql/start_at.sql")),
            retire_lock: render(include_str!("../../sql/retire_lock.sql")),
            retire: render(include_str!("../../sql/retire.sql")),
            retired: render(include_str!("../../sql/retired.sql")),
            purge: render(include_str!("../../sql/purge.sql")),
            acquire: render(include_str!("../../sql/acquire.sql")),
            renew: render(include_str!("../../sql/renew.sql")),
            release: render(include_str!("../../sql/release.sql")),
            leave: render(include_str!("../../sql/leave.sql")),
            leases: render(include_str!("../../sql/leases.sql")),
            request_handover: render(include_str!("../../sql/request_handover.sql")),
            parked: ParkedStatements {
                park: render(include_str!("../../sql/park.sql")),
                list: render(include_str!("../../sql/parked.sql")),
                retry: render(include_str!("../../sql/retry_parked.sql")),
                unpark: render(include_str!("../../sql/unpark.sql")),
            },
        }
    }

    fn save_sql(&self) -> &str {
        &self.save
    }

    fn list_sql(&self) -> &str {
        &self.list
    }

    /// The DDL that the migration runs: the schema first for a schema-qualified table.
    fn schema_sql(&self) -> String {
        match &self.create_schema {
            Some(create_schema) => format!("{create_schema};\n{};\n", self.create_table),
            None => format!("{};\n", self.create_table),
        }
    }

    fn parked(&self) -> &ParkedStatements {
        &self.parked
    }

    /// PostgreSQL's own: its `start_at` and `retire` take locks of their own (see
    /// `requests/admin.rs`).
    fn admin(&self) -> &Requests {
        self
    }

    async fn migrate(&self, connection: &mut PgConnection) -> Result<(), Error> {
        self.create_tables(connection).await
    }
}

/// A request ready for [`sqlx::query`]: the text was built only from a validated, quoted
/// table name and constant SQL (see the module doc).
fn sql(request: &Arc<str>) -> AssertSqlSafe<Arc<str>> {
    AssertSqlSafe(Arc::clone(request))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_placeholder_is_replaced() {
        let requests = Requests::for_table(&TableName::parse("app.cp").unwrap());
        for text in [
            &requests.create_table,
            &requests.save,
            &requests.save_all,
            &requests.load,
            &requests.list,
            &requests.claim,
            &requests.advance,
            &requests.groups,
            &requests.start_at,
            &requests.retire_lock,
            &requests.retire,
            &requests.purge,
        ] {
            assert!(!text.contains("{table}"), "{text}");
            assert!(!text.contains("{retired}"), "{text}");
            assert!(text.contains("\"app\".\"cp\""), "{text}");
        }
        assert!(
            requests
                .create_table
                .contains("CREATE INDEX IF NOT EXISTS \"cp_byowner\" ON \"app\".\"cp_leases\""),
            "{}",
            requests.create_table
        );
        assert_eq!(requests.by_owner, "\"app\".\"cp_byowner\"");
        for text in [
            &requests.create_table,
            &requests.upgrade_leases,
            &requests.purge,
            &requests.acquire,
            &requests.renew,
            &requests.release,
            &requests.leave,
            &requests.leases,
            &requests.request_handover,
        ] {
            assert!(!text.contains('{'), "{text}");
            assert!(text.contains("\"app\".\"cp_leases\""), "{text}");
        }
        for text in [
            &requests.create_table,
            &requests.parked.park,
            &requests.parked.list,
            &requests.parked.retry,
            &requests.parked.unpark,
        ] {
            assert!(!text.contains('{'), "{text}");
            assert!(text.contains("\"app\".\"cp_parked\""), "{text}");
        }
        // Every statement that can start a heartbeat or grant a lease checks the tombstone.
        for text in [&requests.acquire, &requests.renew] {
            assert!(text.contains("\"app\".\"cp_retired\""), "{text}");
            assert!(text.contains("\"app\".\"cp_owners\""), "{text}");
        }
        // Every statement that can create a checkpoint checks the tombstone table.
        assert!(!requests.retired.contains('{'), "{}", requests.retired);
        for text in [
            &requests.retired,
            &requests.save,
            &requests.save_all,
            &requests.claim,
            &requests.start_at,
        ] {
            assert!(text.contains("\"app\".\"cp_retired\""), "{text}");
        }
        assert_eq!(
            requests.create_schema.as_deref(),
            Some("CREATE SCHEMA IF NOT EXISTS \"app\"")
        );
        assert_eq!(
            Requests::for_table(&TableName::parse("cp").unwrap()).create_schema,
            None
        );
    }

    #[test]
    fn the_readme_shows_the_table_migrate_creates() {
        let requests = Requests::for_table(&TableName::default_table());
        let readme = include_str!("../../README.md");
        assert!(
            readme.contains(&format!(
                "```sql\n{}\n```",
                requests.create_table.trim_end()
            )),
            "README.md's schema differs from sql/schema.sql"
        );
    }
}
