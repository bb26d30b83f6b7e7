//! Reading the head of each shown partition from the log, and the partition count to open a
//! log with when it stores none.

use std::collections::BTreeMap;
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

/// The head of each of `partitions` (each read once) in `source`, one request each, each
/// within `timeout`: `None` where the partition has no entry, and for a partition the source
/// does not have (at or above its partition count), which is not asked for.
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
    let mut heads = BTreeMap::new();
    for partition in partitions {
        if heads.contains_key(&partition) {
            continue;
        }
        let head = if partition < source.partitions() {
            match tokio::time::timeout(timeout, source.head(partition)).await {
                Ok(Ok(head)) => head,
                Ok(Err(error)) => return Err(CliError::source(context, &error)),
                Err(_) => {
                    return Err(CliError::failure(format!(
                        "{context}: no answer within {}",
                        seconds(timeout)
                    )));
                }
            }
        } else {
            None
        };
        heads.insert(partition, head);
    }
    Ok(heads)
}

#[cfg(test)]
mod tests {
    use checkpoint_core::source::InMemorySource;

    use super::*;

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
}
