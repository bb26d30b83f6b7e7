//! Round trips counted on the wire with the kit's `CountingProxy`, not assumed.
//!
//! Each operation is one statement, so one request→response exchange. Two views:
//!
//! - on a connection of the caller's (the `*_in` methods), the exchange is all there is;
//! - through the store's pool, the caller waits for that one exchange, and then sqlx 0.9
//!   checks the connection as it goes back to the pool (a `Sync` → `ReadyForQuery` ping, in a
//!   task of its own after the call has returned; sqlx has no setting to turn it off). The
//!   test runs on a current-thread runtime, so that background task cannot run before the
//!   count is read right after the call returns; it is counted separately after it settles.

use std::time::Duration;

use checkpoint_conformance::fresh_group;
use checkpoint_conformance::round_trips::CountingProxy;
use checkpoint_core::{Checkpoint, CheckpointStore, ExclusiveCheckpointStore, Fingerprint};
use checkpoint_postgres::PostgresCheckpointStore;
use sqlx::{Connection, PgConnection};

use crate::support;

mod leases;

const FINGERPRINT: Fingerprint = Fingerprint::from_bytes([0x5a; 32]);

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

/// A store with a pool of its own whose connections go through `proxy`, on a migrated table.
async fn pooled_through(proxy: &CountingProxy) -> PostgresCheckpointStore {
    support::store().await; // migrates, directly
    let options = support::connect_options()
        .host("127.0.0.1")
        .port(proxy.local_addr().port());
    PostgresCheckpointStore::connect_with(options)
        .await
        .unwrap()
}

/// Lets the proxy and any background task of the pool finish, so the count is final.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(150)).await;
}

/// `call` on a reset proxy: its result, and the round trips the caller waited for (read as it
/// returns, then the pool's background check let settle).
async fn waited_for<T>(
    proxy: &CountingProxy,
    call: impl std::future::Future<Output = T>,
) -> (u64, T) {
    proxy.reset();
    let result = call.await;
    let trips = proxy.round_trips();
    settle().await;
    (trips, result)
}

#[tokio::test(flavor = "current_thread")]
async fn each_operation_is_one_round_trip_on_the_callers_connection() {
    let proxy = proxy().await;
    let store = support::store().await; // migrates, directly
    let options = support::connect_options()
        .host("127.0.0.1")
        .port(proxy.local_addr().port());
    let mut connection = PgConnection::connect_with(&options).await.unwrap();
    let group = fresh_group("round-trips-in");
    let batch = ten_thousand();

    // Warm-up: the first use of each statement on a connection also prepares it (one more
    // exchange); sqlx caches the prepared statement for the connection's life.
    store
        .save_in(&mut connection, &group, "s", 0, 1)
        .await
        .unwrap();
    store
        .save_all_in(&mut connection, &group, &batch)
        .await
        .unwrap();
    store
        .load_in(&mut connection, &group, "s", 0)
        .await
        .unwrap();
    store.list_in(&mut connection, &group).await.unwrap();
    store
        .claim_in(&mut connection, &group, "x", 0, FINGERPRINT, 10)
        .await
        .unwrap();
    store
        .advance_in(&mut connection, &group, "x", 0, 10, 11)
        .await
        .unwrap();
    settle().await;

    let mut measured = Vec::new();
    proxy.reset();
    store
        .save_in(&mut connection, &group, "s", 0, 2)
        .await
        .unwrap();
    settle().await;
    measured.push(("save", proxy.round_trips()));

    proxy.reset();
    let higher: Vec<Checkpoint> = batch
        .iter()
        .map(|c| Checkpoint::new(c.subscription.clone(), c.partition, c.position + 1))
        .collect();
    store
        .save_all_in(&mut connection, &group, &higher)
        .await
        .unwrap();
    settle().await;
    measured.push(("save_all of 10,000", proxy.round_trips()));

    proxy.reset();
    let loaded = store
        .load_in(&mut connection, &group, "s", 0)
        .await
        .unwrap();
    settle().await;
    measured.push(("load", proxy.round_trips()));
    assert_eq!(loaded, Some(2));

    proxy.reset();
    let listed = store.list_in(&mut connection, &group).await.unwrap();
    settle().await;
    measured.push(("list", proxy.round_trips()));
    assert_eq!(listed.len(), 10_002);

    proxy.reset();
    let claimed = store
        .claim_in(&mut connection, &group, "x", 0, FINGERPRINT, 10)
        .await
        .unwrap();
    settle().await;
    measured.push(("claim", proxy.round_trips()));
    assert_eq!(claimed, 11);

    proxy.reset();
    store
        .advance_in(&mut connection, &group, "x", 0, 11, 12)
        .await
        .unwrap();
    settle().await;
    measured.push(("advance", proxy.round_trips()));

    proxy.reset();
    let moved = store
        .advance_in(&mut connection, &group, "x", 0, 11, 13)
        .await;
    settle().await;
    measured.push(("advance refused (Moved)", proxy.round_trips()));
    assert!(matches!(
        moved,
        Err(checkpoint_core::Error::Moved {
            expected: 11,
            current: Some(12)
        })
    ));

    println!("round trips on the caller's connection: {measured:?}");
    for (operation, round_trips) in measured {
        assert_eq!(round_trips, 1, "{operation} took {round_trips} round trips");
    }
}

