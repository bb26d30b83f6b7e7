//! The conformance kit over this store: every clause of the contract, one test each, on a
//! fresh database file per test.

/// Every clause of the monotonic contract.
mod monotonic {
    checkpoint_conformance::checkpoint_store_tests!(crate::support::store);
}

/// Every clause of the exclusive contract (claim and advance).
mod exclusive {
    checkpoint_conformance::exclusive_store_tests!(crate::support::store);
}

/// Every clause of the operations API (groups, start_at, retire, retired, purge), and claim
/// and advance of a retired subscription.
mod admin {
    checkpoint_conformance::admin_store_tests!(crate::support::store);
}

/// Every clause of the lease contract, on two clients (two pools, as two processes would have)
/// of one database file per test.
mod leases {
    checkpoint_conformance::lease_store_tests!(crate::support::lease_store);
}

/// Every clause of the parked entries (park, parked, retry_parked, unpark).
mod parked {
    checkpoint_conformance::parked_store_tests!(crate::support::store);
}
