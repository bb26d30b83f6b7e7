//! Integration tests of the NATS JetStream source against the machine's server: `NATS_URL`
//! (default `nats://127.0.0.1:4222`, JetStream on). A test fails when it cannot connect. Each
//! test makes a stream of its own under a random name and deletes it.
//!
//! The restart test stops and starts the server (`pgrep -x nats-server`, SIGTERM, then
//! [`support::START_SERVER`]); the other tests of this binary hold a shared lock it takes
//! exclusively, so none of them runs meanwhile.
//!
//! The cluster test reads `NATS_CLUSTER_URLS` (default the three servers
//! `scripts/services/nats-cluster.sh up` starts on 4231-4233) and kills and restarts one of
//! them through that script; it touches no other test's server.
//!
//! One binary with modules keeps link time and disk down.

mod bad_input;
mod cluster;
mod concurrency;
mod growth;
mod history;
mod kit;
mod reads;
mod restart;
mod support;
mod waking;
