//! The second emulator: dynalite, named by `DYNALITE_ENDPOINT`.
//!
//! `eval "$(bash scripts/services/dynalite.sh up)"` installs it with npm, starts it and sets
//! `DYNALITE_ENDPOINT=http://127.0.0.1:8766`. There is no container image of it to fall back on,
//! so without the variable every test that needs it fails with a message naming the variable
//! (through the kit's `harness::server_url`); none is skipped.
//!
//! dynalite runs requests concurrently with a lock per item (no lock around the whole server, as
//! moto needs), so the kit's concurrency cases and histories run here against real per-item
//! concurrency. It has no `TransactWriteItems` and never returns the old item of a failed
//! condition; see the crate documentation for which server covers what.

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::config::retry::RetryConfig;
use checkpoint_dynamodb::DynamoDbCheckpointStore;

use super::without_returned_items::WithoutReturnedItems;

/// The environment variable with dynalite's endpoint URL.
pub const ENDPOINT_VAR: &str = "DYNALITE_ENDPOINT";

/// dynalite's endpoint: `DYNALITE_ENDPOINT`, else a failure that names it.
pub fn endpoint() -> String {
    checkpoint_conformance::harness::server_url(ENDPOINT_VAR, || async {
        Err::<(String, ()), _>(
            "dynalite has no container image here, so Docker does not help: \
             `eval \"$(bash scripts/services/dynalite.sh up)\"` installs and starts it and sets \
             DYNALITE_ENDPOINT=http://127.0.0.1:8766",
        )
    })
}

/// A client for dynalite with the SDK's standard retries.
pub fn client() -> Client {
    super::client_for(&endpoint())
}

/// A store on dynalite, on a table of its own, created: the factory of the kit on dynalite.
///
/// A table per test as on moto (see `support::store`), although dynalite reads only the
/// group's items for a `Query`: every case stays apart from the others whatever the server.
/// Without the store's timeout as on moto, so that a loaded machine running the cases side by
/// side never fails one for time; the client's attempt timeout bounds each request.
pub async fn store() -> DynamoDbCheckpointStore {
    super::store_with(client(), &format!("{ENDPOINT_VAR}={}", endpoint())).await
}

/// The lease kit's factory on dynalite: two clients of one table per test (see
/// `support::lease_store`).
pub async fn lease_store() -> DynamoDbCheckpointStore {
    let endpoint = endpoint();
    super::paired(&endpoint, client, &format!("{ENDPOINT_VAR}={endpoint}")).await
}

/// A store on dynalite whose client also drops the item of every `UpdateItem` reply (see
/// `without_returned_items`): every claim then takes its fallback read too.
pub async fn store_without_returned_items() -> DynamoDbCheckpointStore {
    let config = super::config_for(&endpoint(), RetryConfig::standard())
        .interceptor(WithoutReturnedItems)
        .build();
    super::store_with(
        Client::from_conf(config),
        &format!("{ENDPOINT_VAR}={} (without returned items)", endpoint()),
    )
    .await
}
