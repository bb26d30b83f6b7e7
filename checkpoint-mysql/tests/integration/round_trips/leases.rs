//! The leases' round trips through the pool, counted on the wire (see the parent module): one
//! `CALL` of a stored procedure per operation, granted or refused.

use std::time::Duration;

use checkpoint_conformance::fresh_group;
use checkpoint_mysql::MysqlCheckpointStore;

use super::{
    CountingProxy, Measured, assert_one_connection, assert_pooled, pooled_through, proxy, settle,
};

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
