//! Integration tests of the Redis store: the whole conformance kit and the Redis-specific
//! checks, against a single server (`REDIS_URL`, or a testcontainers Redis when it is unset
//! and Docker is present) and against a Redis Cluster (`REDIS_CLUSTER_URLS`, comma-separated
//! node URLs; `eval "$(bash scripts/services/redis-cluster.sh up)"` starts one).
//!
//! One binary with modules keeps link time and disk down.

mod bad_input;
mod checks;
mod faults;
mod security;
mod support;

/// Everything against one Redis server.
mod single {
    mod monotonic {
        checkpoint_conformance::checkpoint_store_tests!(crate::support::single_store);
    }
    mod exclusive {
        checkpoint_conformance::exclusive_store_tests!(crate::support::single_store);
    }
    mod redis_specific {
        crate::redis_checks!(crate::support::single_store);
    }
    mod single_server;
}

/// Everything against a Redis Cluster.
mod cluster {
    mod monotonic {
        checkpoint_conformance::checkpoint_store_tests!(crate::support::cluster_store);
    }
    mod exclusive {
        checkpoint_conformance::exclusive_store_tests!(crate::support::cluster_store);
    }
    mod redis_specific {
        crate::redis_checks!(crate::support::cluster_store);
    }
    mod cluster_only;
}
