//! Writing entries: [`PostgresSource::append`] in a transaction of its own, and
//! [`PostgresSource::append_in`] in the caller's.

use checkpoint_core::source::{Source, SourceError};
use sqlx::PgConnection;

use crate::PostgresSource;
use crate::error::{backend, within, write_error};
use crate::position;
use crate::statements::sql;

impl PostgresSource {
    /// Appends one entry to `partition` in a transaction of its own and returns its position,
    /// readable once every transaction that began writing before it has ended.
    ///
    /// # Errors
    ///
    /// [`SourceError::PartitionOutOfRange`] before any I/O; [`SourceError::Setup`] when the
    /// table is not set up, or when the entry would be the transaction's 2^20 + 1st in the
    /// partition (refused by the table's limit trigger, or by the source without it: see the
    /// crate doc's limits); [`SourceError::Backend`] or [`SourceError::Timeout`] when the
    /// insert failed or may not have committed (then it may have been appended: a retry can
    /// append it twice).
    pub async fn append(
        &self,
        partition: u32,
        key: Option<&str>,
        payload: &[u8],
    ) -> Result<u64, SourceError> {
        SourceError::check_partition(partition, self.partitions())?;
        self.ready().await?;
        let request = async {
            let mut connection = self
                .pool()
                .acquire()
                .await
                .map_err(|error| backend("append", error))?;
            insert(self, &mut connection, partition, key, payload).await
        };
        within("append", self.timeout(), request).await
    }

    /// Appends one entry to `partition` in the caller's transaction (`&mut transaction` of a
    /// `sqlx::Transaction<'_, Postgres>` coerces to the connection), with the caller's own
    /// writes, and returns the position it will have if that transaction commits. Readers see
    /// it only after the commit, and after every transaction that began writing before it has
    /// ended; a rollback removes it without a trace.
    ///
    /// Keep such transactions short: while one is open, no entry of any later transaction
    /// can be read (in any partition); a long transaction delays readers, it never makes them
    /// skip.
    ///
    /// # Errors
    ///
    /// As [`append`](Self::append); an error leaves the caller's transaction failed, so roll
    /// it back.
    pub async fn append_in(
        &self,
        connection: &mut PgConnection,
        partition: u32,
        key: Option<&str>,
        payload: &[u8],
    ) -> Result<u64, SourceError> {
        SourceError::check_partition(partition, self.partitions())?;
        self.ready().await?;
        within(
            "append",
            self.timeout(),
            insert(self, connection, partition, key, payload),
        )
        .await
    }
}

async fn insert(
    source: &PostgresSource,
    connection: &mut PgConnection,
    partition: u32,
    key: Option<&str>,
    payload: &[u8],
) -> Result<u64, SourceError> {
    let (tx, index): (i64, i64) = sqlx::query_as(sql(&source.statements().append))
        .bind(i64::from(partition))
        .bind(key)
        .bind(payload)
        .fetch_one(connection)
        .await
        .map_err(|error| write_error("append", error))?;
    position::encode(
        u64::try_from(tx).unwrap_or(u64::MAX),
        u64::try_from(index).unwrap_or(u64::MAX),
    )
}
