//! The parked entries' round trips through the pool, counted on the wire (see the parent
//! module).

use checkpoint_conformance::fresh_group;
use checkpoint_mysql::MysqlCheckpointStore;

use super::{
    CountingProxy, Measured, assert_one_connection, assert_pooled, pooled_through, proxy, settle,
};

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
