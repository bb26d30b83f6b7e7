//! The integration tests of `checkpoint-sqlite`, in one binary (each test binary costs a link
//! of about 200 MB), with the module names every backend's tests share (see ARCHITECTURE.md).
//!
//! Every test works on a fresh database file of its own under `std::env::temp_dir()`, so no
//! server or environment variable is needed and all tests run in parallel.

mod admin;
mod bad_input;
mod batches;
mod faults;
mod kit;
mod round_trips;
mod support;
mod transactions;

// What only this backend has: a database file that outlives its pools and processes.
mod durability;
mod processes;
mod tables;
