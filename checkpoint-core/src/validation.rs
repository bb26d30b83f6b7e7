//! The input rules every store applies before any I/O.
//!
//! Every backend calls these functions first, so that all of them reject exactly the same
//! inputs with exactly the same [`InvalidInput`] error, and nothing invalid ever reaches a
//! server.
//!
//! | part | valid values |
//! | --- | --- |
//! | group, subscription | non-empty UTF-8, at most [`MAX_NAME_BYTES`] bytes, no NUL character |
//! | partition | every `u32` |
//! | position | `0..=`[`MAX_POSITION`] (`i64::MAX`), so every backend can keep it as a signed 64-bit integer |
//! | lease owner, requester | as a name |
//! | lease duration | [`MIN_LEASE_DURATION`]`..=`[`MAX_LEASE_DURATION`] (10 ms to a day) |
//! | lease partitions | at most [`MAX_LEASE_PARTITIONS`], none twice |

use std::time::Duration;

use crate::error::{Argument, InvalidInput, InvalidReason};
use crate::lease::{MAX_LEASE_DURATION, MAX_LEASE_PARTITIONS, MIN_LEASE_DURATION};
use crate::{Checkpoint, Error};

/// The longest valid group or subscription name, in bytes of UTF-8.
pub const MAX_NAME_BYTES: usize = 512;

/// The highest valid position: `i64::MAX`.
pub const MAX_POSITION: u64 = i64::MAX as u64;

/// Checks a group or subscription name.
pub fn validate_name(argument: Argument, name: &str) -> Result<(), InvalidInput> {
    if name.is_empty() {
        return Err(InvalidInput::new(argument, InvalidReason::Empty));
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(InvalidInput::new(
            argument,
            InvalidReason::TooLong {
                len: name.len(),
                max: MAX_NAME_BYTES,
            },
        ));
    }
    if let Some(byte_offset) = name.bytes().position(|b| b == 0) {
        return Err(InvalidInput::new(
            argument,
            InvalidReason::ContainsNul { byte_offset },
        ));
    }
    Ok(())
}

/// Checks a position (or any other argument that is a position, such as `from` or `to`).
pub fn validate_position(argument: Argument, position: u64) -> Result<(), InvalidInput> {
    if position > MAX_POSITION {
        return Err(InvalidInput::new(
            argument,
            InvalidReason::PositionOutOfRange {
                value: position,
                max: MAX_POSITION,
            },
        ));
    }
    Ok(())
}

/// Checks the argument of [`list`](crate::CheckpointStore::list).
pub fn validate_group(group: &str) -> Result<(), Error> {
    validate_name(Argument::Group, group)?;
    Ok(())
}

/// Checks the arguments of [`load`](crate::CheckpointStore::load). Every partition is valid.
pub fn validate_key(group: &str, subscription: &str) -> Result<(), Error> {
    validate_name(Argument::Group, group)?;
    validate_name(Argument::Subscription, subscription)?;
    Ok(())
}

/// Checks the arguments of [`save`](crate::CheckpointStore::save).
pub fn validate_save(group: &str, subscription: &str, position: u64) -> Result<(), Error> {
    validate_key(group, subscription)?;
    validate_position(Argument::Position, position)?;
    Ok(())
}

/// Checks the arguments of [`save_all`](crate::CheckpointStore::save_all): the group and every
/// entry. The error names the first invalid entry's index; a batch with any invalid entry is
/// rejected whole.
pub fn validate_batch(group: &str, checkpoints: &[Checkpoint]) -> Result<(), Error> {
    validate_name(Argument::Group, group)?;
    for (index, checkpoint) in checkpoints.iter().enumerate() {
        validate_name(Argument::Subscription, &checkpoint.subscription)
            .and_then(|()| validate_position(Argument::Position, checkpoint.position))
            .map_err(|invalid| invalid.at_batch_index(index))?;
    }
    Ok(())
}

/// Checks the arguments of [`claim`](crate::ExclusiveCheckpointStore::claim).
pub fn validate_claim(group: &str, subscription: &str, initial_position: u64) -> Result<(), Error> {
    validate_key(group, subscription)?;
    validate_position(Argument::InitialPosition, initial_position)?;
    Ok(())
}

