//! Round trips counted on the wire with the kit's `CountingProxy`, not assumed.
//!
//! One round trip is one request→response exchange: with sqlx on MySQL and MariaDB, one
//! statement (`COM_STMT_EXECUTE` of a prepared statement, or `COM_QUERY` of a text one such as
//! `BEGIN`, `COMMIT` and `ROLLBACK`, which sqlx sends as plain text). The store sends no
//! statement of its own beyond those the crate doc lists; every count below is asserted
//! exactly, so the test fails if an operation starts sending more (or fewer) statements.
//!
//! What sqlx does around the statements, measured here:
//!
//! - The first use of a statement on a connection also prepares it (`COM_STMT_PREPARE`, one
//!   more exchange); sqlx caches the prepared statement for the connection's life. Every test
//!   runs each statement once first (warm-up) and counts afterwards.
//! - A large batch (one `JSON_TABLE` parameter of 10,000 checkpoints) is still one exchange,
//!   and so is a large result set (10,002 rows): the server streams the rows after one request.
//! - A transaction's `BEGIN` and its `COMMIT` (or `ROLLBACK`) are one exchange each, so an
//!   operation that the crate doc lists as *n* statements in a transaction takes *n* + 2.
//! - A `CALL` of one of the store's procedures (every lease operation, and `groups`) is one
//!   exchange, prepared like any statement: the server runs the procedure's whole transaction
//!   and sends every result set it produces, then the `CALL`'s own status, as one answer.
//! - Through the store's pool, the caller waits for the operation's exchanges only; then sqlx
//!   0.9 pings the connection as it goes back to the pool (`COM_PING` → OK, in a task of its
//!   own after the call has returned; sqlx has no setting to turn it off; there is no
//!   `COM_RESET_CONNECTION`). The tests run on a current-thread runtime, so that background
//!   task cannot run before the count is read right after the call returns; it is counted
//!   separately once the connection is back in the pool. The store pings before use only a
//!   connection idle for 5 seconds or more, which no call here waits for.

use std::time::{Duration, Instant};

use checkpoint_conformance::fresh_group;
use checkpoint_conformance::round_trips::CountingProxy;
use checkpoint_core::{Checkpoint, CheckpointStore, ExclusiveCheckpointStore, Fingerprint};
use checkpoint_mysql::MysqlCheckpointStore;
use sqlx::{Connection, MySqlConnection};

use crate::support;

const FINGERPRINT: Fingerprint = Fingerprint::from_bytes([0x5a; 32]);

/// The exchange sqlx adds after every call through the pool: the ping of the connection as it
/// goes back to the pool.
const RELEASE_PING: u64 = 1;

async fn proxy() -> CountingProxy {
    let options = support::connect_options();
    let upstream = (options.get_host().to_owned(), options.get_port());
    CountingProxy::start(upstream)
        .await
        .unwrap_or_else(|error| panic!("cannot start the counting proxy: {error}"))
}

fn ten_thousand() -> Vec<Checkpoint> {
    (0..10_000u32)
        .map(|i| Checkpoint::new(format!("sub-{}", i % 100), i / 100, u64::from(i) + 1))
        .collect()
}

/// `batch` with every position one higher, so that saving it changes every row.
fn one_higher(batch: &[Checkpoint]) -> Vec<Checkpoint> {
    batch
        .iter()
        .map(|c| Checkpoint::new(c.subscription.clone(), c.partition, c.position + 1))
        .collect()
}

/// A store with a pool of its own whose connections go through `proxy`, on migrated tables.
async fn pooled_through(proxy: &CountingProxy) -> MysqlCheckpointStore {
    support::store().await; // migrates, directly
    let options = support::connect_options()
        .host("127.0.0.1")
        .port(proxy.local_addr().port());
    MysqlCheckpointStore::connect_with(options).await.unwrap()
}

