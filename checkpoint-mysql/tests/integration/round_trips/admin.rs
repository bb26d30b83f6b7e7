//! The operations API's round trips through the pool, counted on the wire (see the parent
//! module).

use checkpoint_conformance::fresh_group;
use checkpoint_mysql::MysqlCheckpointStore;

use super::{
    CountingProxy, Measured, assert_one_connection, assert_pooled, pooled_through, proxy, settle,
};

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
