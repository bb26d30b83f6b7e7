//! Reading the head of each shown partition from the log, and the partition count to open a
//! log with when it stores none.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use checkpoint_core::Checkpoint;
use checkpoint_core::source::Source;

use super::seconds;
use crate::error::CliError;

/// One more than the highest partition among `checkpoints` (0 for none): the partition count
/// of a log that does not store its own.
pub fn fallback_partitions(checkpoints: &[Checkpoint]) -> u32 {
    checkpoints
        .iter()
        .map(|checkpoint| checkpoint.partition.saturating_add(1))
        .max()
        .unwrap_or(0)
}

/// The head of each of `partitions` (each read once) in `source`, in one [`Source::heads`]
/// call within `timeout` (one request where the source batches, one per partition where it
/// does not): `None` where the partition has no entry, and for a partition the source does
/// not have (at or above its partition count), which is not asked for.
///
/// # Errors
///
/// The source's error, or no answer in time, after `context`.
pub async fn read_heads(
    source: &dyn Source,
    partitions: impl IntoIterator<Item = u32>,
    timeout: Duration,
    context: &str,
) -> Result<BTreeMap<u32, Option<u64>>, CliError> {
    // Each partition once, in order: a refresh of the fleet view names every partition of
    // every subscription, so the same one many times.
    let asked: Vec<u32> = partitions
        .into_iter()
        .collect::<BTreeSet<u32>>()
        .into_iter()
        .collect();
    if asked.is_empty() {
        return Ok(BTreeMap::new());
    }
    let heads = match tokio::time::timeout(timeout, source.heads(&asked)).await {
        Ok(Ok(heads)) => heads,
        Ok(Err(error)) => return Err(CliError::source(context, &error)),
        Err(_) => {
            return Err(CliError::failure(format!(
                "{context}: no answer within {}",
                seconds(timeout)
            )));
        }
    };
    if heads.len() != asked.len() {
        return Err(CliError::failure(format!(
            "{context}: the source answered {} heads for {} partitions",
            heads.len(),
            asked.len()
        )));
    }
    Ok(asked.into_iter().zip(heads).collect())
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::atomic::{AtomicU32, Ordering};

    use checkpoint_core::source::{InMemorySource, Page, SourceError};

    use super::*;

    type Boxed<'a, T> = Pin<Box<dyn Future<Output = Result<T, SourceError>> + Send + 'a>>;

    /// An in-memory source that counts its `head` and `heads` calls, and whose `heads` never
    /// answers when `hangs`. Written out by hand: the crate has no `async-trait` of its own.
    struct Counted {
        inner: InMemorySource,
        head_calls: AtomicU32,
        heads_calls: AtomicU32,
        hangs: bool,
    }

    impl Counted {
        fn new(inner: InMemorySource, hangs: bool) -> Self {
            Self {
                inner,
                head_calls: AtomicU32::new(0),
                heads_calls: AtomicU32::new(0),
                hangs,
            }
        }
    }

    impl Source for Counted {
        fn partitions(&self) -> u32 {
            self.inner.partitions()
        }

        fn read<'life0, 'async_trait>(
            &'life0 self,
            partition: u32,
            from: u64,
            max: usize,
        ) -> Boxed<'async_trait, Page>
        where
            'life0: 'async_trait,
            Self: 'async_trait,
        {
            self.inner.read(partition, from, max)
        }

        fn wait<'life0, 'async_trait>(
            &'life0 self,
            partition: u32,
            from: u64,
        ) -> Boxed<'async_trait, ()>
        where
            'life0: 'async_trait,
            Self: 'async_trait,
        {
            self.inner.wait(partition, from)
        }

        fn head<'life0, 'async_trait>(
            &'life0 self,
            partition: u32,
        ) -> Boxed<'async_trait, Option<u64>>
        where
            'life0: 'async_trait,
            Self: 'async_trait,
        {
            self.head_calls.fetch_add(1, Ordering::SeqCst);
            self.inner.head(partition)
        }

        fn heads<'life0, 'life1, 'async_trait>(
            &'life0 self,
            partitions: &'life1 [u32],
        ) -> Boxed<'async_trait, Vec<Option<u64>>>
        where
            'life0: 'async_trait,
            'life1: 'async_trait,
            Self: 'async_trait,
        {
            self.heads_calls.fetch_add(1, Ordering::SeqCst);
            if self.hangs {
                return Box::pin(std::future::pending());
            }
            self.inner.heads(partitions)
        }
    }

    #[test]
    fn the_fallback_is_one_more_than_the_highest_checkpointed_partition() {
        assert_eq!(fallback_partitions(&[]), 0);
        let checkpoints = [
            Checkpoint::new("a", 3, 10),
            Checkpoint::new("b", 0, 1),
            Checkpoint::new("a", 1, 7),
        ];
        assert_eq!(fallback_partitions(&checkpoints), 4);
        assert_eq!(
            fallback_partitions(&[Checkpoint::new("a", u32::MAX, 0)]),
            u32::MAX
        );
    }

    #[tokio::test]
    async fn each_partition_once_none_for_empty_or_missing_ones() {
        let source = InMemorySource::new(3);
        for payload in [b"a", b"b", b"c"] {
            source.append(0, payload.to_vec()).unwrap();
        }
        let last = source.append(2, b"d".to_vec()).unwrap();
        let heads = read_heads(&source, [2, 0, 1, 0, 7], Duration::from_secs(1), "c")
            .await
            .unwrap();
        let expected_zero = source.head(0).await.unwrap();
        assert!(expected_zero.is_some());
        assert_eq!(
            heads.into_iter().collect::<Vec<_>>(),
            [(0, expected_zero), (1, None), (2, Some(last)), (7, None)]
        );
    }

    #[tokio::test]
    async fn one_heads_call_for_every_partition_asked() {
        let inner = InMemorySource::new(1024);
        let last = inner.append(1000, b"x".to_vec()).unwrap();
        let source = Counted::new(inner, false);
        let asked = (0..1024).rev().chain([1000, 5000]);
        let heads = read_heads(&source, asked, Duration::from_secs(1), "c")
            .await
            .unwrap();
        assert_eq!(source.heads_calls.load(Ordering::SeqCst), 1);
        assert_eq!(source.head_calls.load(Ordering::SeqCst), 0);
        assert_eq!(heads.len(), 1025);
        assert_eq!(heads[&1000], Some(last));
        assert_eq!(heads[&5000], None);
        assert!(heads.iter().all(|(p, head)| *p == 1000 || head.is_none()));
    }

    #[tokio::test]
    async fn nothing_asked_asks_nothing_and_the_timeout_bounds_the_whole_call() {
        let source = Counted::new(InMemorySource::new(2), true);
        let none = read_heads(&source, [], Duration::from_millis(50), "c").await;
        assert!(none.unwrap().is_empty());
        assert_eq!(source.heads_calls.load(Ordering::SeqCst), 0);
        let error = read_heads(&source, [0, 1], Duration::from_millis(50), "status")
            .await
            .unwrap_err();
        assert!(
            error.to_string().contains("status: no answer within"),
            "{error}"
        );
        assert_eq!(source.heads_calls.load(Ordering::SeqCst), 1);
    }
}
