//! The lease values the SQL engines that keep expiries as integer milliseconds of the
//! server's clock (SQLite, MySQL and MariaDB) write and read back.

use std::time::Duration;

use checkpoint_core::stored::UnexpectedValue;
use checkpoint_core::{Error, Operation};

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
