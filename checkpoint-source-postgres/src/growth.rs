//! Partitions that grow: the count in `{table}_source`, raised by a writer or an operator
//! ([`PostgresSource::grow_to`]) and found by readers
//! ([`discover_partitions`](checkpoint_core::source::Source::discover_partitions)).

use checkpoint_core::source::SourceError;
use sqlx::AssertSqlSafe;

use crate::PostgresSource;
use crate::error::{backend, setup, within};
use crate::layout::META_SUFFIX;
use crate::schema::{stored_partitions, verify_transaction_ids};

impl PostgresSource {
    /// Grows the log to `partitions` partitions, if it has fewer: raises the count stored in
    /// `{table}_source` (`UPDATE ... SET partitions = $1 WHERE partitions < $1`, one statement,
    /// so concurrent growths never lower it) and returns the count stored now. An entry belongs
    /// to the partition number it was written with, whatever the count, so existing partitions
    /// keep every entry at its position; a new partition is read from its start (rows a writer
    /// inserted with that number before are its first entries). This source and its clones
    /// know the new count at once; other readers and writers at their next
    /// [`discover_partitions`](checkpoint_core::source::Source::discover_partitions) (a
    /// subscription asks every discovery interval; an append to a partition beyond the count
    /// a source knows is refused before any I/O, so a writer of another process looks the
    /// count up first). A count at or below the stored one changes nothing.
    ///
    /// A writer that computes the partition as `hash(stream) mod count` sends a stream's later
    /// entries to another partition once the count grew: no entry moves, but the order of one
    /// stream across the two partitions is the writer's concern (keep the old count for old
    /// streams, or move to a new table, if that order matters).
    ///
    /// # Errors
    ///
    /// [`SourceError::Setup`] when the table is not set up; [`SourceError::Backend`] or
    /// [`SourceError::Timeout`] when the server fails.
    pub async fn grow_to(&self, partitions: u32) -> Result<u32, SourceError> {
        self.verify().await?;
        let statement = AssertSqlSafe(format!(
            "UPDATE {} SET partitions = $1 WHERE partitions < $1",
            self.layout().beside(META_SUFFIX)
        ));
        let request = async {
            sqlx::query(statement)
                .bind(i32::try_from(partitions).unwrap_or(i32::MAX))
                .execute(self.pool())
                .await
                .map_err(|error| backend("grow", error))?;
            stored_partitions(self.pool(), self.layout(), partitions, "grow").await
        };
        let stored = within("grow", self.timeout(), request).await?;
        self.raise_count(stored);
        Ok(stored)
    }

    /// What `discover_partitions` does: reads the stored count, refuses one below the count
    /// known, checks the transaction ids of a grown log's partitions as the setup check does,
    /// and raises the count known.
    pub(crate) async fn refresh_partitions(&self) -> Result<u32, SourceError> {
        self.verify().await?;
        let known = self.count();
        let request = async {
            let stored = stored_partitions(self.pool(), self.layout(), known, "discover").await?;
            if stored > known {
                verify_transaction_ids(self.pool(), self.layout(), stored).await?;
            }
            Ok(stored)
        };
        let stored = within("discover", self.timeout(), request).await?;
        if stored < known {
            let meta = self.layout().beside(META_SUFFIX);
            return Err(setup(format!(
                "{meta} now holds {stored} partitions, after {known}: a partition count never \
                 decreases (partitions {stored}..{known} may hold entries); set it back (UPDATE \
                 {meta} SET partitions = {known})"
            )));
        }
        self.raise_count(stored);
        Ok(stored)
    }
}
