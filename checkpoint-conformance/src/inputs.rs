//! Arbitrary inputs for property tests of a store's entry points: names, partitions and
//! positions that are often invalid, and the contract's rule for which argument an invalid
//! call must name.
//!
//! The rule is written here independently of `checkpoint_core::validation`, so a store's
//! validation is checked against the contract, not against itself. Backends use these
//! strategies in their own tests, for example to show through
//! [`CountingProxy`](crate::round_trips::CountingProxy) that an invalid call sends nothing.

use checkpoint_core::Argument;
use checkpoint_core::validation::{MAX_NAME_BYTES, MAX_POSITION};
use proptest::prelude::*;

/// The contract's rule for a valid group or subscription name.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= MAX_NAME_BYTES && !name.contains('\0')
}

/// Names: mostly valid (arbitrary Unicode; SQL, Lua, expression and key syntax), often
/// invalid (empty, one byte too long, far too long, multi-byte too long, a NUL anywhere).
pub fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[^\u{0}]{1,12}",
        2 => "[a-z#:{}%*?\\[\\]'\";|\\\\ \n\r$=<>()-]{1,12}",
        1 => Just(String::new()),
        1 => Just("n".repeat(MAX_NAME_BYTES + 1)),
        1 => (MAX_NAME_BYTES + 2..2 * MAX_NAME_BYTES).prop_map(|len| "x".repeat(len)),
        1 => Just("é".repeat(MAX_NAME_BYTES / 2 + 1)),
        1 => ("[a-z]{0,4}", "[a-z]{0,4}").prop_map(|(a, b)| format!("{a}\0{b}")),
    ]
}

/// Positions: mostly valid, often above `i64::MAX`.
pub fn position() -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => 0..=MAX_POSITION,
        1 => Just(MAX_POSITION),
        2 => MAX_POSITION + 1..=u64::MAX,
    ]
}

/// The arguments of one round: one of each, used by every entry point.
#[derive(Debug, Clone)]
pub struct Inputs {
    /// A group name.
    pub group: String,
    /// A subscription name.
    pub subscription: String,
    /// A partition (every value is valid).
    pub partition: u32,
    /// A position to save, or a claim's initial position.
    pub position: u64,
    /// An advance's `from`.
    pub from: u64,
    /// An advance's `to`.
    pub to: u64,
    /// Entries of a batch (subscription, partition, position), some valid, some not.
    pub batch: Vec<(String, u32, u64)>,
}

/// One round of arbitrary inputs.
pub fn inputs() -> impl Strategy<Value = Inputs> {
    (
        name(),
        name(),
        any::<u32>(),
        position(),
        position(),
        position(),
        prop::collection::vec((name(), any::<u32>(), position()), 1..4),
    )
        .prop_map(
            |(group, subscription, partition, position, from, to, batch)| Inputs {
                group,
                subscription,
                partition,
                position,
                from,
                to,
                batch,
            },
        )
}

/// The argument an invalid call must name (group, then subscription, then the first position
/// above `i64::MAX`), or `None` when the call is valid.
pub fn first_invalid(
    group: &str,
    subscription: Option<&str>,
    positions: &[(Argument, u64)],
) -> Option<Argument> {
    if !valid_name(group) {
        return Some(Argument::Group);
    }
    if let Some(subscription) = subscription
        && !valid_name(subscription)
    {
        return Some(Argument::Subscription);
    }
    positions
        .iter()
        .find(|(_, position)| *position > MAX_POSITION)
        .map(|(argument, _)| *argument)
}
