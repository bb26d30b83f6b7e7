//! Integration tests of the DynamoDB store, in one binary (one link, one shared server).
//!
//! They need a DynamoDB-compatible server: `eval "$(scripts/services/dynamodb.sh up)"` starts
//! moto and sets `DYNAMODB_ENDPOINT`; without it a Docker engine is used (see `support`).
//! The fault tests (`faults`) also start moto servers of their own, from the virtualenv that
//! `up` installs (see `own_moto`).

mod bad_input;
mod cutting_proxy;
mod errors;
mod faults;
mod own_moto;
mod paging;
mod round_trips;
mod security;
mod support;
mod transactions;

/// Every clause of the monotonic contract, as one test each.
mod conformance {
    checkpoint_conformance::checkpoint_store_tests!(super::support::store);
}

/// Every clause of the exclusive contract, as one test each.
mod exclusive {
    checkpoint_conformance::exclusive_store_tests!(super::support::store);
}
