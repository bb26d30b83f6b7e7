//! Partitions that grow: the count in the meta table, raised by a writer or an operator
//! ([`SqliteSource::grow_to`]) and found by readers
//! ([`discover_partitions`](checkpoint_core::source::Source::discover_partitions)).

use checkpoint_core::source::SourceError;

use crate::SqliteSource;
use crate::error::{backend, count_went_down, missing_table};
use crate::table::sql;

impl SqliteSource {
    /// Grows the log to `partitions` partitions, if it has fewer: raises the count stored in
    /// the meta table (one `UPDATE` in a `BEGIN IMMEDIATE` transaction) and returns the count
    /// now stored. Existing partitions keep every entry at its position (an entry belongs to
    /// the partition number it was appended to, whatever the count); a new partition starts
    /// empty, its positions from 1. Readers in other processes find the new count at their
    /// next [`discover_partitions`](checkpoint_core::source::Source::discover_partitions) (a
    /// subscription asks every discovery interval; a writer must too before appending to a
    /// new partition, which is refused before any I/O until then); this source and its
    /// clones know it at once. A count at or below the stored one changes nothing: a count never decreases.
    ///
    /// A writer that routes keys to partitions by `hash(key) mod count` sends a key's later
    /// entries to another partition once the count grew: each entry stays where it is, but
    /// the order of one key across the two partitions is the writer's concern.
    ///
    /// # Errors
    ///
    /// [`SourceError::Setup`] when the table was never migrated; [`SourceError::Backend`]
    /// when SQLite fails.
    pub async fn grow_to(&self, partitions: u32) -> Result<u32, SourceError> {
        let table = self.table();
        let mut tx = self
            .pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(|e| backend("grow", table, e))?;
        let stored: Option<i64> = sqlx::query_scalar(sql(&self.statements.partitions))
            .fetch_optional(&mut *tx)
            .await
            .map_err(|e| backend("grow", table, e))?;
        let stored = read_count(table, stored)?;
        if stored < partitions {
            sqlx::query(sql(&self.statements.grow_partitions))
                .bind(i64::from(partitions))
                .execute(&mut *tx)
                .await
                .map_err(|e| backend("grow", table, e))?;
        }
        tx.commit().await.map_err(|e| backend("grow", table, e))?;
        let now = stored.max(partitions);
        self.raise_count(now);
        Ok(now)
    }

    /// Reads the stored count, refuses one below the count known, and raises the count
    /// known to it: what `discover_partitions` does.
    pub(crate) async fn refresh_partitions(&self) -> Result<u32, SourceError> {
        let stored = self.stored_partitions("discover").await?;
        let known = self.count();
        if stored < known {
            return Err(count_went_down(self.table(), stored, known));
        }
        self.raise_count(stored);
        Ok(stored)
    }

    /// The count the meta table holds.
    pub(crate) async fn stored_partitions(
        &self,
        operation: &'static str,
    ) -> Result<u32, SourceError> {
        let table = self.table();
        let stored: Option<i64> = sqlx::query_scalar(sql(&self.statements.partitions))
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| backend(operation, table, e))?;
        read_count(table, stored)
    }
}

/// The stored count as a partition count: a missing row is a table never migrated, a value
/// out of `1..=u32::MAX` one written by hand.
fn read_count(table: &str, stored: Option<i64>) -> Result<u32, SourceError> {
    let stored = stored.ok_or_else(|| missing_table(table))?;
    u32::try_from(stored)
        .ok()
        .filter(|count| *count > 0)
        .ok_or_else(|| SourceError::Setup {
            backend: crate::BACKEND,
            message: format!(
                "the meta table of \"{table}\" holds {stored} as the partition count, which is \
                 not a count of 1 to {}: write the count the log was made with there",
                u32::MAX
            ),
        })
}
