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

/// The operations API through the pool. `groups` and `retired` are one `SELECT`; `start_at`,
/// `retire` and `purge` are each one transaction, so `BEGIN` and `COMMIT` (or `ROLLBACK` when
/// refused) around the statements the crate doc lists.
#[tokio::test(flavor = "current_thread")]
async fn the_operations_api_takes_its_statements_and_begin_and_commit() {
    let proxy = proxy().await;
    let store = pooled_through(&proxy).await;
    let group = fresh_group("round-trips-admin");
    warm_up_operations(&store, &group).await;
    let connections = assert_one_connection(&proxy);

    let mut measured = Vec::new();
    measure_start_at_and_refusals(&mut measured, &proxy, &store, &group).await;
    measure_retire_and_purge(&mut measured, &proxy, &store, &group).await;

    assert_pooled("the operations API", &proxy, connections, &measured);
}

/// Every statement of the operations API once through the pool.
async fn warm_up_operations(store: &MysqlCheckpointStore, group: &str) {
    use checkpoint_core::CheckpointAdmin;

    // Warm-up, so every statement is prepared on the pool's one connection (the purge of a
    // retired subscription runs all of purge's statements).
    store.start_at(group, "warm", &[(0, 1)]).await.unwrap();
    settle(store).await;
    store.retire(group, "warm").await.unwrap();
    settle(store).await;
    store.retired(group).await.unwrap();
    settle(store).await;
    store.purge(group, "warm").await.unwrap();
    settle(store).await;
    store.groups().await.unwrap();
    settle(store).await;
}

/// start_at, then the refused start_at and purge, measured, and the checks of their answers.
async fn measure_start_at_and_refusals(
    measured: &mut Measured,
    proxy: &CountingProxy,
    store: &MysqlCheckpointStore,
    group: &str,
) {
    use checkpoint_core::CheckpointAdmin;

    // BEGIN; presence (tombstone? checkpoints?, locking reads); the INSERT over JSON_TABLE(?)
    // of every partition; COMMIT.
    measure_pooled!(
        measured,
        proxy,
        store,
        "start_at",
        4,
        store.start_at(group, "s", &[(0, 5), (1, 6)])
    )
    .unwrap();
    // BEGIN; presence finds checkpoints (Exists); ROLLBACK.
    let exists = measure_pooled!(
        measured,
        proxy,
        store,
        "start_at refused (Exists)",
        3,
        store.start_at(group, "s", &[(2, 5)])
    );
    assert!(
        matches!(exists, Err(checkpoint_core::Error::Exists { .. })),
        "{exists:?}"
    );
    // BEGIN; presence finds checkpoints and no tombstone (NotRetired); ROLLBACK.
    let live = measure_pooled!(
        measured,
        proxy,
        store,
        "purge refused (NotRetired)",
        3,
        store.purge(group, "s")
    );
    assert!(live.is_err(), "{live:?}");
}

/// retire, retired, purge, a purge of nothing and groups, measured, and the checks of their
/// answers.
async fn measure_retire_and_purge(
    measured: &mut Measured,
    proxy: &CountingProxy,
    store: &MysqlCheckpointStore,
    group: &str,
) {
    use checkpoint_core::CheckpointAdmin;

    // BEGIN; the tombstone; DELETE of the checkpoints; COMMIT.
    measure_pooled!(
        measured,
        proxy,
        store,
        "retire",
        4,
        store.retire(group, "s")
    )
    .unwrap();
    // One SELECT.
    let retired =
        measure_pooled!(measured, proxy, store, "retired", 1, store.retired(group)).unwrap();
    assert_eq!(retired, ["s"]);
    // BEGIN; presence finds the tombstone; DELETE of the tombstone, of any checkpoint left, of
    // the leases and of the heartbeats; COMMIT.
    measure_pooled!(measured, proxy, store, "purge", 7, store.purge(group, "s")).unwrap();
    // BEGIN; presence finds nothing; COMMIT.
    measure_pooled!(
        measured,
        proxy,
        store,
        "purge of nothing",
        3,
        store.purge(group, "never")
    )
    .unwrap();
    // One CALL of the groups procedure, whose answer is one result set per group.
    measure_pooled!(measured, proxy, store, "groups", 1, store.groups()).unwrap();
}

