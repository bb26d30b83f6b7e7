//! Bad input: refused with the typed error before any I/O.

use std::time::Duration;

use checkpoint_core::source::{Source, SourceError};

use crate::sources::SourceLog;
use crate::{CaseResult, Failure, ensure};

/// How long a refused `wait` may take: it must refuse, not wait.
const REFUSAL: Duration = Duration::from_secs(2);

/// A partition out of range (for read, wait and head), `max` = 0, and a `from` above
/// `i64::MAX` (for read and wait) are refused with [`SourceError::PartitionOutOfRange`] or
/// [`SourceError::InvalidInput`] naming the argument; a read from `i64::MAX` itself is valid.
pub async fn source_invalid_inputs_are_rejected<L: SourceLog>(log: &L) -> CaseResult {
    let source = log.source();
    let partitions = source.partitions();
    let above = i64::MAX as u64 + 1;
    for partition in [partitions, u32::MAX] {
        out_of_range(
            "read",
            partitions,
            source.read(partition, 0, 1).await.map(drop),
        )?;
        out_of_range("head", partitions, source.head(partition).await.map(drop))?;
        out_of_range(
            "wait",
            partitions,
            bounded(source.wait(partition, 0)).await?,
        )?;
    }
    invalid(
        "read with max = 0",
        "max",
        source.read(0, 0, 0).await.map(drop),
    )?;
    for from in [above, u64::MAX] {
        invalid("read", "from", source.read(0, from, 1).await.map(drop))?;
        invalid("wait", "from", bounded(source.wait(0, from)).await?)?;
    }
    let page = source.read(0, i64::MAX as u64, 1).await?;
    ensure!(
        page.entries.is_empty() && page.next >= i64::MAX as u64,
        "a read from i64::MAX returned {} entries and next = {}",
        page.entries.len(),
        page.next
    );
    Ok(())
}

async fn bounded(
    wait: impl Future<Output = Result<(), SourceError>>,
) -> Result<Result<(), SourceError>, Failure> {
    tokio::time::timeout(REFUSAL, wait).await.map_err(|_| {
        Failure::new(format!(
            "a `wait` with invalid input did not return within {REFUSAL:?}: it waited instead of \
             refusing"
        ))
    })
}

fn out_of_range(call: &str, partitions: u32, result: Result<(), SourceError>) -> CaseResult {
    match result {
        Err(SourceError::PartitionOutOfRange {
            partitions: told, ..
        }) if told == partitions => Ok(()),
        other => Err(Failure::new(format!(
            "{call} of a partition out of 0..{partitions} returned {other:?}, not \
             SourceError::PartitionOutOfRange"
        ))),
    }
}

fn invalid(call: &str, argument: &str, result: Result<(), SourceError>) -> CaseResult {
    match result {
        Err(SourceError::InvalidInput {
            argument: named, ..
        }) if named == argument => Ok(()),
        other => Err(Failure::new(format!(
            "{call} with an invalid `{argument}` returned {other:?}, not \
             SourceError::InvalidInput naming `{argument}`"
        ))),
    }
}
