//! The heads of [`PostgresSource`]: one partition's (`Source::head`) and many partitions' in
//! one statement (`Source::heads`), with what they share.

use checkpoint_core::source::SourceError;

use crate::error::{backend, within};
use crate::position;
use crate::schema;
use crate::source::{PostgresSource, as_u64};
use crate::statements::sql;

impl PostgresSource {
    /// [`Source::head`](checkpoint_core::source::Source::head).
    pub(crate) async fn read_head(&self, partition: u32) -> Result<Option<u64>, SourceError> {
        SourceError::check_partition(partition, self.count())?;
        self.ready().await?;
        let request = async {
            let row: Option<(i64, i64)> = sqlx::query_as(sql(&self.statements().head))
                .persistent(false)
                .bind(i64::from(partition))
                .fetch_optional(self.pool())
                .await
                .map_err(|error| backend("head", error))?;
            match row {
                Some((tx, count)) => self.head_at(partition, Some(tx), count),
                None => Ok(None),
            }
        };
        within("head", self.timeout(), request).await
    }

    /// [`Source::heads`](checkpoint_core::source::Source::heads): see there.
    pub(crate) async fn read_heads(
        &self,
        partitions: &[u32],
    ) -> Result<Vec<Option<u64>>, SourceError> {
        if partitions.is_empty() {
            return Ok(Vec::new());
        }
        self.ready().await?;
        let count = self.count();
        let asked: Vec<i64> = partitions
            .iter()
            .filter(|&&partition| partition < count)
            .map(|&partition| i64::from(partition))
            .collect();
        if asked.is_empty() {
            return Ok(vec![None; partitions.len()]);
        }
        let request = async {
            // Prepared (unlike `head`'s): its generic plan is the same index seeks as a custom
            // one (see `Statements::heads`), and preparing once saves a round trip per call.
            let rows: Vec<(i64, Option<i64>, i64)> = sqlx::query_as(sql(&self.statements().heads))
                .bind(&asked)
                .fetch_all(self.pool())
                .await
                .map_err(|error| backend("head", error))?;
            if rows.len() != asked.len() {
                return Err(backend_protocol(rows.len(), asked.len()));
            }
            let mut found = rows.into_iter();
            let mut heads = Vec::with_capacity(partitions.len());
            for &partition in partitions {
                // The rows answer the partitions below the count, in the order asked.
                let row = if partition < count {
                    found.next()
                } else {
                    None
                };
                heads.push(match row {
                    Some((_, tx, total)) => self.head_at(partition, tx, total)?,
                    None => None,
                });
            }
            Ok(heads)
        };
        within("head", self.timeout(), request).await
    }

    /// The head of `partition` from its last readable transaction `tx` (none: no entry) and
    /// the entries that transaction wrote there, as [`Source::head`](checkpoint_core::source::Source::head) and [`Source::heads`](checkpoint_core::source::Source::heads)
    /// read them.
    fn head_at(
        &self,
        partition: u32,
        tx: Option<i64>,
        count: i64,
    ) -> Result<Option<u64>, SourceError> {
        match tx {
            Some(tx) if as_u64(count) > position::MAX_ENTRIES_PER_TRANSACTION => Err(
                schema::too_many_entries(self.layout(), partition, as_u64(tx)),
            ),
            Some(tx) if count > 0 => position::encode(as_u64(tx), as_u64(count - 1)).map(Some),
            _ => Ok(None),
        }
    }
}

/// The heads statement answered another number of rows than partitions asked: it answers one
/// row per element of its array, so this is a server or a driver that is not what it claims.
fn backend_protocol(rows: usize, asked: usize) -> SourceError {
    SourceError::Backend {
        backend: crate::BACKEND,
        operation: "head",
        retryable: false,
        source: format!("{rows} rows for the heads of {asked} partitions").into(),
    }
}