/// Every lease procedure's CALL once, so each is prepared on the pool's one connection.
async fn warm_up_leases(store: &MysqlCheckpointStore, group: &str) {
    use checkpoint_core::LeaseStore;

    let duration = Duration::from_secs(30);
    store
        .acquire(group, "warm", "w", &[0], duration)
        .await
        .unwrap();
    settle(store).await;
    store.renew(group, "warm", "w", duration).await.unwrap();
    settle(store).await;
    store
        .request_handover(group, "warm", "v", &[0])
        .await
        .unwrap();
    settle(store).await;
    store.leases(group, "warm").await.unwrap();
    settle(store).await;
    store.release(group, "warm", "w", &[0]).await.unwrap();
    settle(store).await;
    store.leave(group, "warm", "w").await.unwrap();
    settle(store).await;
}

/// The leases through the pool: each operation one `CALL` of its procedure, one exchange,
/// whatever the number of partitions or of leases renewed (1, then 100), refusals included,
/// as the crate doc's Leases table says.
#[tokio::test(flavor = "current_thread")]
async fn each_lease_operation_is_one_call_of_its_procedure() {
    let proxy = proxy().await;
    let store = pooled_through(&proxy).await;
    let group = fresh_group("round-trips-leases");
    let duration = Duration::from_secs(30);
    warm_up_leases(&store, &group).await;
    let connections = assert_one_connection(&proxy);

    let mut measured = Vec::new();
    measure_acquire_and_renew(&mut measured, &proxy, &store, &group, duration).await;
    measure_heartbeat_only_and_refused_renew(&mut measured, &proxy, &store, &group, duration).await;
    measure_handover_leases_release_and_leave(&mut measured, &proxy, &store, &group, duration)
        .await;

    assert_pooled("the leases", &proxy, connections, &measured);
}

/// acquire and renew of 1 and of 100 leases, measured, and the checks of their answers.
async fn measure_acquire_and_renew(
    measured: &mut Measured,
    proxy: &CountingProxy,
    store: &MysqlCheckpointStore,
    group: &str,
    duration: Duration,
) {
    use checkpoint_core::LeaseStore;

    let hundred: Vec<u32> = (1..=100).collect();
    // Every lease operation: one CALL of its procedure, which runs the whole transaction on
    // the server and answers with its result sets.
    let acquired = measure_pooled!(
        measured,
        proxy,
        store,
        "acquire of 1",
        1,
        store.acquire(group, "t", "a", &[0], duration)
    )
    .unwrap();
    assert_eq!(acquired.granted.len(), 1);
    let renewed = measure_pooled!(
        measured,
        proxy,
        store,
        "renew of 1 lease",
        1,
        store.renew(group, "t", "a", duration)
    )
    .unwrap();
    assert_eq!(renewed.len(), 1);
    let acquired = measure_pooled!(
        measured,
        proxy,
        store,
        "acquire of 100",
        1,
        store.acquire(group, "u", "a", &hundred, duration)
    )
    .unwrap();
    assert_eq!(acquired.granted.len(), 100);
    let renewed = measure_pooled!(
        measured,
        proxy,
        store,
        "renew of 100 leases",
        1,
        store.renew(group, "u", "a", duration)
    )
    .unwrap();
    assert_eq!(renewed.len(), 100);
}

/// An acquire of no partition (the heartbeat only) and a refused renew, measured, and the
/// checks of their answers.
async fn measure_heartbeat_only_and_refused_renew(
    measured: &mut Measured,
    proxy: &CountingProxy,
    store: &MysqlCheckpointStore,
    group: &str,
    duration: Duration,
) {
    use checkpoint_core::LeaseStore;

    // No partition asked for: the procedure leaves the grant out.
    let acquired = measure_pooled!(
        measured,
        proxy,
        store,
        "acquire of none (heartbeat only)",
        1,
        store.acquire(group, "u", "b", &[], duration)
    )
    .unwrap();
    assert!(acquired.granted.is_empty());
    // The procedure finds no live heartbeat, rolls back and answers with the status NotHeld.
    let not_held = measure_pooled!(
        measured,
        proxy,
        store,
        "renew refused (NotHeld)",
        1,
        store.renew(group, "u", "nobody", duration)
    );
    assert!(
        matches!(not_held, Err(checkpoint_core::Error::NotHeld { .. })),
        "{not_held:?}"
    );
}