#[tokio::test(flavor = "current_thread")]
async fn each_operation_is_one_round_trip_through_the_pool() {
    let proxy = proxy().await;
    let store = pooled_through(&proxy).await;
    let group = fresh_group("round-trips-pool");
    let batch = ten_thousand();

    // Warm-up, settling after each call: a call made before the previous connection is back
    // in the pool would open a second connection, where the statements are not prepared yet.
    store.save(&group, "s", 0, 1).await.unwrap();
    settle().await;
    store.save_all(&group, &batch).await.unwrap();
    settle().await;
    store.load(&group, "s", 0).await.unwrap();
    settle().await;
    store.list(&group).await.unwrap();
    settle().await;
    store.claim(&group, "x", 0, FINGERPRINT, 10).await.unwrap();
    settle().await;
    store.advance(&group, "x", 0, 10, 11).await.unwrap();
    settle().await;
    assert_eq!(
        proxy.connections(),
        1,
        "the pool opened more than one connection"
    );
    let connections = proxy.connections();

    // (operation, exchanges the caller waited for, exchanges once the pool has settled)
    let mut measured = Vec::new();
    macro_rules! measure {
        ($name:expr, $call:expr) => {{
            proxy.reset();
            let result = $call.await;
            let waited = proxy.round_trips();
            settle().await;
            measured.push(($name, waited, proxy.round_trips()));
            result
        }};
    }
    measure!("save", store.save(&group, "s", 0, 2)).unwrap();
    let higher: Vec<Checkpoint> = batch
        .iter()
        .map(|c| Checkpoint::new(c.subscription.clone(), c.partition, c.position + 1))
        .collect();
    measure!("save_all of 10,000", store.save_all(&group, &higher)).unwrap();
    assert_eq!(
        measure!("load", store.load(&group, "s", 0)).unwrap(),
        Some(2)
    );
    assert_eq!(measure!("list", store.list(&group)).unwrap().len(), 10_002);
    assert_eq!(
        measure!("claim", store.claim(&group, "x", 0, FINGERPRINT, 10)).unwrap(),
        11
    );
    measure!("advance", store.advance(&group, "x", 0, 11, 12)).unwrap();

    println!(
        "round trips through the pool (waited for, with the pool's release check): {measured:?}"
    );
    assert_eq!(
        proxy.connections(),
        connections,
        "the measured calls opened new connections, so the counts include handshakes"
    );
    for (operation, waited, settled) in measured {
        assert_eq!(
            waited, 1,
            "{operation}: the caller waited for {waited} round trips"
        );
        assert_eq!(
            settled, 2,
            "{operation}: expected the statement plus sqlx's release check, got {settled}"
        );
    }
}

