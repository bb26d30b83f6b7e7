//! The integration tests of `checkpoint-source-sqlite`, in one binary: the source kit, setup
//! errors, waking, and several processes appending to one file while a reader checks the
//! clause. Every test works on a fresh database file under `std::env::temp_dir()`, so no
//! server or environment variable is needed and all tests run in parallel.

mod group_commit;
mod growth;
mod heads;
mod kit;
mod processes;
mod setup;
mod support;
mod throughput;
mod waking;
