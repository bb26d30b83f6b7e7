//! Integration tests of `checkpoint-postgres` against a real server (see `support` for how
//! the server is found), with the module names every backend's tests share (see
//! ARCHITECTURE.md). One test binary for the crate keeps link time down.

mod admin;
mod bad_input;
mod batches;
mod faults;
mod kit;
mod round_trips;
mod security;
mod support;
mod transactions;

// What only this backend has: table names, schemas and migrations.
mod tables;
