//! Integration tests of `checkpoint-mysql` against a real server (see `support` for how the
//! server is found), with the module names every backend's tests share (see ARCHITECTURE.md).
//! One test binary for the crate keeps link time down.

mod admin;
mod bad_input;
mod batches;
mod faults;
mod kit;
mod procedures;
mod round_trips;
mod security;
mod stress;
mod support;
mod transactions;
