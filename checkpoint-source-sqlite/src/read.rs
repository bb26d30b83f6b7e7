//! The [`Source`] implementation: reads, the head, and `wait` (in-process wake-ups, and
//! polling `PRAGMA data_version` for other processes' commits).

use std::time::{Duration, UNIX_EPOCH};

use async_trait::async_trait;
use checkpoint_core::source::{Entry, Page, Source, SourceError};
use sqlx::{ConnectOptions, Sqlite};

use crate::SqliteSource;
use crate::error::backend;
use crate::table::sql;

/// One row of the event table: position, key, payload, appended_at.
type Row = (i64, Option<String>, Vec<u8>, i64);

impl SqliteSource {
    async fn rows(
        &self,
        partition: u32,
        from: u64,
        max: usize,
        operation: &'static str,
    ) -> Result<Vec<Row>, SourceError> {
        self.ensure_setup().await?;
        // `from` ≤ i64::MAX was checked; a `max` beyond i64 cannot be reached by any table.
        sqlx::query_as::<Sqlite, Row>(sql(&self.statements.read))
            .bind(i64::from(partition))
            .bind(from as i64)
            .bind(i64::try_from(max).unwrap_or(i64::MAX))
            .fetch_all(&self.pool)
            .await
            .map_err(|e| backend(operation, self.table(), e))
    }

    /// Waits until this process appended, or the poll interval passed and `PRAGMA
    /// data_version` says another connection committed; returns early on either.
    async fn next_change(
        &self,
        changes: &mut tokio::sync::watch::Receiver<u64>,
    ) -> Result<(), SourceError> {
        loop {
            if tokio::time::timeout(self.poll_interval, changes.changed())
                .await
                .is_ok()
            {
                return Ok(());
            }
            if self.poll_data_version().await? {
                return Ok(());
            }
        }
    }

    /// Whether another connection committed since the watcher connection last looked; if so,
    /// wakes every waiter of the process. Opens the watcher connection on first use.
    async fn poll_data_version(&self) -> Result<bool, SourceError> {
        let mut watcher = self.shared.watcher.lock().await;
        let table = self.table();
        let (connection, seen) = match watcher.as_mut() {
            Some(watcher) => watcher,
            None => {
                let mut connection = self
                    .pool
                    .connect_options()
                    .connect()
                    .await
                    .map_err(|e| backend("wait", table, e))?;
                let version = data_version(&mut connection)
                    .await
                    .map_err(|e| backend("wait", table, e))?;
                *watcher = Some((connection, version));
                // Nothing known about what happened before it opened: look.
                return Ok(true);
            }
        };
        let version = match data_version(connection).await {
            Ok(version) => version,
            Err(error) => {
                // A broken connection is opened again on the next poll.
                *watcher = None;
                return Err(backend("wait", table, error));
            }
        };
        if version == *seen {
            return Ok(false);
        }
        *seen = version;
        drop(watcher);
        self.notify_appended();
        Ok(true)
    }
}

async fn data_version(connection: &mut sqlx::SqliteConnection) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar::<Sqlite, i64>("PRAGMA data_version")
        .fetch_one(connection)
        .await
}

fn entry(
    partition: u32,
    table: &str,
    (position, key, payload, appended_at): Row,
) -> Result<Entry, SourceError> {
    let position = u64::try_from(position).map_err(|_| SourceError::Setup {
        backend: crate::BACKEND,
        message: format!(
            "the event table \"{table}\" holds the negative position {position} in partition \
             {partition}: entries must be written by `append` or `append_in` only"
        ),
    })?;
    Ok(Entry {
        position,
        key,
        payload,
        appended_at: u64::try_from(appended_at)
            .ok()
            .map(|millis| UNIX_EPOCH + Duration::from_millis(millis)),
    })
}

#[async_trait]
impl Source for SqliteSource {
    fn partitions(&self) -> u32 {
        self.count()
    }

    /// One read of the meta table's count (see [`SqliteSource::grow_to`]).
    async fn discover_partitions(&self) -> Result<u32, SourceError> {
        self.refresh_partitions().await
    }

    async fn read(&self, partition: u32, from: u64, max: usize) -> Result<Page, SourceError> {
        SourceError::check_read(partition, self.count(), from, max)?;
        let entries = self
            .rows(partition, from, max, "read")
            .await?
            .into_iter()
            .map(|row| entry(partition, self.table(), row))
            .collect::<Result<Vec<_>, _>>()?;
        // Positions commit in order (see the crate doc): nothing can appear below the position
        // after the last one returned. An empty page stays at `from`.
        let next = entries.last().map_or(from, |last| last.position + 1);
        Ok(Page { entries, next })
    }

    async fn wait(&self, partition: u32, from: u64) -> Result<(), SourceError> {
        SourceError::check_partition(partition, self.count())?;
        SourceError::check_from(from)?;
        // Subscribed before looking, so an append between the look and the wait still wakes.
        let mut changes = self.shared.changes.subscribe();
        loop {
            if !self.rows(partition, from, 1, "wait").await?.is_empty() {
                return Ok(());
            }
            self.next_change(&mut changes).await?;
        }
    }

    async fn head(&self, partition: u32) -> Result<Option<u64>, SourceError> {
        SourceError::check_partition(partition, self.count())?;
        self.ensure_setup().await?;
        let head: Option<i64> = sqlx::query_scalar(sql(&self.statements.head))
            .bind(i64::from(partition))
            .fetch_one(&self.pool)
            .await
            .map_err(|e| backend("head", self.table(), e))?;
        Ok(head.and_then(|head| u64::try_from(head).ok()))
    }

    /// One statement for every partition asked that the source has, however many: each
    /// answer is exactly what [`head`](Source::head) returns, and all come from one read
    /// transaction (the statement's), so from one snapshot of the database: **atomic across
    /// partitions**. The count is checked against the stored one first, as every operation
    /// does, so partitions a growth added are asked too.
    async fn heads(&self, partitions: &[u32]) -> Result<Vec<Option<u64>>, SourceError> {
        if partitions.is_empty() {
            return Ok(Vec::new());
        }
        self.ensure_setup().await?;
        let count = self.count();
        let asked: Vec<u32> = partitions
            .iter()
            .copied()
            .filter(|&partition| partition < count)
            .collect();
        if asked.is_empty() {
            return Ok(vec![None; partitions.len()]);
        }
        // A JSON array of numbers: one bound parameter, however many partitions (SQLite
        // limits a statement's parameters, and a statement per count would not be cached).
        let list = format!(
            "[{}]",
            asked
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(",")
        );
        let found: Vec<Option<i64>> = sqlx::query_scalar(sql(&self.statements.heads))
            .bind(list)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| backend("head", self.table(), e))?;
        if found.len() != asked.len() {
            return Err(SourceError::Backend {
                backend: crate::BACKEND,
                operation: "head",
                retryable: false,
                source: format!(
                    "{} rows for the heads of {} partitions",
                    found.len(),
                    asked.len()
                )
                .into(),
            });
        }
        let mut found = found.into_iter();
        Ok(partitions
            .iter()
            .map(|&partition| {
                // The rows answer the partitions below the count, in the order asked.
                let row = if partition < count {
                    found.next()
                } else {
                    None
                };
                row.flatten().and_then(|head| u64::try_from(head).ok())
            })
            .collect())
    }
}