/// Checks the arguments of [`advance`](crate::ExclusiveCheckpointStore::advance): both positions
/// valid, and `to` ahead of `from`.
pub fn validate_advance(group: &str, subscription: &str, from: u64, to: u64) -> Result<(), Error> {
    validate_key(group, subscription)?;
    validate_position(Argument::From, from)?;
    validate_position(Argument::To, to)?;
    if to <= from {
        return Err(InvalidInput::new(Argument::To, InvalidReason::NotAhead { from, to }).into());
    }
    Ok(())
}

/// Checks the arguments of [`start_at`](crate::CheckpointAdmin::start_at): the key, at least
/// one position, every position valid and no partition twice. The error names the index of
/// the first invalid entry.
pub fn validate_start_at(
    group: &str,
    subscription: &str,
    positions: &[(u32, u64)],
) -> Result<(), Error> {
    validate_key(group, subscription)?;
    if positions.is_empty() {
        return Err(InvalidInput::new(Argument::Positions, InvalidReason::Empty).into());
    }
    let mut seen = std::collections::HashSet::with_capacity(positions.len());
    for (index, &(partition, position)) in positions.iter().enumerate() {
        validate_position(Argument::Position, position)
            .map_err(|invalid| invalid.at_batch_index(index))?;
        if !seen.insert(partition) {
            return Err(InvalidInput::new(
                Argument::Partition,
                InvalidReason::DuplicatePartition { partition },
            )
            .at_batch_index(index)
            .into());
        }
    }
    Ok(())
}

/// Checks a lease duration: within
/// [`MIN_LEASE_DURATION`]`..=`[`MAX_LEASE_DURATION`].
pub fn validate_duration(duration: Duration) -> Result<(), InvalidInput> {
    if !(MIN_LEASE_DURATION..=MAX_LEASE_DURATION).contains(&duration) {
        return Err(InvalidInput::new(
            Argument::Duration,
            InvalidReason::DurationOutOfRange {
                value: duration,
                min: MIN_LEASE_DURATION,
                max: MAX_LEASE_DURATION,
            },
        ));
    }
    Ok(())
}

/// Checks the partitions of a lease operation: at most
/// [`MAX_LEASE_PARTITIONS`], none twice (the error names
/// the index of the second). Empty is valid.
pub fn validate_partitions(partitions: &[u32]) -> Result<(), InvalidInput> {
    if partitions.len() > MAX_LEASE_PARTITIONS {
        return Err(InvalidInput::new(
            Argument::Partitions,
            InvalidReason::TooMany {
                len: partitions.len(),
                max: MAX_LEASE_PARTITIONS,
            },
        ));
    }
    let mut seen = std::collections::HashSet::with_capacity(partitions.len());
    for (index, &partition) in partitions.iter().enumerate() {
        if !seen.insert(partition) {
            return Err(InvalidInput::new(
                Argument::Partition,
                InvalidReason::DuplicatePartition { partition },
            )
            .at_batch_index(index));
        }
    }
    Ok(())
}

/// Checks the key and owner of every lease operation.
pub fn validate_lease_owner(group: &str, subscription: &str, owner: &str) -> Result<(), Error> {
    validate_key(group, subscription)?;
    validate_name(Argument::Owner, owner)?;
    Ok(())
}

/// Checks the arguments of [`acquire`](crate::LeaseStore::acquire).
pub fn validate_acquire(
    group: &str,
    subscription: &str,
    owner: &str,
    partitions: &[u32],
    duration: Duration,
) -> Result<(), Error> {
    validate_lease_owner(group, subscription, owner)?;
    validate_partitions(partitions)?;
    validate_duration(duration)?;
    Ok(())
}

/// Checks the arguments of [`renew`](crate::LeaseStore::renew).
pub fn validate_renew(
    group: &str,
    subscription: &str,
    owner: &str,
    duration: Duration,
) -> Result<(), Error> {
    validate_lease_owner(group, subscription, owner)?;
    validate_duration(duration)?;
    Ok(())
}

