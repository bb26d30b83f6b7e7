//! The layout of a subscription's leases: their keys (all in the slot of the group's retired
//! set) and the reading of what the lease scripts return.

use checkpoint_core::UnexpectedValue;

use super::{retired_key, shown};

/// The partition of a lease, as a lease script returns it.
pub(crate) const PARTITION: &str = "partition";
/// The epoch of a lease, as a lease script returns it.
pub(crate) const EPOCH: &str = "epoch";
/// The time left of a lease or heartbeat, as the `leases` script returns it.
pub(crate) const TIME_LEFT: &str = "time left";

/// The keys of one subscription's leases, all with the group's hash tag, so in the slot of
/// its retired set (which every lease script that can grant checks, and `purge` clears with
/// them). `groups` skips them: a group with leases and no checkpoint is not listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LeaseKeys {
    /// The group's retired set ([`retired_key`]).
    pub(crate) retired: String,
    /// The hash of the leases, `<group key>:leases:<subscription>`: field `<partition>`,
    /// value `<epoch>\0<expiry ms>\0<owner>\0<requester>` (`lua/lease.lua`).
    pub(crate) leases: String,
    /// The hash of the heartbeats, `<group key>:owners:<subscription>`: field `<owner>`,
    /// value `<expiry ms>`.
    pub(crate) owners: String,
    /// The held index, `<group key>:held:<subscription>`: a sorted set of
    /// `<owner>\0<partition>`, every score 0.
    pub(crate) held: String,
}

/// The keys of the leases of `subscription` in the group whose hash is `group_key`. Injective:
/// the group key ends at its tag's `}`, and the word after it says which key it is, the
/// subscription being the whole rest.
pub(crate) fn lease_keys(group_key: &str, subscription: &str) -> LeaseKeys {
    LeaseKeys {
        retired: retired_key(group_key),
        leases: format!("{group_key}:leases:{subscription}"),
        owners: format!("{group_key}:owners:{subscription}"),
        held: format!("{group_key}:held:{subscription}"),
    }
}

/// A lease duration in the scripts' unit, whole milliseconds, rounded up: the server never
/// expires a lease before the duration asked for (its clock's millisecond steps aside, which
/// `checkpoint_core::lease::LEASE_SAFETY_MARGIN` covers).
pub(crate) fn lease_millis(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX)
}

/// A partition a lease script returns: decimal digits of a `u32`.
pub(crate) fn parse_partition(text: &str) -> Result<u32, UnexpectedValue> {
    parse_decimal(PARTITION, text)
}

/// An epoch a lease script returns: decimal digits, at least 1.
pub(crate) fn parse_epoch(text: &str) -> Result<u64, UnexpectedValue> {
    match parse_decimal(EPOCH, text)? {
        0 => Err(UnexpectedValue::new(EPOCH, "0, not an epoch".to_owned())),
        epoch => Ok(epoch),
    }
}

/// Milliseconds left of a lease or heartbeat, as a lease script returns them.
pub(crate) fn parse_time_left(text: &str) -> Result<std::time::Duration, UnexpectedValue> {
    parse_decimal(TIME_LEFT, text).map(std::time::Duration::from_millis)
}

/// Decimal digits only, parsed into `T`; an [`UnexpectedValue`] naming `field` otherwise.
fn parse_decimal<T: std::str::FromStr>(
    field: &'static str,
    text: &str,
) -> Result<T, UnexpectedValue> {
    if !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit())
        && let Ok(value) = text.parse()
    {
        return Ok(value);
    }
    Err(UnexpectedValue::new(
        field,
        format!("{}, not a decimal {field}", shown(text.as_bytes())),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_durations_round_up_to_milliseconds() {
        use std::time::Duration;
        assert_eq!(lease_millis(Duration::from_millis(10)), 10);
        assert_eq!(lease_millis(Duration::from_micros(10_001)), 11);
        assert_eq!(parse_epoch("0").map_err(|e| e.field), Err(EPOCH));
        assert_eq!(parse_epoch("18446744073709551615"), Ok(u64::MAX));
        assert_eq!(parse_partition("+1").map_err(|e| e.field), Err(PARTITION));
        assert_eq!(parse_time_left("2500"), Ok(Duration::from_millis(2500)));
    }
}
