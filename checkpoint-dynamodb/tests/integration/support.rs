//! Where the tests find a server, and the clients and stores they share.
//!
//! `DYNAMODB_ENDPOINT` (read at run time) names a DynamoDB-compatible server, for example
//! `http://127.0.0.1:8765` as printed by `scripts/services/dynamodb.sh up`. Without it, DynamoDB
//! Local is started with testcontainers when a Docker engine is reachable (through the kit's
//! `harness::server_url`). With neither, every test that needs a server fails and says how to
//! provide one.
//!
//! Servers of a test's own (for faults) are in `own_moto` (connections are cut with the kit's
//! `proxy::Proxy`); the second emulator, dynalite (`DYNALITE_ENDPOINT`), is in `dynalite`; a
//! client that drops the items replies carry is in `without_returned_items`; one that counts
//! the items its reads read, in `items_read`.

use std::time::Duration;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use checkpoint_conformance::round_trips::CountingProxy;
use checkpoint_conformance::{error_chain, fresh_group};
use checkpoint_core::CheckpointStore;
use checkpoint_dynamodb::DynamoDbCheckpointStore;

pub mod dynalite;
pub mod items_read;
pub mod own_moto;
pub mod without_returned_items;

/// The environment variable with the server's endpoint URL.
pub const ENDPOINT_VAR: &str = "DYNAMODB_ENDPOINT";

/// A table name for tests that never reach a server.
pub const TABLE: &str = "checkpoints_unreached";

/// The endpoint of the server under test: `DYNAMODB_ENDPOINT`, or a container started once per
/// test binary. Panics with instructions when there is neither.
pub fn endpoint() -> String {
    checkpoint_conformance::harness::server_url(ENDPOINT_VAR, start_container)
}

/// Starts DynamoDB Local in Docker; its endpoint, and the container to keep alive.
async fn start_container() -> Result<(String, impl Sized), String> {
    use testcontainers::runners::AsyncRunner;
    use testcontainers_modules::dynamodb_local::DynamoDb;

    let started = async {
        let container = DynamoDb::default()
            .start()
            .await
            .map_err(|error| error.to_string())?;
        let host = container.get_host().await.map_err(|e| e.to_string())?;
        let port = container
            .get_host_port_ipv4(8000)
            .await
            .map_err(|e| e.to_string())?;
        Ok::<_, String>((format!("http://{host}:{port}"), container))
    };
    started.await.map_err(|error| {
        format!(
            "{error}; `eval \"$(scripts/services/dynamodb.sh up)\"` starts moto and sets \
             {ENDPOINT_VAR}=http://127.0.0.1:8765"
        )
    })
}

/// A client for `endpoint` with static test credentials and the SDK's standard retries.
pub fn client_for(endpoint: &str) -> Client {
    client_with(endpoint, RetryConfig::standard())
}

/// A client for `endpoint` that never retries, so error tests do not wait for backoff.
pub fn client_without_retries(endpoint: &str) -> Client {
    client_with(endpoint, RetryConfig::disabled())
}

fn client_with(endpoint: &str, retry: RetryConfig) -> Client {
    Client::from_conf(config_for(endpoint, retry).build())
}

/// The configuration of every test client: `endpoint`, static test credentials, `retry`, and
/// attempt timeouts (so a stuck request fails instead of hanging a test).
pub fn config_for(endpoint: &str, retry: RetryConfig) -> aws_sdk_dynamodb::config::Builder {
    aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "static"))
        .retry_config(retry)
        .timeout_config(
            aws_sdk_dynamodb::config::timeout::TimeoutConfig::builder()
                .connect_timeout(Duration::from_secs(5))
                .operation_attempt_timeout(Duration::from_secs(30))
                .build(),
        )
}

