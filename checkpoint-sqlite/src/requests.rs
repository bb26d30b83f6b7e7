//! Every request the store sends, loaded once per store for its table, and how each is sent
//! and its reply read.
//!
//! The statements live in `sql/*.sql` beside the crate with a `{table}` placeholder. The table
//! name is the only text ever spliced into them, and only after [`TableName::parse`] has
//! checked that it is a plain identifier; every value goes in as a bind parameter.
//!
//! Each function below runs on a connection, the pool's or the caller's, and reads the reply.
//! The store validates the input before and applies its timeout around it.

use std::sync::Arc;

use checkpoint_core::batch::highest_per_key;
use checkpoint_core::{Checkpoint, Error, Fingerprint, Operation};
use sqlx::AssertSqlSafe;
use sqlx::sqlite::SqliteConnection;

use crate::error::backend;
use crate::layout::{
    TableName, fingerprint_from_db, partition_from_db, position_from_db, position_to_db,
};

/// An advance retries its compare-and-set at most this many times, and only when the
/// checkpoint reached `from` between its update and its read (see [`Requests::advance`]).
const ADVANCE_ATTEMPTS: usize = 3;

/// Every statement of the store, for one table.
#[derive(Debug)]
pub(crate) struct Requests {
    /// `sql/schema.sql` (the checkpoint table and its tombstone table), which
    /// [`migrate`](crate::SqliteCheckpointStore::migrate) runs.
    pub(crate) create_table: Arc<str>,
    list: Arc<str>,
    load: Arc<str>,
    save: Arc<str>,
    save_all: Arc<str>,
    claim: Arc<str>,
    advance: Arc<str>,
    pub(crate) groups: Arc<str>,
    pub(crate) retired: Arc<str>,
    pub(crate) presence: Arc<str>,
    pub(crate) start_at: Arc<str>,
    pub(crate) retire_tombstone: Arc<str>,
    pub(crate) delete_subscription: Arc<str>,
    pub(crate) purge_tombstone: Arc<str>,
}

impl Requests {
    pub(crate) fn for_table(table: &TableName) -> Self {
        let quoted = table.quoted();
        let retired = table.retired_quoted();
        let build = |template: &str| -> Arc<str> {
            template
                .replace("{table}", &quoted)
                .replace("{retired}", &retired)
                .into()
        };
        Self {
            create_table: build(include_str!("../sql/schema.sql")),
            list: build(include_str!("../sql/list.sql")),
            load: build(include_str!("../sql/load.sql")),
            save: build(include_str!("../sql/save.sql")),
            save_all: build(include_str!("../sql/save_all.sql")),
            claim: build(include_str!("../sql/claim.sql")),
            advance: build(include_str!("../sql/advance.sql")),
            groups: build(include_str!("../sql/groups.sql")),
            retired: build(include_str!("../sql/retired.sql")),
            presence: build(include_str!("../sql/presence.sql")),
            start_at: build(include_str!("../sql/start_at.sql")),
            retire_tombstone: build(include_str!("../sql/retire_tombstone.sql")),
            delete_subscription: build(include_str!("../sql/delete_subscription.sql")),
            purge_tombstone: build(include_str!("../sql/purge_tombstone.sql")),
        }
    }

    pub(crate) async fn list(
        &self,
        connection: &mut SqliteConnection,
        group: &str,
    ) -> Result<Vec<Checkpoint>, Error> {
        let rows: Vec<(String, i64, i64)> = sqlx::query_as(sql(&self.list))
            .bind(group)
            .fetch_all(connection)
            .await
            .map_err(|error| backend(Operation::List, error))?;
        rows.into_iter()
            .map(|(subscription, partition, position)| {
                let partition = partition_from_db(Operation::List, partition)?;
                let position = position_from_db(Operation::List, position)?;
                Ok(Checkpoint::new(subscription, partition, position))
            })
            .collect()
    }

    /// `operation` is [`Operation::Load`], or [`Operation::Advance`] for the read that follows
    /// a failed compare-and-set.
    pub(crate) async fn load(
        &self,
        connection: &mut SqliteConnection,
        operation: Operation,
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
            .map_err(|error| backend(operation, error))?;
        stored
            .map(|position| position_from_db(operation, position))
            .transpose()
    }

