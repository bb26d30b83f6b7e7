//! The cases of the kit, one public async function per clause of the contract.
//!
//! Call them directly from any test harness, or let [`checkpoint_store_tests!`] and
//! [`exclusive_store_tests!`] turn each into a named test.
//!
//! [`checkpoint_store_tests!`]: crate::checkpoint_store_tests
//! [`exclusive_store_tests!`]: crate::exclusive_store_tests

mod exclusive;
mod monotonic;

pub use exclusive::*;
pub use monotonic::*;
