//! Integration tests of the DynamoDB store, in one binary (one link, one shared server).
//!
//! They need a DynamoDB-compatible server: `eval "$(scripts/services/dynamodb.sh up)"` starts
//! moto and sets `DYNAMODB_ENDPOINT`; without it a Docker engine is used (see `support`).

mod errors;
mod paging;
mod round_trips;
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
