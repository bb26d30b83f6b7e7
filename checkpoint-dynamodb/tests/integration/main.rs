//! Integration tests of the DynamoDB store, in one binary (one link, one shared server), with
//! the module names every backend's tests share (see ARCHITECTURE.md).
//!
//! They need a DynamoDB-compatible server: `eval "$(scripts/services/dynamodb.sh up)"` starts
//! moto and sets `DYNAMODB_ENDPOINT`; without it a Docker engine is used (see `support`).
//! The fault tests (`faults`) also start moto servers of their own, from the virtualenv that
//! `up` installs (see `support::own_moto`). The module `dynalite` runs the whole kit again on a
//! second emulator with real per-item concurrency: `eval "$(scripts/services/dynalite.sh up)"`
//! starts it and sets `DYNALITE_ENDPOINT`; without that variable its tests fail, naming it.

mod bad_input;
mod faults;
mod kit;
mod round_trips;
mod security;
mod support;
mod transactions;

// What only this backend has: `list` over the pages of a `Query`, the table itself, and the
// operations API's create protocol and races.
mod admin;
mod paging;
mod tables;

// The kit again on dynalite, a second emulator without moto's global lock, and what it answers
// differently from moto.
mod dynalite;
