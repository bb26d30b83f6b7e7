//! The conformance kit over this store, against one Redis server (`single`) and against a
//! Redis Cluster (`cluster`): every clause of the contract, of the operations API, of leases
//! and of parked entries, one test each.

/// Everything against one Redis server.
mod single {
    mod monotonic {
        checkpoint_conformance::checkpoint_store_tests!(crate::support::single_store);
    }
    mod exclusive {
        checkpoint_conformance::exclusive_store_tests!(crate::support::single_store);
    }
    mod admin {
        checkpoint_conformance::admin_store_tests!(crate::support::single_store);
    }
    mod leases {
        checkpoint_conformance::lease_store_tests!(crate::support::single_store);
    }
    mod parked {
        checkpoint_conformance::parked_store_tests!(crate::support::single_store);
    }
}

/// Everything against a Redis Cluster.
mod cluster {
    mod monotonic {
        checkpoint_conformance::checkpoint_store_tests!(crate::support::cluster_store);
    }
    mod exclusive {
        checkpoint_conformance::exclusive_store_tests!(crate::support::cluster_store);
    }
    mod admin {
        checkpoint_conformance::admin_store_tests!(crate::support::cluster_store);
    }
    mod leases {
        checkpoint_conformance::lease_store_tests!(crate::support::cluster_store);
    }
    mod parked {
        checkpoint_conformance::parked_store_tests!(crate::support::cluster_store);
    }
}
