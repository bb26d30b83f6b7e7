//! The SQL family's tests, written once for every engine of `checkpoint-sql` (feature `sql`).
//!
//! PostgreSQL, MySQL and SQLite are three engines of one store, [`SqlStore<E>`]; so are the
//! integration tests that only use what the store has in common (the `*_in` family on the
//! caller's transaction, the operations API under a tombstone). Each case here is an async
//! function generic over `E: Engine` that panics on a failed assertion, like a test body; an
//! engine's tests call it from one `#[tokio::test]` each, on a [`SqlServer`] of theirs that
//! says what differs between engines:
//!
//! ```ignore
//! // tests/integration/admin.rs of an engine crate
//! #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
//! async fn the_in_family_obeys_the_tombstone() {
//!     checkpoint_conformance::sql_family::admin::the_in_family_obeys_the_tombstone(&support::Server)
//!         .await;
//! }
//! ```
//!
//! A user with an engine of their own (an `impl Engine` for another sqlx database) implements
//! [`SqlServer`] for it and calls every case, beside the kit's `checkpoint_store_tests!`,
//! `exclusive_store_tests!`, `admin_store_tests!` and `lease_store_tests!` over its store.
//!
//! | module | cases |
//! | --- | --- |
//! | [`admin`] | the `*_in` family on a retired subscription; start_at racing saves |
//! | [`batches`] | eight overlapping `save_all` batches at once |
//! | [`faults`] | acknowledged saves survive a crash of a server of the test's own ([`faults::CrashingServer`]); advances under killed sessions ([`faults::KilledSessions`]) |
//! | [`retire_race`] | a retire racing zombies leaves nothing of the retired subscription ([`retire_race::OwnTables`]) |
//! | [`security`] | least privilege: the operator's grants run the operations API, the run-time user's run a subscription and a worker and nothing of it ([`security::LeastPrivilege`]) |
//! | [`transactions`] | an advance waiting on another transaction's row lock; racing transactions with a read model ([`transactions::ReadModels`]) |
//!
//! Every case works in fresh groups ([`fresh_group`](crate::fresh_group)), so the cases run in
//! parallel on one server.

use std::future::Future;

use checkpoint_sql::{Engine, SqlStore};

pub mod admin;
pub mod batches;
pub mod faults;
pub mod retire_race;
pub mod security;
pub mod transactions;

/// What an engine's tests give the SQL family's cases: the store under test and the few
/// statements whose text differs between engines. An implementation writes each method as an
/// `async fn`.
pub trait SqlServer<E: Engine>: Sync {
    /// A store on the server under test, its table migrated (a fresh client each call).
    fn store(&self) -> impl Future<Output = SqlStore<E>> + Send;

    /// How many rows `store`'s table holds for `group`, tombstones included, counted on a
    /// connection of the test's own (`SELECT count(*) FROM <table> WHERE group_name = <group>`
    /// in the engine's quoting).
    fn rows_of(&self, store: &SqlStore<E>, group: &str) -> impl Future<Output = i64> + Send;
}
