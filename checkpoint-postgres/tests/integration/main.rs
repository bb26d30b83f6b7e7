//! Integration tests of `checkpoint-postgres` against a real server (see `support` for how
//! the server is found). One test binary for the crate keeps link time down.

mod bad_input;
mod batches;
mod failures;
mod faults;
mod own_server;
mod round_trips;
mod security;
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

/// The whole kit again under a role that may only SELECT, INSERT and UPDATE the table.
mod runtime_role_conformance {
    checkpoint_conformance::checkpoint_store_tests!(super::security::runtime_role_store);
    mod exclusive {
        checkpoint_conformance::exclusive_store_tests!(super::super::security::runtime_role_store);
    }
}