/// The operations API through the pool: what the crate doc's table says each call waits for.
/// `start_at` is a transaction (`BEGIN`, the name's advisory lock, the insert, `COMMIT`) so
/// that concurrent calls of one name take turns; `retire` one of five (`BEGIN`, the lock
/// timeout, `LOCK TABLE`, tombstone and delete, `COMMIT`).
#[tokio::test(flavor = "current_thread")]
async fn the_operations_api_takes_the_round_trips_the_crate_doc_states() {
    use checkpoint_core::CheckpointAdmin;

    let proxy = proxy().await;
    let store = pooled_through(&proxy).await;
    let group = fresh_group("round-trips-admin");
    // Warm-up, so every statement is prepared on the pool's one connection.
    store.start_at(&group, "warm", &[(0, 1)]).await.unwrap();
    settle().await;
    store.retire(&group, "warm").await.unwrap();
    settle().await;
    store.retired(&group).await.unwrap();
    settle().await;
    store.purge(&group, "warm").await.unwrap();
    settle().await;
    store.groups().await.unwrap();
    settle().await;
    let connections = proxy.connections();

    let mut measured = Vec::new();
    macro_rules! measure {
        ($name:expr, $want:expr, $call:expr) => {{
            proxy.reset();
            let result = $call.await;
            measured.push(($name, proxy.round_trips(), $want));
            settle().await;
            result
        }};
    }
    measure!(
        "start_at",
        4,
        store.start_at(&group, "s", &[(0, 5), (1, 6)])
    )
    .unwrap();
    measure!(
        "start_at refused (Exists)",
        4,
        store.start_at(&group, "s", &[(2, 5)])
    )
    .unwrap_err();
    measure!("retire", 5, store.retire(&group, "s")).unwrap();
    measure!("retired", 1, store.retired(&group)).unwrap();
    measure!("purge", 1, store.purge(&group, "s")).unwrap();
    measure!("groups", 1, store.groups()).unwrap();
    println!("round trips of the operations API (waited for): {measured:?}");
    assert_eq!(
        proxy.connections(),
        connections,
        "the measured calls opened new connections, so the counts include handshakes"
    );
    for (operation, got, want) in measured {
        assert_eq!(
            got, want,
            "{operation}: the caller waited for {got} round trips"
        );
    }
}

/// The parked entries through the pool: each operation one statement, so the caller waits for
/// one exchange, as the crate doc's table says.
#[tokio::test(flavor = "current_thread")]
async fn each_parked_operation_is_one_round_trip_through_the_pool() {
    use checkpoint_core::parked::{ParkedEntry, ParkedStore};

    let proxy = proxy().await;
    let store = pooled_through(&proxy).await;
    let group = fresh_group("round-trips-parked");
    // Warm-up, so every statement is prepared on the pool's one connection.
    let warm = ParkedEntry::new("warm", 0, 1, "boom", 1);
    store.park(&group, &warm).await.unwrap();
    settle().await;
    store.parked(&group).await.unwrap();
    settle().await;
    store.retry_parked(&group, "warm", 0, 1).await.unwrap();
    settle().await;
    store.unpark(&group, "warm", 0, 1).await.unwrap();
    settle().await;
    let connections = proxy.connections();

    let mut measured = Vec::new();
    macro_rules! measure {
        ($name:expr, $call:expr) => {{
            proxy.reset();
            let result = $call.await;
            measured.push(($name, proxy.round_trips()));
            settle().await;
            result
        }};
    }
    let entry = ParkedEntry::new("s", 3, 41, "no such customer", 5);
    measure!("park", store.park(&group, &entry)).unwrap();
    measure!("park again", store.park(&group, &entry)).unwrap();
    let parked = measure!("parked", store.parked(&group)).unwrap();
    assert_eq!(parked, [entry]);
    assert!(measure!("retry_parked", store.retry_parked(&group, "s", 3, 41)).unwrap());
    assert!(measure!("unpark", store.unpark(&group, "s", 3, 41)).unwrap());
    assert!(!measure!("unpark of none", store.unpark(&group, "s", 3, 41)).unwrap());
    println!("round trips of the parked entries (waited for): {measured:?}");
    assert_eq!(
        proxy.connections(),
        connections,
        "the measured calls opened new connections, so the counts include handshakes"
    );
    for (operation, got) in measured {
        assert_eq!(
            got, 1,
            "{operation}: the caller waited for {got} round trips"
        );
    }
}