/// Waits until every connection of the store's pool is back in it: sqlx releases a connection
/// only after its release ping was answered, so the count includes that ping from then on.
async fn settle(store: &MysqlCheckpointStore) {
    let pool = store.pool();
    let deadline = Instant::now() + Duration::from_secs(5);
    while pool.num_idle() < pool.size() as usize {
        assert!(
            Instant::now() < deadline,
            "the pool's connections did not come back"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Anything else the pool might still send shows up in the counts after this.
    tokio::time::sleep(Duration::from_millis(50)).await;
}

/// Measures one call through the pool: `(name, waited, settled, want)`, the exchanges the
/// caller waited for and those once the pool settled, against the statements `want` it sends.
macro_rules! measure_pooled {
    ($measured:ident, $proxy:ident, $store:ident, $name:expr, $want:expr, $call:expr) => {{
        $proxy.reset();
        let result = $call.await;
        let waited = $proxy.round_trips();
        settle(&$store).await;
        $measured.push(($name, waited, $proxy.round_trips(), $want));
        result
    }};
}

/// Asserts every measurement of `measure_pooled!`: the caller waited for exactly `want`
/// exchanges, and the pool added exactly its release ping; and that no measured call opened a
/// connection (whose handshake would be counted too).
fn assert_pooled(
    what: &str,
    proxy: &CountingProxy,
    connections: u64,
    measured: &[(&str, u64, u64, u64)],
) {
    println!(
        "round trips of {what} (name, waited for, with the release ping, statements): {measured:?}"
    );
    assert_eq!(
        proxy.connections(),
        connections,
        "the measured calls opened new connections, so the counts include handshakes"
    );
    let wrong: Vec<_> = measured
        .iter()
        .filter(|(_, waited, settled, want)| waited != want || *settled != want + RELEASE_PING)
        .collect();
    assert!(
        wrong.is_empty(),
        "{what}: (name, waited for, with the release ping, expected) differ: {wrong:?}"
    );
}

/// The measurements of `measure_pooled!`: `(name, waited, settled, want)`.
type Measured = Vec<(&'static str, u64, u64, u64)>;

/// The pool's one connection is the only one the proxy saw (the warm-up prepared every
/// statement on it); its count, for `assert_pooled`.
fn assert_one_connection(proxy: &CountingProxy) -> u64 {
    assert_eq!(
        proxy.connections(),
        1,
        "the pool opened more than one connection"
    );
    proxy.connections()
}

/// The hot path on a connection of the caller's (the `*_in` methods): the statements are all
/// there is. Every operation is one statement except `claim` (the upsert, then the locking
/// read of the row: MySQL has no `RETURNING`) and a refused `advance` (the compare-and-set,
/// then the locking read of where the checkpoint is, for `Moved`).
#[tokio::test(flavor = "current_thread")]
async fn each_operation_on_the_callers_connection_takes_the_statements_the_crate_doc_lists() {
    let proxy = proxy().await;
    let store = support::store().await; // migrates, directly
    let options = support::connect_options()
        .host("127.0.0.1")
        .port(proxy.local_addr().port());
    let mut connection = MySqlConnection::connect_with(&options).await.unwrap();
    let group = fresh_group("round-trips-in");
    let batch = ten_thousand();

    warm_up_connection(&store, &mut connection, &proxy, &group, &batch).await;
    let connections = proxy.connections();

    let measured = measure_on_connection(&store, &mut connection, &proxy, &group, &batch).await;

    println!("round trips on the caller's connection (name, counted, statements): {measured:?}");
    assert_eq!(
        proxy.connections(),
        connections,
        "the measured calls opened new connections"
    );
    let wrong: Vec<_> = measured
        .iter()
        .filter(|(_, got, want)| got != want)
        .collect();
    assert!(
        wrong.is_empty(),
        "on the caller's connection, (name, counted, expected) differ: {wrong:?}"
    );
}

/// Every hot-path statement once on `connection`, checking that a cold one is also prepared.
async fn warm_up_connection(
    store: &MysqlCheckpointStore,
    connection: &mut MySqlConnection,
    proxy: &CountingProxy,
    group: &str,
    batch: &[Checkpoint],
) {
    // Warm-up: the first use of each statement on a connection also prepares it (one more
    // exchange: COM_STMT_PREPARE, then COM_STMT_EXECUTE); sqlx caches the prepared statement
    // for the connection's life. The refused advance prepares its locking read.
    proxy.reset();
    store
        .save_in(&mut *connection, group, "s", 0, 1)
        .await
        .unwrap();
    assert_eq!(proxy.round_trips(), 2, "a cold save: prepare, execute");
    store
        .save_all_in(&mut *connection, group, batch)
        .await
        .unwrap();
    store
        .load_in(&mut *connection, group, "s", 0)
        .await
        .unwrap();
    store.list_in(&mut *connection, group).await.unwrap();
    proxy.reset();
    store
        .claim_in(&mut *connection, group, "x", 0, FINGERPRINT, 10)
        .await
        .unwrap();
    assert_eq!(
        proxy.round_trips(),
        4,
        "a cold claim: prepare and execute the upsert, then the read"
    );
    store
        .advance_in(&mut *connection, group, "x", 0, 10, 11)
        .await
        .unwrap();
    store
        .advance_in(&mut *connection, group, "x", 0, 10, 11)
        .await
        .unwrap_err();
}

/// Each hot-path operation on `connection`, counted, with the checks of what it answered:
/// `(operation, exchanges counted, statements the store sends)`.
async fn measure_on_connection(
    store: &MysqlCheckpointStore,
    connection: &mut MySqlConnection,
    proxy: &CountingProxy,
    group: &str,
    batch: &[Checkpoint],
) -> Vec<(&'static str, u64, u64)> {
    // (operation, exchanges counted, statements the store sends)
    let mut measured = Vec::new();
    macro_rules! measure {
        ($name:expr, $want:expr, $call:expr) => {{
            proxy.reset();
            let result = $call.await;
            // Nothing runs in the background on a connection of one's own; a short pause lets
            // anything late show up in the count all the same.
            tokio::time::sleep(Duration::from_millis(50)).await;
            measured.push(($name, proxy.round_trips(), $want));
            result
        }};
    }
    // The upsert.
    measure!("save", 1, store.save_in(&mut *connection, group, "s", 0, 2)).unwrap();
    // The upsert over JSON_TABLE(?): 10,000 checkpoints in one parameter, one exchange.
    let higher = one_higher(batch);
    measure!(
        "save_all of 10,000",
        1,
        store.save_all_in(&mut *connection, group, &higher)
    )
    .unwrap();
    // One SELECT.
    let loaded = measure!("load", 1, store.load_in(&mut *connection, group, "s", 0)).unwrap();
    assert_eq!(loaded, Some(2));
    // One SELECT; its 10,002 rows stream back after one request.
    let listed = measure!("list of 10,002", 1, store.list_in(&mut *connection, group)).unwrap();
    assert_eq!(listed.len(), 10_002);
    // The upsert, then the SELECT .. FOR UPDATE of the row.
    let claimed = measure!(
        "claim",
        2,
        store.claim_in(&mut *connection, group, "x", 0, FINGERPRINT, 10)
    )
    .unwrap();
    assert_eq!(claimed, 11);
    // The compare-and-set UPDATE, which changes the row.
    measure!(
        "advance",
        1,
        store.advance_in(&mut *connection, group, "x", 0, 11, 12)
    )
    .unwrap();
    // The UPDATE changes nothing, then the SELECT .. FOR UPDATE finds the checkpoint at 12.
    let moved = measure!(
        "advance refused (Moved)",
        2,
        store.advance_in(&mut *connection, group, "x", 0, 11, 13)
    );
    assert!(
        matches!(
            moved,
            Err(checkpoint_core::Error::Moved {
                expected: 11,
                current: Some(12)
            })
        ),
        "{moved:?}"
    );
    measured
}

/// The hot path through the store's pool: the caller waits for the same statements as on a
/// connection of its own, and then the pool pings the connection as it takes it back.
#[tokio::test(flavor = "current_thread")]
async fn each_operation_through_the_pool_takes_its_statements_and_a_release_ping() {
    let proxy = proxy().await;
    let store = pooled_through(&proxy).await;
    let group = fresh_group("round-trips-pool");
    let batch = ten_thousand();

    warm_up_pool(&store, &group, &batch).await;
    let connections = assert_one_connection(&proxy);

    let mut measured = Vec::new();
    measure_pooled_plain_calls(&mut measured, &proxy, &store, &group, &batch).await;
    measure_pooled_exclusive_calls(&mut measured, &proxy, &store, &group).await;

    assert_pooled(
        "the hot path through the pool",
        &proxy,
        connections,
        &measured,
    );
}

/// Every hot-path statement once through the pool.
async fn warm_up_pool(store: &MysqlCheckpointStore, group: &str, batch: &[Checkpoint]) {
    // Warm-up, settling after each call: a call made before the previous connection is back
    // in the pool would open a second connection, where the statements are not prepared yet.
    store.save(group, "s", 0, 1).await.unwrap();
    settle(store).await;
    store.save_all(group, batch).await.unwrap();
    settle(store).await;
    store.load(group, "s", 0).await.unwrap();
    settle(store).await;
    store.list(group).await.unwrap();
    settle(store).await;
    store.claim(group, "x", 0, FINGERPRINT, 10).await.unwrap();
    settle(store).await;
    store.advance(group, "x", 0, 10, 11).await.unwrap();
    settle(store).await;
    store.advance(group, "x", 0, 10, 11).await.unwrap_err();
    settle(store).await;
}

/// save, save_all, load and list through the pool, measured, and the checks of their answers.
async fn measure_pooled_plain_calls(
    measured: &mut Measured,
    proxy: &CountingProxy,
    store: &MysqlCheckpointStore,
    group: &str,
    batch: &[Checkpoint],
) {
    // The upsert.
    measure_pooled!(
        measured,
        proxy,
        store,
        "save",
        1,
        store.save(group, "s", 0, 2)
    )
    .unwrap();
    // The upsert over JSON_TABLE(?), one parameter for the 10,000.
    let higher = one_higher(batch);
    measure_pooled!(
        measured,
        proxy,
        store,
        "save_all of 10,000",
        1,
        store.save_all(group, &higher)
    )
    .unwrap();
    // One SELECT.
    let loaded =
        measure_pooled!(measured, proxy, store, "load", 1, store.load(group, "s", 0)).unwrap();
    assert_eq!(loaded, Some(2));
    // One SELECT, 10,002 rows.
    let listed = measure_pooled!(
        measured,
        proxy,
        store,
        "list of 10,002",
        1,
        store.list(group)
    )
    .unwrap();
    assert_eq!(listed.len(), 10_002);
}

/// claim, advance and a refused advance through the pool, measured, and the checks of their
/// answers.
async fn measure_pooled_exclusive_calls(
    measured: &mut Measured,
    proxy: &CountingProxy,
    store: &MysqlCheckpointStore,
    group: &str,
) {
    // The upsert, then the SELECT .. FOR UPDATE of the row.
    let claimed = measure_pooled!(
        measured,
        proxy,
        store,
        "claim",
        2,
        store.claim(group, "x", 0, FINGERPRINT, 10)
    )
    .unwrap();
    assert_eq!(claimed, 11);
    // The compare-and-set UPDATE.
    measure_pooled!(
        measured,
        proxy,
        store,
        "advance",
        1,
        store.advance(group, "x", 0, 11, 12)
    )
    .unwrap();
    // The UPDATE that changes nothing, then the SELECT .. FOR UPDATE.
    let moved = measure_pooled!(
        measured,
        proxy,
        store,
        "advance refused (Moved)",
        2,
        store.advance(group, "x", 0, 11, 13)
    );
    assert!(
        matches!(
            moved,
            Err(checkpoint_core::Error::Moved {
                expected: 11,
                current: Some(12)
            })
        ),
        "{moved:?}"
    );
}

mod admin;
mod leases;
mod parked;
