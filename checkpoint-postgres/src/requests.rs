//! The SQL of every operation, built once per store for its table.
//!
//! The statements live in `sql/*.sql` with a `{table}` placeholder. It is replaced by the
//! table name once, when the store is configured, after [`TableName`] has validated and quoted
//! it; every value a call passes is a bind parameter. That is why wrapping the result in
//! [`sqlx::AssertSqlSafe`] is sound.

use std::sync::Arc;

use sqlx::AssertSqlSafe;

use crate::table::TableName;

/// The DDL of the table, with the `{table}` placeholder.
pub(crate) const SCHEMA_TEMPLATE: &str = include_str!("../sql/schema.sql");

/// Serialises concurrent migrations of one table (see `sql/migrate_lock.sql`).
pub(crate) const MIGRATE_LOCK: &str = include_str!("../sql/migrate_lock.sql");

/// One SQL text per operation, for one table.
#[derive(Debug)]
pub(crate) struct Statements {
    pub(crate) create_table: Arc<str>,
    pub(crate) create_schema: Option<Arc<str>>,
    pub(crate) save: Arc<str>,
    pub(crate) save_all: Arc<str>,
    pub(crate) load: Arc<str>,
    pub(crate) list: Arc<str>,
    pub(crate) claim: Arc<str>,
    pub(crate) advance: Arc<str>,
}

impl Statements {
    pub(crate) fn new(table: &TableName) -> Self {
        let quoted = table.quoted();
        let render = |template: &str| -> Arc<str> { template.replace("{table}", &quoted).into() };
        Self {
            create_table: render(SCHEMA_TEMPLATE),
            create_schema: table
                .schema()
                .map(|schema| format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\"").into()),
            save: render(include_str!("../sql/save.sql")),
            save_all: render(include_str!("../sql/save_all.sql")),
            load: render(include_str!("../sql/load.sql")),
            list: render(include_str!("../sql/list.sql")),
            claim: render(include_str!("../sql/claim.sql")),
            advance: render(include_str!("../sql/advance.sql")),
        }
    }
}

/// A statement ready for [`sqlx::query`]: the text was built only from a validated, quoted
/// table name and constant SQL (see the module doc).
pub(crate) fn sql(statement: &Arc<str>) -> AssertSqlSafe<Arc<str>> {
    AssertSqlSafe(Arc::clone(statement))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_placeholder_is_replaced() {
        let statements = Statements::new(&TableName::parse("app.cp").unwrap());
        for text in [
            &statements.create_table,
            &statements.save,
            &statements.save_all,
            &statements.load,
            &statements.list,
            &statements.claim,
            &statements.advance,
        ] {
            assert!(!text.contains("{table}"), "{text}");
            assert!(text.contains("\"app\".\"cp\""), "{text}");
        }
        assert_eq!(
            statements.create_schema.as_deref(),
            Some("CREATE SCHEMA IF NOT EXISTS \"app\"")
        );
    }
}
