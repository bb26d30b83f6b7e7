//! The conformance kit over this store: every clause of the contract, one test each, on the
//! shared server; and the monotonic, exclusive and lease kits again under a role that may only
//! SELECT, INSERT and UPDATE the table, SELECT its tombstone table, and use the lease tables and
//! the parked entries' table (an operator's privileges, which the operations API needs, are tested in `security`).

/// Every clause of the monotonic contract.
mod monotonic {
    checkpoint_conformance::checkpoint_store_tests!(crate::support::store);
}

/// Every clause of the exclusive contract (claim and advance).
mod exclusive {
    checkpoint_conformance::exclusive_store_tests!(crate::support::store);
}

/// Every clause of the leases (acquire, renew, release, leave, leases, request_handover), each
/// test with two clients of the server.
mod leases {
    checkpoint_conformance::lease_store_tests!(crate::support::store);
}

/// Every clause of the parked entries (park, parked, retry_parked, unpark).
mod parked {
    checkpoint_conformance::parked_store_tests!(crate::support::store);
}

/// The whole kit again under the least-privileged role (see `security`).
mod runtime_role {
    mod monotonic {
        checkpoint_conformance::checkpoint_store_tests!(crate::security::runtime_role_store);
    }
    mod exclusive {
        checkpoint_conformance::exclusive_store_tests!(crate::security::runtime_role_store);
    }
    /// Every lease operation under the role; the cases' retires and purges by an operator.
    mod leases {
        checkpoint_conformance::lease_store_tests!(crate::security::runtime_role_worker);
    }
    /// A subscription parks, lists, retries and unparks entries: all under the role.
    mod parked {
        checkpoint_conformance::parked_store_tests!(crate::security::runtime_role_store);
    }
}

/// Every clause of the operations API (groups, start_at, retire, retired, purge), and claim
/// and advance of a retired subscription.
mod admin {
    checkpoint_conformance::admin_store_tests!(crate::support::store);
}
