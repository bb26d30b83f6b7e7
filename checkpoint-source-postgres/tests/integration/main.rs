//! Integration tests of `checkpoint-source-postgres` against a real server (see `support` for
//! how it is found). One test binary for the crate keeps link time down.

mod bad_input;
mod growth;
mod heads;
mod kit;
mod limit;
mod reads;
mod stress;
mod support;
mod waking;
