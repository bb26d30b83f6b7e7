//! The lease values the SQL engines that keep expiries as integer milliseconds of the
//! server's clock (SQLite, MySQL and MariaDB) write and read back.

use std::time::Duration;

use checkpoint_core::lease::{Lease, LeaseOwner, LeaseTable};
use checkpoint_core::stored::{SqlColumns, UnexpectedValue};
use checkpoint_core::{Error, Operation};

/// The subscription and owner (or requester) a lease operation is about.
#[derive(Debug, Clone, Copy)]
pub struct LeaseKey<'a> {
    /// The group.
    pub group: &'a str,
    /// The subscription.
    pub subscription: &'a str,
    /// The owner, or the requester of a handover.
    pub owner: &'a str,
}

impl<'a> LeaseKey<'a> {
    /// The key of `owner`'s call on `subscription` of `group`.
    pub fn new(group: &'a str, subscription: &'a str, owner: &'a str) -> Self {
        Self {
            group,
            subscription,
            owner,
        }
    }
}

/// A row of an engine's `leases` statement: partition, owner, epoch, expiry (ms), handover
/// requester.
pub type LeaseRow = (i64, String, i64, i64, Option<String>);

/// The rows of an engine's `leases` and `lease_owners` statements (each already sorted: by
/// partition, by owner) read back at `now`, both in milliseconds of the server's clock.
pub fn lease_table(
    columns: SqlColumns,
    operation: Operation,
    now: i64,
    rows: Vec<LeaseRow>,
    owners: Vec<(String, i64)>,
) -> Result<LeaseTable, Error> {
    let leases = rows
        .into_iter()
        .map(|(partition, owner, stored_epoch, expires, handover)| {
            Ok(Lease {
                partition: columns.partition(operation, partition)?,
                owner,
                epoch: epoch(columns.backend, operation, stored_epoch)?,
                time_left: Some(time_left(expires, now)),
                handover_requested_by: handover,
            })
        })
        .collect::<Result<Vec<Lease>, Error>>()?;
    let owners = owners
        .into_iter()
        .map(|(owner, expires)| LeaseOwner {
            owner,
            time_left: Some(time_left(expires, now)),
        })
        .collect();
    Ok(LeaseTable { leases, owners })
}

/// The partitions of `requested` not in `taken` (sorted), sorted: what an acquire refused, or
/// what a release did not hold.
pub fn rest(requested: &[u32], taken: &[u32]) -> Vec<u32> {
    let mut rest: Vec<u32> = requested
        .iter()
        .copied()
        .filter(|partition| taken.binary_search(partition).is_err())
        .collect();
    rest.sort_unstable();
    rest
}

/// A lease's `epoch` column read back: a store grants epochs from 1 up, so anything below is
/// a value no store writes.
pub fn epoch(backend: &'static str, operation: Operation, value: i64) -> Result<u64, Error> {
    u64::try_from(value)
        .ok()
        .filter(|&epoch| epoch >= 1)
        .ok_or_else(|| {
            UnexpectedValue::new("epoch", value.to_string()).into_error(backend, operation)
        })
}

/// How long until `expires_at_ms` at `now_ms`, both milliseconds of the server's clock (`0`
/// once past).
pub fn time_left(expires_at_ms: i64, now_ms: i64) -> Duration {
    Duration::from_millis(u64::try_from(expires_at_ms.saturating_sub(now_ms)).unwrap_or(0))
}

/// A lease duration in whole milliseconds, rounded up: the server holds a lease at least as
/// long as asked, never less (validation bounds it to a day, so it fits).
pub fn duration_ms(duration: Duration) -> i64 {
    let millis = duration.as_micros().div_ceil(1000);
    i64::try_from(millis).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_values_convert_exactly() {
        assert_eq!(duration_ms(Duration::from_millis(10)), 10);
        assert_eq!(duration_ms(Duration::from_micros(10_001)), 11);
        assert_eq!(duration_ms(Duration::from_secs(86_400)), 86_400_000);
        assert_eq!(time_left(1_500, 1_000), Duration::from_millis(500));
        assert_eq!(time_left(1_000, 1_500), Duration::ZERO);
        assert_eq!(epoch("sql", Operation::Renew, 7).ok(), Some(7));
        assert!(epoch("sql", Operation::Renew, 0).is_err());
        assert!(epoch("sql", Operation::Renew, -1).is_err());
    }
}
