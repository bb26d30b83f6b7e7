//! A conformance kit that proves a checkpoint store keeps the contract.
//!
//! Every clause of the contract is a public async case in [`cases`], taking any
//! [`CheckpointStore`] (or [`ExclusiveCheckpointStore`], or [`CheckpointAdmin`]) and returning
//! [`CaseResult`]. Three macros turn all of them into named tests for a store factory, so
//! `cargo test` lists each clause your store passed or failed:
//!
//! ```
//! use checkpoint_core::InMemoryCheckpointStore;
//!
//! // Your store here; a fresh client each call (each test has its own runtime).
//! async fn store() -> InMemoryCheckpointStore {
//!     InMemoryCheckpointStore::new()
//! }
//!
//! mod monotonic {
//!     checkpoint_conformance::checkpoint_store_tests!(super::store);
//! }
//! mod exclusive {
//!     checkpoint_conformance::exclusive_store_tests!(super::store);
//! }
//! // The operations API: groups, start_at, retire, retired, purge, and what a retired
//! // subscription does to save, save_all, claim and advance. `admin_store_tests!(super::store,
//! // without_exclusive)` leaves out claim and advance, for a store without the exclusive mode.
//! mod admin {
//!     checkpoint_conformance::admin_store_tests!(super::store);
//! }
//! # fn main() {}
//! ```
//!
//! The same cases are in tables ([`MONOTONIC_CASES`], [`EXCLUSIVE_CASES`], [`ADMIN_CASES`],
//! [`EXCLUSIVE_ADMIN_CASES`]) for a harness that runs them itself:
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use checkpoint_conformance::ADMIN_CASES;
//! use checkpoint_core::InMemoryCheckpointStore;
//!
//! for case in ADMIN_CASES {
//!     let store = InMemoryCheckpointStore::new();
//!     if let Err(failure) = (case.run)(&store).await {
//!         panic!("{}: {failure}", case.name);
//!     }
//! }
//! # });
//! ```
//!
//! Beside the deterministic cases, [`cases::concurrent_histories`] generates histories of
//! owners and zombie owners calling the store at the same time (with proptest), records when
//! each call started and returned, and checks the whole history against a linearizable
//! max-register with [`history::HistoryChecker`]. `CHECKPOINT_HISTORIES` sets how many
//! histories run (default 64) and `CHECKPOINT_SEED` replays a failing run.
//! [`cases::retire_during_concurrent_histories`] runs such histories while one of the two
//! subscriptions is retired at a random moment ([`history::retire`]): once the retire
//! returned, no `load` or `list` may show it again, whatever its zombies save, and the other
//! subscription must stay a max-register; `CHECKPOINT_RETIRE_HISTORIES` sets how many
//! (default 32).
//!
//! Every case works in fresh random groups ([`fresh_group`]), so all cases can run in parallel
//! against one shared server and leave nothing that disturbs another run.
//!
//! [`proxy::Proxy`] is the kit's one TCP proxy for every test that must see or break the wire:
//! it counts request–response exchanges (as [`round_trips::CountingProxy`], for tests that
//! assert how many round trips an operation takes), and cuts, freezes, delays or black-holes
//! the connections to the server.
//!
//! [`sources`] is the kit for log sources ([`Source`](checkpoint_core::source::Source)):
//! `source_tests!` runs its cases, above all the no-late-arrival clause under concurrent
//! writers, over a log the backend's tests can write to ([`sources::SourceLog`]).
//!
//! The `harness` feature adds what a backend's own integration tests share: the server under
//! test from an environment variable or a container, and the bad-input driver over every entry
//! point (`harness`).
//!
//! The `sql` feature adds `sql_family`: the integration tests every engine of
//! `checkpoint-sql`'s `SqlStore` shares, generic over the engine, for the engine's own tests to
//! call through a small `SqlServer` of theirs (and, per concern, `LeastPrivilege`,
//! `CrashingServer`, `ReadModels`, ...).
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod audited;
pub mod cases;
mod failure;
mod group;
#[cfg(feature = "harness")]
pub mod harness;
pub mod history;
pub mod inputs;
mod macros;
pub mod proxy;
pub mod recovery;
pub mod round_trips;
pub mod sources;
#[cfg(feature = "sql")]
pub mod sql_family;

pub use audited::{Audit, AuditedStore, ErrorTally, audited};
pub use checkpoint_core::{CheckpointAdmin, CheckpointStore, ExclusiveCheckpointStore};
pub use failure::{CaseResult, Failure, error_chain};
pub use group::fresh_group;

/// A case by name, for harnesses that run the kit themselves (see [`MONOTONIC_CASES`]).
pub struct Case<S: ?Sized + 'static> {
    /// The case's name, the same as its function in [`cases`].
    pub name: &'static str,
    /// Runs the case against a store.
    pub run: for<'a> fn(&'a S) -> __private::BoxFuture<'a, CaseResult>,
}

impl<S: ?Sized> std::fmt::Debug for Case<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Case").field("name", &self.name).finish()
    }
}

/// Every monotonic case, in the order the macro lists them.
pub const MONOTONIC_CASES: &[Case<dyn CheckpointStore>] =
    __monotonic_cases! { __case_table!(dyn CheckpointStore) };

/// Every exclusive case, in the order the macro lists them.
pub const EXCLUSIVE_CASES: &[Case<dyn ExclusiveCheckpointStore>] =
    __exclusive_cases! { __case_table!(dyn ExclusiveCheckpointStore) };

/// Every case of the operations API that needs only [`CheckpointAdmin`], in the order the
/// macro lists them.
pub const ADMIN_CASES: &[Case<dyn CheckpointAdmin>] =
    __admin_cases! { __case_table!(dyn CheckpointAdmin) };

/// Every case of the operations API that also claims and advances (on a retired
/// subscription), in the order the macro lists them.
pub const EXCLUSIVE_ADMIN_CASES: &[Case<dyn ExclusiveAdmin>] =
    __exclusive_admin_cases! { __case_table!(dyn ExclusiveAdmin) };

/// A store with both the exclusive mode and the operations API, as one trait object for
/// [`EXCLUSIVE_ADMIN_CASES`]; every such store is one.
pub trait ExclusiveAdmin: ExclusiveCheckpointStore + CheckpointAdmin {}

impl<S: ExclusiveCheckpointStore + CheckpointAdmin + ?Sized> ExclusiveAdmin for S {}

#[doc(hidden)]
pub mod __private {
    use std::future::Future;

    pub use futures_util::future::LocalBoxFuture as BoxFuture;

    use crate::CaseResult;

    /// Runs one case in a runtime of its own and panics, as a failing test must, with the
    /// case's message when the store broke the clause, naming the groups the case worked in
    /// (the last is where it failed), so a rare failure in CI can be looked up on the server.
    #[allow(clippy::panic, clippy::expect_used)]
    pub fn run_case(name: &str, case: impl Future<Output = CaseResult>) {
        /// Enough to find the failing group; a history case makes hundreds.
        const SHOWN: usize = 3;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("building a tokio runtime for the case");
        let (result, groups) = runtime.block_on(crate::group::noting_groups(case));
        if let Err(failure) = result {
            let shown = &groups[groups.len().saturating_sub(SHOWN)..];
            let earlier = groups.len() - shown.len();
            panic!(
                "contract clause `{name}` broken:\n{failure}\ngroups of this case, the last one last: {shown:?}{}",
                if earlier > 0 {
                    format!(" (and {earlier} earlier)")
                } else {
                    String::new()
                }
            );
        }
    }
}

/// The README's example, compiled and run as a doc test so it cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