    pub(crate) async fn save(
        &self,
        connection: &mut SqliteConnection,
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

    /// A non-empty batch as one statement over one JSON parameter.
    pub(crate) async fn save_all(
        &self,
        connection: &mut SqliteConnection,
        group: &str,
        checkpoints: &[Checkpoint],
    ) -> Result<(), Error> {
        // Repeated keys are collapsed to their highest position first, which is what saving
        // them one by one would leave. SQLite's upsert would also accept a row twice in one
        // statement (PostgreSQL's refuses), but collapsing writes each row once and keeps the
        // parameter small.
        let batch = batch_json(&highest_per_key(checkpoints));
        sqlx::query(sql(&self.save_all))
            .bind(group)
            .bind(batch)
            .execute(connection)
            .await
            .map_err(|error| backend(Operation::SaveAll, error))?;
        Ok(())
    }

    /// A retired subscription makes the statement return no row: [`Error::Retired`].
    pub(crate) async fn claim(
        &self,
        connection: &mut SqliteConnection,
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
        let position = position_from_db(Operation::Claim, position)?;
        let stored = fingerprint_from_db(Operation::Claim, stored)?;
        if stored != fingerprint {
            return Err(Error::QueryChanged {
                stored,
                requested: fingerprint,
            });
        }
        Ok(position)
    }

    /// The compare-and-set is one `UPDATE`. Only when it changes nothing does a second
    /// statement, on the same connection, read where the checkpoint is, for [`Error::Moved`].
    pub(crate) async fn advance(
        &self,
        connection: &mut SqliteConnection,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
    ) -> Result<(), Error> {
        let mut current = None;
        for _ in 0..ADVANCE_ATTEMPTS {
            let changed = sqlx::query(sql(&self.advance))
                .bind(group)
                .bind(subscription)
                .bind(i64::from(partition))
                .bind(position_to_db(from))
                .bind(position_to_db(to))
                .execute(&mut *connection)
                .await
                .map_err(|error| backend(Operation::Advance, error))?
                .rows_affected();
            if changed > 0 {
                return Ok(());
            }
            // SQLite's RETURNING sees only the new row, so the failed compare-and-set cannot
            // also say where the checkpoint is: a second statement reads it. On an embedded
            // database that costs no network round trip.
            current = self
                .load(
                    &mut *connection,
                    Operation::Advance,
                    group,
                    subscription,
                    partition,
                )
                .await?;
            if current != Some(from) {
                return Err(Error::Moved {
                    expected: from,
                    current,
                });
            }
            // Another writer moved the checkpoint up to `from` between the two statements
            // (positions only move forward, so this happens at most once): the
            // compare-and-set may succeed now.
        }
        Err(Error::Moved {
            expected: from,
            current,
        })
    }
}

/// A statement ready for `sqlx::query`.
///
/// Sound because the only dynamic part of every statement is a [`TableName`], checked by
/// [`TableName::parse`]; the `Arc` is shared, not copied, on each call.
pub(crate) fn sql(statement: &Arc<str>) -> AssertSqlSafe<Arc<str>> {
    AssertSqlSafe(Arc::clone(statement))
}

/// `start_at`'s positions as one JSON array of `[partition, position]` pairs, the parameter
/// its statement expands with `json_each`.
pub(crate) fn positions_json(positions: &[(u32, u64)]) -> String {
    let pairs: Vec<String> = positions
        .iter()
        .map(|(partition, position)| format!("[{partition},{position}]"))
        .collect();
    format!("[{}]", pairs.join(","))
}

/// The batch as one JSON array of `[subscription, partition, position]` triples, the single
/// parameter the `save_all` statement expands with `json_each`.
fn batch_json(checkpoints: &[Checkpoint]) -> String {
    let mut json = String::with_capacity(2 + checkpoints.len() * 48);
    json.push('[');
    for (index, checkpoint) in checkpoints.iter().enumerate() {
        if index > 0 {
            json.push(',');
        }
        json.push('[');
        push_json_string(&mut json, &checkpoint.subscription);
        json.push(',');
        json.push_str(&checkpoint.partition.to_string());
        json.push(',');
        json.push_str(&checkpoint.position.to_string());
        json.push(']');
    }
    json.push(']');
    json
}

/// Appends `text` as a JSON string: quotes, backslashes and control characters escaped,
/// everything else (any Unicode) as it is, which JSON allows and SQLite decodes back exactly.
fn push_json_string(json: &mut String, text: &str) {
    json.push('"');
    for character in text.chars() {
        match character {
            '"' => json.push_str("\\\""),
            '\\' => json.push_str("\\\\"),
            control if u32::from(control) < 0x20 => {
                json.push_str(&format!("\\u{:04x}", u32::from(control)));
            }
            other => json.push(other),
        }
    }
    json.push('"');
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
            &requests.groups,
            &requests.presence,
            &requests.start_at,
            &requests.delete_subscription,
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
            &requests.retired,
            &requests.retire_tombstone,
            &requests.purge_tombstone,
        ] {
            assert!(statement.contains("\"my_table_retired\""), "{statement}");
        }
    }

    #[test]
    fn batch_json_escapes_what_json_requires() {
        let batch = [
            Checkpoint::new("plain", 0, 1),
            Checkpoint::new(
                "quote\" back\\slash\n\u{1}tab\t😀",
                u32::MAX,
                i64::MAX as u64,
            ),
        ];
        assert_eq!(
            batch_json(&batch),
            "[[\"plain\",0,1],[\"quote\\\" back\\\\slash\\u000a\\u0001tab\\u0009😀\",4294967295,9223372036854775807]]"
        );
        assert_eq!(batch_json(&[]), "[]");
        assert_eq!(
            positions_json(&[(0, 1), (u32::MAX, i64::MAX as u64)]),
            "[[0,1],[4294967295,9223372036854775807]]"
        );
    }

    #[test]
    fn the_readme_shows_the_table_migrate_creates() {
        let requests = Requests::for_table(&TableName::default_table());
        let ddl: Vec<&str> = requests
            .create_table
            .lines()
            .filter(|line| !line.starts_with("--"))
            .collect();
        let readme = include_str!("../README.md");
        assert!(
            readme.contains(&format!("```sql\n{}\n```", ddl.join("\n"))),
            "README.md's schema differs from sql/schema.sql"
        );
    }
}
