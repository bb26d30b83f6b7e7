//! Every request the store sends, loaded once per store for its table, and how each is sent
//! and its reply read.
//!
//! The text lives in `sql/*.sql` with a `{table}` placeholder (`{schema}` in
//! `create_schema.sql`). It is replaced by the quoted name once, when the store is configured,
//! after [`TableName`] has validated it; every value a call passes is a bind parameter. That is
//! why wrapping the text in [`sqlx::AssertSqlSafe`] is sound.
//!
//! Each function below sends one statement on a connection, the pool's or the caller's, and
//! reads its reply. The store validates the input before and applies its timeout around it.

use std::sync::Arc;

use checkpoint_core::batch::highest_per_key;
use checkpoint_core::{Checkpoint, Error, Fingerprint, Operation};
use sqlx::AssertSqlSafe;
use sqlx::postgres::PgConnection;

use crate::error::backend;
use crate::layout::{
    TableName, fingerprint_from_db, partition_from_db, position_from_db, position_to_db,
};

/// Serialises concurrent migrations of one table (see the file's header).
pub(crate) const MIGRATE_LOCK: &str = include_str!("../sql/migrate_lock.sql");

/// Whether the table exists, before the migration creates anything.
pub(crate) const TABLE_EXISTS: &str = include_str!("../sql/table_exists.sql");

/// Whether the table's schema exists, before the migration creates it.
pub(crate) const SCHEMA_EXISTS: &str = include_str!("../sql/schema_exists.sql");

/// The first statement of retire's transaction: bounds the wait for its table lock.
pub(crate) const RETIRE_LOCK_TIMEOUT: &str = include_str!("../sql/retire_lock_timeout.sql");

/// The first statement of start_at's transaction: concurrent start_ats of one name take turns.
pub(crate) const START_AT_LOCK: &str = include_str!("../sql/start_at_lock.sql");

/// One SQL text per request, for one table.
#[derive(Debug)]
pub(crate) struct Requests {
    /// `sql/schema.sql` (the checkpoint table and its tombstone table), also what
    /// [`schema_sql`](crate::PostgresCheckpointStore::schema_sql) prints.
    pub(crate) create_table: Arc<str>,
    /// `sql/create_schema.sql`, for a schema-qualified table name only.
    pub(crate) create_schema: Option<Arc<str>>,
    save: Arc<str>,
    save_all: Arc<str>,
    load: Arc<str>,
    list: Arc<str>,
    claim: Arc<str>,
    advance: Arc<str>,
    pub(crate) groups: Arc<str>,
    pub(crate) start_at: Arc<str>,
    pub(crate) retire_lock: Arc<str>,
    pub(crate) retire: Arc<str>,
    pub(crate) retired: Arc<str>,
    pub(crate) purge: Arc<str>,
}

impl Requests {
    pub(crate) fn for_table(table: &TableName) -> Self {
        let quoted = table.quoted();
        let retired = table.retired_quoted();
        let render = |template: &str| -> Arc<str> {
            template
                .replace("{table}", &quoted)
                .replace("{retired}", &retired)
                .into()
        };
        Self {
            create_table: render(include_str!("../sql/schema.sql")),
            create_schema: table.schema().map(|schema| {
                include_str!("../sql/create_schema.sql")
                    .trim_end()
                    .replace("{schema}", &format!("\"{schema}\""))
                    .into()
            }),
            save: render(include_str!("../sql/save.sql")),
            save_all: render(include_str!("../sql/save_all.sql")),
            load: render(include_str!("../sql/load.sql")),
            list: render(include_str!("../sql/list.sql")),
            claim: render(include_str!("../sql/claim.sql")),
            advance: render(include_str!("../sql/advance.sql")),
            groups: render(include_str!("../sql/groups.sql")),
            start_at: render(include_str!("../sql/start_at.sql")),
            retire_lock: render(include_str!("../sql/retire_lock.sql")),
            retire: render(include_str!("../sql/retire.sql")),
            retired: render(include_str!("../sql/retired.sql")),
            purge: render(include_str!("../sql/purge.sql")),
        }
    }

