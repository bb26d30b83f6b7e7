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

/// 2^53: the first integer above which an `f64` cannot hold every integer.
const F64_EXACT_LIMIT: u64 = 1 << 53;

/// The contract's rule for a valid group or subscription name.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= MAX_NAME_BYTES && !name.contains('\0')
}

/// Names: mostly valid (arbitrary Unicode; SQL, Lua, expression and key syntax), often
/// invalid (empty, around the length limit, one byte too long, far too long, multi-byte too
/// long, a NUL anywhere).
pub fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[^\u{0}]{1,12}",
        2 => "[a-z#:{}%_/*?\\[\\]'\";|\\\\ \n\r$=<>()-]{1,12}",
        2 => any::<String>(),
        1 => prop::collection::vec(any::<char>(), 100..200)
            .prop_map(|chars| chars.into_iter().collect()),
        1 => (MAX_NAME_BYTES - 12..=MAX_NAME_BYTES + 8).prop_map(|len| "n".repeat(len)),
        1 => Just(String::new()),
        1 => Just("n".repeat(MAX_NAME_BYTES + 1)),
        1 => (MAX_NAME_BYTES + 2..2 * MAX_NAME_BYTES).prop_map(|len| "x".repeat(len)),
        1 => Just("é".repeat(MAX_NAME_BYTES / 2 + 1)),
        1 => ("[a-z]{0,4}", "[a-z]{0,4}").prop_map(|(a, b)| format!("{a}\0{b}")),
    ]
}

/// Valid names only, including characters that mean something in SQL, Lua or keys.
pub fn good_name() -> impl Strategy<Value = String> {
    prop_oneof![
        "[^\u{0}]{1,16}",
        "[a-z{}:%*?\\[\\]'\";|\\\\ \n\r$()-]{1,16}",
    ]
}

/// Invalid names only: empty, one byte too long, far too long, too long in multi-byte
/// characters, or with a NUL anywhere.
pub fn bad_name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("n".repeat(MAX_NAME_BYTES + 1)),
        (MAX_NAME_BYTES + 2..4 * MAX_NAME_BYTES).prop_map(|len| "x".repeat(len)),
        Just("é".repeat(MAX_NAME_BYTES / 2 + 1)),
        ("[^\u{0}]{0,8}", "[^\u{0}]{0,8}").prop_map(|(a, b)| format!("{a}\0{b}")),
    ]
}

/// Positions: mostly valid, often at the edges (where an `f64` stops holding every integer,
/// at and just above `i64::MAX`), often above `i64::MAX`.
pub fn position() -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => 0..=MAX_POSITION,
        2 => prop::sample::select(vec![
            0,
            1,
            F64_EXACT_LIMIT,
            F64_EXACT_LIMIT + 1,
            MAX_POSITION - 1,
            MAX_POSITION,
            MAX_POSITION + 1,
            u64::MAX,
        ]),
        2 => MAX_POSITION + 1..=u64::MAX,
    ]
}

/// Positions above `i64::MAX` only.
pub fn bad_position() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(MAX_POSITION + 1),
        Just(u64::MAX),
        MAX_POSITION + 1..=u64::MAX
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

/// Which argument [`one_wrong`] gets wrong.
#[derive(Debug, Clone)]
enum Wrong {
    Group(String),
    Subscription(String),
    Position(u64),
    /// An advance's `to` at or behind its `from` (every other call gets a valid position).
    NotAhead {
        from: u64,
        back: u64,
    },
}

/// Rounds with exactly one argument wrong: the group, the subscription, or the position (as
/// the position, one entry of the batch, the claim's initial position and the advance's `from`
/// or `to`), or an advance's `to` not ahead of its `from`. Every call that takes the wrong
/// argument must be refused; the others are valid.
pub fn one_wrong() -> impl Strategy<Value = Inputs> {
    let wrong = prop_oneof![
        bad_name().prop_map(Wrong::Group),
        bad_name().prop_map(Wrong::Subscription),
        bad_position().prop_map(Wrong::Position),
        (0..=MAX_POSITION, 0..=3u64).prop_map(|(from, back)| Wrong::NotAhead { from, back }),
    ];
    (
        wrong,
        good_name(),
        good_name(),
        any::<u32>(),
        0..=MAX_POSITION,
        0..4usize,
        0..4usize,
    )
        .prop_map(
            |(wrong, group, subscription, partition, position, batch_len, bad_index)| {
                let bad_index = bad_index.min(batch_len);
                let mut inputs = Inputs {
                    group,
                    subscription,
                    partition,
                    position,
                    from: 0,
                    to: 1,
                    batch: Vec::new(),
                };
                match wrong {
                    Wrong::Group(name) => inputs.group = name,
                    Wrong::Subscription(name) => inputs.subscription = name,
                    Wrong::Position(bad) => {
                        inputs.position = bad;
                        (inputs.from, inputs.to) = if bad_index.is_multiple_of(2) {
                            (bad, 0)
                        } else {
                            (0, bad)
                        };
                    }
                    Wrong::NotAhead { from, back } => {
                        inputs.position = from;
                        (inputs.from, inputs.to) = (from, from.saturating_sub(back));
                    }
                }
                // Valid entries around the one that carries the subscription and position.
                inputs.batch = (0..batch_len)
                    .map(|i| (format!("ok{i}"), partition, i as u64))
                    .collect();
                inputs.batch.insert(
                    bad_index,
                    (inputs.subscription.clone(), partition, inputs.position),
                );
                inputs
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