/// Checks the arguments of [`release`](crate::LeaseStore::release).
pub fn validate_release(
    group: &str,
    subscription: &str,
    owner: &str,
    partitions: &[u32],
) -> Result<(), Error> {
    validate_lease_owner(group, subscription, owner)?;
    validate_partitions(partitions)?;
    Ok(())
}

/// Checks the arguments of [`request_handover`](crate::LeaseStore::request_handover).
pub fn validate_request_handover(
    group: &str,
    subscription: &str,
    requester: &str,
    partitions: &[u32],
) -> Result<(), Error> {
    validate_key(group, subscription)?;
    validate_name(Argument::Requester, requester)?;
    validate_partitions(partitions)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(result: Result<(), Error>) -> InvalidReason {
        match result {
            Err(Error::InvalidInput(invalid)) => invalid.reason,
            other => panic!("expected invalid input, got {other:?}"),
        }
    }

    #[test]
    fn names_at_the_limits() {
        assert!(validate_group(&"g".repeat(MAX_NAME_BYTES)).is_ok());
        assert_eq!(
            reason(validate_group(&"g".repeat(MAX_NAME_BYTES + 1))),
            InvalidReason::TooLong { len: 513, max: 512 }
        );
        // 128 four-byte characters are exactly 512 bytes.
        assert!(validate_group(&"😀".repeat(128)).is_ok());
        assert!(validate_group(&format!("{}a", "😀".repeat(128))).is_err());
        assert_eq!(reason(validate_group("")), InvalidReason::Empty);
        assert_eq!(
            reason(validate_key("g", "a\0b")),
            InvalidReason::ContainsNul { byte_offset: 1 }
        );
    }

    #[test]
    fn positions_at_the_limits() {
        assert!(validate_save("g", "s", 0).is_ok());
        assert!(validate_save("g", "s", MAX_POSITION).is_ok());
        assert_eq!(
            reason(validate_save("g", "s", MAX_POSITION + 1)),
            InvalidReason::PositionOutOfRange {
                value: MAX_POSITION + 1,
                max: MAX_POSITION
            }
        );
    }

    #[test]
    fn advance_must_move_forward() {
        assert!(validate_advance("g", "s", 0, 1).is_ok());
        assert_eq!(
            reason(validate_advance("g", "s", 5, 5)),
            InvalidReason::NotAhead { from: 5, to: 5 }
        );
        assert!(validate_advance("g", "s", 0, MAX_POSITION + 1).is_err());
        assert!(validate_claim("g", "s", MAX_POSITION + 1).is_err());
    }

    #[test]
    fn start_at_needs_distinct_partitions_and_valid_positions() {
        assert!(validate_start_at("g", "s", &[(0, 1), (1, MAX_POSITION)]).is_ok());
        assert_eq!(
            reason(validate_start_at("g", "s", &[])),
            InvalidReason::Empty
        );
        assert_eq!(
            reason(validate_start_at("g", "s", &[(3, 1), (3, 2)])),
            InvalidReason::DuplicatePartition { partition: 3 }
        );
        match validate_start_at("g", "s", &[(0, 1), (1, MAX_POSITION + 1)]) {
            Err(Error::InvalidInput(invalid)) => assert_eq!(invalid.batch_index, Some(1)),
            other => panic!("expected invalid input, got {other:?}"),
        }
        assert!(validate_start_at("g", "", &[(0, 1)]).is_err());
    }

    #[test]
    fn batch_error_names_the_first_invalid_entry() {
        let batch = [
            Checkpoint::new("a", 0, 1),
            Checkpoint::new("b", 0, u64::MAX),
            Checkpoint::new("", 0, 1),
        ];
        match validate_batch("g", &batch) {
            Err(Error::InvalidInput(invalid)) => {
                assert_eq!(invalid.batch_index, Some(1));
                assert_eq!(invalid.argument, Argument::Position);
            }
            other => panic!("expected invalid input, got {other:?}"),
        }
    }
}