    pub(crate) async fn load(
        &self,
        connection: &mut PgConnection,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> Result<Option<u64>, Error> {
        let stored: Option<i64> = sqlx::query_scalar(sql(&self.load))
            .bind(group)
            .bind(subscription)
            .bind(i64::from(partition))
            .fetch_optional(connection)
            .await
            .map_err(|error| backend(Operation::Load, error))?;
        stored
            .map(|position| position_from_db(Operation::Load, position))
            .transpose()
    }

    /// Records the span field `count` of the calling operation.
    pub(crate) async fn list(
        &self,
        connection: &mut PgConnection,
        group: &str,
    ) -> Result<Vec<Checkpoint>, Error> {
        let rows: Vec<(String, i64, i64)> = sqlx::query_as(sql(&self.list))
            .bind(group)
            .fetch_all(connection)
            .await
            .map_err(|error| backend(Operation::List, error))?;
        tracing::Span::current().record("count", rows.len());
        rows.into_iter()
            .map(|(subscription, partition, position)| {
                Ok(Checkpoint::new(
                    subscription,
                    partition_from_db(Operation::List, partition)?,
                    position_from_db(Operation::List, position)?,
                ))
            })
            .collect()
    }

    pub(crate) async fn save(
        &self,
        connection: &mut PgConnection,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<(), Error> {
        sqlx::query(sql(&self.save))
            .bind(group)
            .bind(subscription)
            .bind(i64::from(partition))
            .bind(position_to_db(position))
            .execute(connection)
            .await
            .map_err(|error| backend(Operation::Save, error))?;
        Ok(())
    }

    /// A non-empty batch as one statement over three arrays. Records the span field
    /// `distinct_keys` of the calling operation.
    pub(crate) async fn save_all(
        &self,
        connection: &mut PgConnection,
        group: &str,
        checkpoints: &[Checkpoint],
    ) -> Result<(), Error> {
        // One entry per key (ON CONFLICT may not touch a row twice in one statement), sorted
        // by key (every batch locks its rows in the same order, so batches cannot deadlock).
        let batch = highest_per_key(checkpoints);
        tracing::Span::current().record("distinct_keys", batch.len());
        let mut subscriptions = Vec::with_capacity(batch.len());
        let mut partitions = Vec::with_capacity(batch.len());
        let mut positions = Vec::with_capacity(batch.len());
        for checkpoint in batch {
            subscriptions.push(checkpoint.subscription);
            partitions.push(i64::from(checkpoint.partition));
            positions.push(position_to_db(checkpoint.position));
        }
        sqlx::query(sql(&self.save_all))
            .bind(group)
            .bind(subscriptions)
            .bind(partitions)
            .bind(positions)
            .execute(connection)
            .await
            .map_err(|error| backend(Operation::SaveAll, error))?;
        Ok(())
    }

    /// A retired subscription makes the statement return no row: [`Error::Retired`].
    pub(crate) async fn claim(
        &self,
        connection: &mut PgConnection,
        group: &str,
        subscription: &str,
        partition: u32,
        fingerprint: Fingerprint,
        initial_position: u64,
    ) -> Result<u64, Error> {
        let claimed: Option<(i64, Option<Vec<u8>>)> = sqlx::query_as(sql(&self.claim))
            .bind(group)
            .bind(subscription)
            .bind(i64::from(partition))
            .bind(position_to_db(initial_position))
            .bind(fingerprint.as_bytes().as_slice())
            .fetch_optional(connection)
            .await
            .map_err(|error| backend(Operation::Claim, error))?;
        let Some((position, stored)) = claimed else {
            return Err(Error::retired(group, subscription));
        };
        let stored = fingerprint_from_db(Operation::Claim, stored)?;
        if stored != fingerprint {
            return Err(Error::QueryChanged {
                stored,
                requested: fingerprint,
            });
        }
        position_from_db(Operation::Claim, position)
    }

    pub(crate) async fn advance(
        &self,
        connection: &mut PgConnection,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
    ) -> Result<(), Error> {
        let (advanced, current): (i64, Option<i64>) = sqlx::query_as(sql(&self.advance))
            .bind(group)
            .bind(subscription)
            .bind(i64::from(partition))
            .bind(position_to_db(from))
            .bind(position_to_db(to))
            .fetch_one(connection)
            .await
            .map_err(|error| backend(Operation::Advance, error))?;
        if advanced == 1 {
            return Ok(());
        }
        Err(Error::Moved {
            expected: from,
            current: current
                .map(|position| position_from_db(Operation::Advance, position))
                .transpose()?,
        })
    }
}

/// A request ready for [`sqlx::query`]: the text was built only from a validated, quoted
/// table name and constant SQL (see the module doc).
pub(crate) fn sql(request: &Arc<str>) -> AssertSqlSafe<Arc<str>> {
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
        let readme = include_str!("../README.md");
        assert!(
            readme.contains(&format!(
                "```sql\n{}\n```",
                requests.create_table.trim_end()
            )),
            "README.md's schema differs from sql/schema.sql"
        );
    }
}
