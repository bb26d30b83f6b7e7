//! Integration tests of `checkpoint-postgres` against a real server (see `support` for how
//! the server is found). One test binary for the crate keeps link time down.

mod batches;
mod failures;
mod round_trips;
mod support;
mod tables;
mod transactions;

/// Every clause of the monotonic contract, from the conformance kit.
mod conformance {
    checkpoint_conformance::checkpoint_store_tests!(super::support::store);
}

/// Every clause of the exclusive contract (claim and advance), from the conformance kit.
mod exclusive_conformance {
    checkpoint_conformance::exclusive_store_tests!(super::support::store);
}