/// An acquire of 3, then request_handover, leases, release (of some held, then of none) and
/// leave, measured, and the checks of their answers.
async fn measure_handover_leases_release_and_leave(
    measured: &mut Measured,
    proxy: &CountingProxy,
    store: &MysqlCheckpointStore,
    group: &str,
    duration: Duration,
) {
    use checkpoint_core::LeaseStore;

    let acquired = measure_pooled!(
        measured,
        proxy,
        store,
        "acquire of 3",
        1,
        store.acquire(group, "s", "a", &[2, 0, 1], duration)
    )
    .unwrap();
    assert_eq!(acquired.granted.len(), 3);
    measure_pooled!(
        measured,
        proxy,
        store,
        "request_handover",
        1,
        store.request_handover(group, "s", "b", &[0, 1])
    )
    .unwrap();
    // The clock, the live leases and the live owners: three result sets of one answer.
    let table = measure_pooled!(
        measured,
        proxy,
        store,
        "leases",
        1,
        store.leases(group, "s")
    )
    .unwrap();
    assert_eq!(table.leases.len(), 3);
    let released = measure_pooled!(
        measured,
        proxy,
        store,
        "release",
        1,
        store.release(group, "s", "a", &[0, 5])
    )
    .unwrap();
    assert_eq!((released.released, released.not_held), (vec![0], vec![5]));
    let released = measure_pooled!(
        measured,
        proxy,
        store,
        "release of none held",
        1,
        store.release(group, "s", "a", &[0])
    )
    .unwrap();
    assert_eq!((released.released, released.not_held), (vec![], vec![0]));
    let left = measure_pooled!(
        measured,
        proxy,
        store,
        "leave",
        1,
        store.leave(group, "s", "a")
    )
    .unwrap();
    assert_eq!(left, [1, 2]);
}

/// The parked entries through the pool: each operation one statement in autocommit mode, as
/// the crate doc's Costs table says.
#[tokio::test(flavor = "current_thread")]
async fn each_parked_operation_is_one_statement() {
    let proxy = proxy().await;
    let store = pooled_through(&proxy).await;
    let group = fresh_group("round-trips-parked");
    warm_up_parked(&store, &group).await;
    let connections = assert_one_connection(&proxy);

    let mut measured = Vec::new();
    measure_parked_operations(&mut measured, &proxy, &store, &group).await;

    assert_pooled("the parked entries", &proxy, connections, &measured);
}

/// Every statement of the parked entries once through the pool.
async fn warm_up_parked(store: &MysqlCheckpointStore, group: &str) {
    use checkpoint_core::parked::{ParkedEntry, ParkedStore};

    // Warm-up, so every statement is prepared on the pool's one connection.
    let warm = ParkedEntry::new("warm", 0, 1, "boom", 1);
    store.park(group, &warm).await.unwrap();
    settle(store).await;
    store.parked(group).await.unwrap();
    settle(store).await;
    store.retry_parked(group, "warm", 0, 1).await.unwrap();
    settle(store).await;
    store.unpark(group, "warm", 0, 1).await.unwrap();
    settle(store).await;
}

/// park (twice), parked, retry_parked and unpark (of an entry, then of none), measured, and the
/// checks of their answers.
async fn measure_parked_operations(
    measured: &mut Measured,
    proxy: &CountingProxy,
    store: &MysqlCheckpointStore,
    group: &str,
) {
    use checkpoint_core::parked::{ParkedEntry, ParkedStore};

    let entry = ParkedEntry::new("s", 3, 41, "no such customer", 5);
    // The upsert, a new entry and then the same one again.
    measure_pooled!(measured, proxy, store, "park", 1, store.park(group, &entry)).unwrap();
    measure_pooled!(
        measured,
        proxy,
        store,
        "park again",
        1,
        store.park(group, &entry)
    )
    .unwrap();
    // One SELECT.
    let parked = measure_pooled!(measured, proxy, store, "parked", 1, store.parked(group)).unwrap();
    assert_eq!(parked, [entry]);
    // One UPDATE, one DELETE, by the entry's key.
    assert!(
        measure_pooled!(
            measured,
            proxy,
            store,
            "retry_parked",
            1,
            store.retry_parked(group, "s", 3, 41)
        )
        .unwrap()
    );
    assert!(
        measure_pooled!(
            measured,
            proxy,
            store,
            "unpark",
            1,
            store.unpark(group, "s", 3, 41)
        )
        .unwrap()
    );
    assert!(
        !measure_pooled!(
            measured,
            proxy,
            store,
            "unpark of none",
            1,
            store.unpark(group, "s", 3, 41)
        )
        .unwrap()
    );
}
