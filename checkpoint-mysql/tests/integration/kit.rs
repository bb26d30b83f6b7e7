//! The conformance kit over this store: every clause of the contract, one test each, on the
//! shared server; and the kits again under the least-privileged runtime role (see
//! `security`).

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

/// Every clause of the operations API (groups, start_at, retire, retired, purge), and claim
/// and advance of a retired subscription.
mod admin {
    checkpoint_conformance::admin_store_tests!(crate::support::store);
}

/// The whole kit again under the least-privileged user (see `security`).
mod runtime_role {
    mod monotonic {
        checkpoint_conformance::checkpoint_store_tests!(crate::security::runtime_role_store);
    }
    mod exclusive {
        checkpoint_conformance::exclusive_store_tests!(crate::security::runtime_role_store);
    }
    /// Every lease operation under the user; the cases' retires and purges by an operator.
    mod leases {
        checkpoint_conformance::lease_store_tests!(crate::security::runtime_role_worker);
    }
    /// A subscription parks, lists, retries and unparks entries: all under the user.
    mod parked {
        checkpoint_conformance::parked_store_tests!(crate::security::runtime_role_store);
    }
}
