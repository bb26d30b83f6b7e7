//! The integration tests of `checkpoint-sqlite`, in one binary (see the workspace's FACTS.md:
//! each test binary costs a link of about 200 MB).
//!
//! Every test works on a fresh database file of its own under `std::env::temp_dir()`, so no
//! server or environment variable is needed and all tests run in parallel.

mod support;

/// Every clause of the monotonic contract, from the conformance kit.
mod conformance {
    checkpoint_conformance::checkpoint_store_tests!(super::support::store);
}

/// Every clause of the exclusive contract, from the conformance kit.
mod exclusive_conformance {
    checkpoint_conformance::exclusive_store_tests!(super::support::store);
}

mod batches;
mod durability;
mod errors;
mod processes;
mod table;
mod transactions;
