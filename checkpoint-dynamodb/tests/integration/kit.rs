//! The conformance kit over this store: every clause of the contract, one test each, each on a
//! table of its own (see `support::store`; the lease cases take two clients of one table, see
//! `support::lease_store`).

/// Every clause of the monotonic contract.
mod monotonic {
    checkpoint_conformance::checkpoint_store_tests!(crate::support::store);
}

/// Every clause of the exclusive contract (claim and advance).
mod exclusive {
    checkpoint_conformance::exclusive_store_tests!(crate::support::store);
}

/// Every clause of the operations API (groups, start_at, retire, retired, purge), the
/// concurrent histories of zombies saving while a subscription is retired included.
mod admin {
    checkpoint_conformance::admin_store_tests!(crate::support::store);
}

/// Every clause of the lease contract, each test with two clients (two store instances, each
/// with its own lease clock) of one table.
mod leases {
    checkpoint_conformance::lease_store_tests!(crate::support::lease_store);
}

/// Every clause of the parked-entries contract (park, parked, retry_parked, unpark).
mod parked {
    checkpoint_conformance::parked_store_tests!(crate::support::store);
}
