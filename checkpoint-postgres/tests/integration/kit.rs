//! The conformance kit over this store: every clause of the contract, one test each, on the
//! shared server; and all of it again under a role that may only SELECT, INSERT and UPDATE the
//! table.

/// Every clause of the monotonic contract.
mod monotonic {
    checkpoint_conformance::checkpoint_store_tests!(crate::support::store);
}

/// Every clause of the exclusive contract (claim and advance).
mod exclusive {
    checkpoint_conformance::exclusive_store_tests!(crate::support::store);
}

/// The whole kit again under the least-privileged role (see `security`).
mod runtime_role {
    mod monotonic {
        checkpoint_conformance::checkpoint_store_tests!(crate::security::runtime_role_store);
    }
    mod exclusive {
        checkpoint_conformance::exclusive_store_tests!(crate::security::runtime_role_store);
    }
}
