//! The settings a started worker runs with, and the defects a test may plant in it.

use std::time::Duration;

/// A defect the model test plants to prove it catches it (planted only with the feature
/// `test-hooks`, for tests).
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mutation {
    /// The holder believes its leases last the whole duration from when the reply arrived.
    TrustsTheServerDuration,
    /// A handover releases the lease before the committer's final write.
    ReleasesBeforeTheFinalWrite,
    /// The worker never asks an owner to hand a partition over.
    NeverAsks,
    /// The worker claims every free partition, whatever its share.
    ClaimsEverything,
    /// Eager rebalancing (not sticky): when the number of live workers changes, every worker
    /// hands all its partitions over and claims its share again.
    EagerRebalance,
    /// A worker that cannot renew keeps its partitions past its deadline.
    IgnoresTheDeadline,
}

/// The settings a started worker runs with.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub lease_duration: Duration,
    pub renew_interval: Duration,
    pub drain_timeout: Duration,
    pub start_position: u64,
    pub mutation: Option<Mutation>,
}

impl Settings {
    /// Whether the model test planted `mutation` (never without the `test-hooks` feature).
    pub(crate) fn mutated(&self, mutation: Mutation) -> bool {
        cfg!(feature = "test-hooks") && self.mutation == Some(mutation)
    }
}