/// A store on a table of its own, created: the factory of the conformance tests.
///
/// A table per test, not one shared table: moto answers a `Query` by scanning every item of the
/// table, so in a shared table each `list` grows slower with everything earlier tests saved
/// (five seconds per page after a few runs). Tables are cheap on an emulator and vanish when
/// it stops (`scripts/services/dynamodb.sh down`).
///
/// Without the store's timeout: moto runs one request at a time and scans a whole table per
/// `Query` page (seconds for the 10,000-checkpoint case), so a request of a test running beside
/// it can wait longer than `DEFAULT_TIMEOUT` for its turn. The client's attempt timeout bounds
/// every request instead.
pub async fn store() -> DynamoDbCheckpointStore {
    let endpoint = endpoint();
    store_with(client_for(&endpoint), &format!("{ENDPOINT_VAR}={endpoint}")).await
}

/// A store through `client` on a table of its own, created, without the store's timeout (see
/// [`store`]); `server` says which server in a failure.
pub async fn store_with(client: Client, server: &str) -> DynamoDbCheckpointStore {
    let store = DynamoDbCheckpointStore::new(client)
        .with_table(&fresh_group("table"))
        .expect("a valid table name")
        .without_timeout();
    store
        .create_table()
        .await
        .unwrap_or_else(|error| panic!("create_table on {server} failed: {}", error_chain(&error)));
    store
}

/// The factory of the lease kit, which calls it twice per test for two clients of one store:
/// the first call of a test creates a table of its own, the second returns another client
/// (another store instance, with its own lease clock: another process's worth) on that table.
///
/// The kit runs both calls on the test's thread (`block_on`), so a thread-local pairs them.
pub async fn lease_store() -> DynamoDbCheckpointStore {
    let endpoint = endpoint();
    paired(
        &endpoint,
        || client_for(&endpoint),
        &format!("{ENDPOINT_VAR}={endpoint}"),
    )
    .await
}

thread_local! {
    /// The table of the first client of the test running on this thread, by server, until the
    /// second client takes it.
    static FIRST_CLIENT_TABLE: std::cell::RefCell<std::collections::HashMap<String, String>> =
        std::cell::RefCell::default();
}

/// A store for the lease kit on `endpoint`: a new table on odd calls, the same table through a
/// new client on even ones (see [`lease_store`]).
pub async fn paired(
    endpoint: &str,
    client: impl Fn() -> Client,
    server: &str,
) -> DynamoDbCheckpointStore {
    let waiting = FIRST_CLIENT_TABLE.with(|tables| tables.borrow_mut().remove(endpoint));
    match waiting {
        Some(table) => DynamoDbCheckpointStore::new(client())
            .with_table(&table)
            .expect("a valid table name")
            .without_timeout(),
        None => {
            let store = store_with(client(), server).await;
            FIRST_CLIENT_TABLE.with(|tables| {
                tables
                    .borrow_mut()
                    .insert(endpoint.to_owned(), store.table().to_owned())
            });
            store
        }
    }
}

/// Another client (another store instance, with its own lease clock) of the table `table` on
/// the server under test, straight (not through a proxy).
pub fn store_on(table: &str) -> DynamoDbCheckpointStore {
    DynamoDbCheckpointStore::new(client_for(&endpoint()))
        .with_table(table)
        .expect("a valid table name")
        .without_timeout()
}

/// The `host:port` of the endpoint, for a proxy in front of it.
pub fn endpoint_address() -> String {
    let endpoint = endpoint();
    let without_scheme = endpoint
        .strip_prefix("http://")
        .unwrap_or_else(|| panic!("{ENDPOINT_VAR} must be an http:// URL, got {endpoint}"));
    without_scheme.trim_end_matches('/').to_owned()
}

/// A store on a table of its own whose requests go through a counting proxy, warmed up (the
/// client resolves its endpoint and credentials on first use), and the proxy.
pub async fn counted_store() -> (DynamoDbCheckpointStore, CountingProxy) {
    let table = store().await.table().to_owned();
    let proxy = CountingProxy::start(endpoint_address())
        .await
        .unwrap_or_else(|error| panic!("cannot start the counting proxy: {error}"));
    let store = DynamoDbCheckpointStore::new(client_for(&format!("http://{}", proxy.local_addr())))
        .with_table(&table)
        .expect("a valid table name");
    store
        .load(&fresh_group("warm-up"), "s", 0)
        .await
        .unwrap_or_else(|error| panic!("warm-up load failed: {}", error_chain(&error)));
    proxy.reset();
    (store, proxy)
}
