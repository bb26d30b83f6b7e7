//! The generator: plans of owners and zombies over a small key space, drawn with proptest
//! from a seed.

use std::fmt;

use checkpoint_core::validation::MAX_POSITION;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// The subscriptions and partitions of the history's key space: four keys, so owners collide.
pub(crate) const SUBSCRIPTIONS: [&str; 2] = ["orders", "orders:1"];
pub(crate) const PARTITIONS: [u32; 2] = [0, 1];
pub(crate) const KEYS: usize = SUBSCRIPTIONS.len() * PARTITIONS.len();

/// A key of the history's key space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key(pub u8);

impl Key {
    pub(crate) fn subscription(self) -> &'static str {
        SUBSCRIPTIONS[usize::from(self.0) / PARTITIONS.len()]
    }
    pub(crate) fn partition(self) -> u32 {
        PARTITIONS[usize::from(self.0) % PARTITIONS.len()]
    }
    pub(crate) fn of(subscription: &str, partition: u32) -> Option<Key> {
        let s = SUBSCRIPTIONS
            .iter()
            .position(|name| *name == subscription)?;
        let p = PARTITIONS.iter().position(|part| *part == partition)?;
        u8::try_from(s * PARTITIONS.len() + p).ok().map(Key)
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.subscription(), self.partition())
    }
}

/// One call an owner makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// `save(key, position)`.
    Save(Key, u64),
    /// `save_all` of these entries.
    SaveAll(Vec<(Key, u64)>),
    /// `load(key)`.
    Load(Key),
    /// `list` of the history's group.
    List,
}

/// One owner's part of a plan.
#[derive(Debug, Clone)]
pub struct OwnerPlan {
    /// A zombie waits, then delivers old, low positions after the others have saved.
    pub zombie: bool,
    /// Calls in order, each preceded by a pause of 0 to 3 scheduler yields.
    pub calls: Vec<(u8, Call)>,
}

/// What proptest generates: the owners of one history.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The owners, running at the same time.
    pub owners: Vec<OwnerPlan>,
}

fn key() -> impl Strategy<Value = Key> {
    (0..KEYS as u8).prop_map(Key)
}

/// Positions of live owners: mostly small so owners collide, sometimes where doubles lose
/// precision or at the top of the range.
fn live_position() -> impl Strategy<Value = u64> {
    prop_oneof![
        8 => 10..200u64,
        1 => prop::sample::select(vec![(1u64 << 53) - 1, 1 << 53, (1 << 53) + 1, MAX_POSITION - 1, MAX_POSITION]),
    ]
}

/// Positions of zombies: behind what the live owners complete.
fn zombie_position() -> impl Strategy<Value = u64> {
    0..60u64
}

fn call(position: SBoxedStrategy<u64>) -> impl Strategy<Value = Call> {
    prop_oneof![
        4 => (key(), position.clone()).prop_map(|(k, p)| Call::Save(k, p)),
        2 => prop::collection::vec((key(), position), 0..6).prop_map(Call::SaveAll),
        2 => key().prop_map(Call::Load),
        1 => Just(Call::List),
    ]
}

fn owner() -> impl Strategy<Value = OwnerPlan> {
    any::<bool>().prop_flat_map(|zombie| {
        let position = if zombie {
            zombie_position().sboxed()
        } else {
            live_position().sboxed()
        };
        prop::collection::vec((0..4u8, call(position)), 1..8)
            .prop_map(move |calls| OwnerPlan { zombie, calls })
    })
}

/// Plans of 2 to 5 owners.
pub fn plans() -> SBoxedStrategy<Plan> {
    prop::collection::vec(owner(), 2..=5)
        .prop_map(|owners| Plan { owners })
        .sboxed()
}

/// A proptest runner that draws `cases` values from `seed`: the same seed, the same values.
pub(crate) fn seeded_runner(cases: u32, seed: u64) -> TestRunner {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    TestRunner::new_with_rng(
        Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        },
        TestRng::from_seed(RngAlgorithm::ChaCha, &bytes),
    )
}
