//! Integration tests of the Redis store, with the module names every backend's tests share
//! (see ARCHITECTURE.md): the whole conformance kit and the Redis-specific checks, against a
//! single server (`REDIS_URL`, or a testcontainers Redis when it is unset and Docker is
//! present) and against a Redis Cluster (`REDIS_CLUSTER_URLS`, comma-separated node URLs;
//! `eval "$(bash scripts/services/redis-cluster.sh up)"` starts one). A check that means
//! something on both runs on both, as `<module>::single::<check>` and `<module>::cluster::<check>`.
//!
//! One binary with modules keeps link time and disk down.

mod bad_input;
mod batches;
mod faults;
mod kit;
mod round_trips;
mod security;
mod support;
mod transactions;

// What only this backend has: a cluster, the key and field layout, `list` over `HSCAN` steps,
// the operations API's scans, tombstones and races.
mod admin;
mod cluster;
mod failover;
mod layout;
mod paging;
