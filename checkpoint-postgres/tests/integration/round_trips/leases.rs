//! The leases' round trips through the pool, counted on the wire (see the parent module): one
//! statement per operation, so one exchange the caller waits for, granted or refused.

use std::time::Duration;

use checkpoint_conformance::fresh_group;
use checkpoint_postgres::PostgresCheckpointStore;

use super::{pooled_through, proxy, settle, waited_for};
use crate::support;

/// Every lease statement once, so each is prepared on the pool's one connection.
async fn warm_up_leases(store: &PostgresCheckpointStore, group: &str) {
    use checkpoint_core::LeaseStore;

    let duration = Duration::from_secs(30);
    store
        .acquire(group, "warm", "w", &[0], duration)
        .await
        .unwrap();
    settle().await;
    store.renew(group, "warm", "w", duration).await.unwrap();
    settle().await;
    store
        .request_handover(group, "warm", "v", &[0])
        .await
        .unwrap();
    settle().await;
    store.leases(group, "warm").await.unwrap();
    settle().await;
    store.release(group, "warm", "w", &[0]).await.unwrap();
    settle().await;
    store.leave(group, "warm", "w").await.unwrap();
    settle().await;
}

/// The leases through the pool: each operation one statement, so the caller waits for one
/// exchange, whatever the number of partitions or of leases renewed (1, then 100).
#[tokio::test(flavor = "current_thread")]
async fn each_lease_operation_is_one_round_trip_through_the_pool() {
    use checkpoint_core::LeaseStore;

    let proxy = proxy().await;
    let store = pooled_through(&proxy).await;
    let group = fresh_group("round-trips-leases");
    let duration = Duration::from_secs(30);
    warm_up_leases(&store, &group).await;
    let connections = proxy.connections();
    let hundred: Vec<u32> = (1..=100).collect();

    let mut measured = Vec::new();
    macro_rules! measure {
        ($name:expr, $call:expr) => {{
            let (trips, result) = waited_for(&proxy, $call).await;
            measured.push(($name, trips));
            result
        }};
    }
    let acquired = measure!(
        "acquire of 3",
        store.acquire(&group, "s", "a", &[2, 0, 1], duration)
    )
    .unwrap();
    assert_eq!(acquired.granted.len(), 3);
    measure!(
        "acquire of 1",
        store.acquire(&group, "t", "a", &[0], duration)
    )
    .unwrap();
    let renewed = measure!("renew of 1 lease", store.renew(&group, "t", "a", duration)).unwrap();
    assert_eq!(renewed.len(), 1);
    measure!(
        "acquire of 100",
        store.acquire(&group, "u", "a", &hundred, duration)
    )
    .unwrap();
    let renewed = measure!(
        "renew of 100 leases",
        store.renew(&group, "u", "a", duration)
    )
    .unwrap();
    assert_eq!(renewed.len(), 100);
    measure!(
        "request_handover",
        store.request_handover(&group, "s", "b", &[0, 1])
    )
    .unwrap();
    let table = measure!("leases", store.leases(&group, "s")).unwrap();
    assert_eq!(table.leases.len(), 3);
    let released = measure!("release", store.release(&group, "s", "a", &[0, 5])).unwrap();
    assert_eq!((released.released, released.not_held), (vec![0], vec![5]));
    let left = measure!("leave", store.leave(&group, "s", "a")).unwrap();
    assert_eq!(left, [1, 2]);
    println!("round trips of the leases (waited for): {measured:?}");
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

/// The leases' refusals through the pool: each still the operation's one statement, so the
/// caller waits for one exchange (an acquire refused by a live holder, a renew of an owner with
/// no heartbeat, a release of a lease not held, a handover asked of a free partition, a leave of
/// an owner not there, an acquire and a renew of a retired subscription).
#[tokio::test(flavor = "current_thread")]
async fn each_lease_refusal_is_one_round_trip_through_the_pool() {
    use checkpoint_core::{CheckpointAdmin, CheckpointStore, Error, LeaseStore};

    let proxy = proxy().await;
    let store = pooled_through(&proxy).await;
    let group = fresh_group("round-trips-lease-refusals");
    let duration = Duration::from_secs(30);
    warm_up_leases(&store, &group).await;
    store
        .acquire(&group, "s", "a", &[0, 1], duration)
        .await
        .unwrap();
    // Retired directly, not through the proxy: a retire can open a second connection of the
    // pool, on which no lease statement is prepared yet.
    let direct = support::store().await;
    direct.save(&group, "r", 0, 1).await.unwrap();
    direct.retire(&group, "r").await.unwrap();
    settle().await;
    let connections = proxy.connections();

    let mut measured = Vec::new();
    let (trips, acquired) =
        waited_for(&proxy, store.acquire(&group, "s", "b", &[1, 0], duration)).await;
    assert_eq!(acquired.unwrap().refused, [0, 1]);
    measured.push(("acquire refused", trips));
    let (trips, renewed) = waited_for(&proxy, store.renew(&group, "s", "nobody", duration)).await;
    assert!(matches!(renewed, Err(Error::NotHeld { .. })), "{renewed:?}");
    measured.push(("renew refused", trips));
    let (trips, released) = waited_for(&proxy, store.release(&group, "s", "b", &[0])).await;
    assert_eq!(released.unwrap().not_held, [0]);
    measured.push(("release of none held", trips));
    let (trips, requested) =
        waited_for(&proxy, store.request_handover(&group, "s", "b", &[7])).await;
    requested.unwrap();
    measured.push(("request_handover of a free one", trips));
    let (trips, left) = waited_for(&proxy, store.leave(&group, "s", "nobody")).await;
    assert!(left.unwrap().is_empty());
    measured.push(("leave of no owner", trips));
    let (trips, acquired) =
        waited_for(&proxy, store.acquire(&group, "r", "a", &[0], duration)).await;
    assert!(
        matches!(acquired, Err(Error::Retired { .. })),
        "{acquired:?}"
    );
    measured.push(("acquire of a retired one", trips));
    let (trips, renewed) = waited_for(&proxy, store.renew(&group, "r", "a", duration)).await;
    assert!(matches!(renewed, Err(Error::Retired { .. })), "{renewed:?}");
    measured.push(("renew of a retired one", trips));
    println!("round trips of the lease refusals (waited for): {measured:?}");
    assert_eq!(
        proxy.connections(),
        connections,
        "the counts include handshakes"
    );
    for (operation, got) in measured {
        assert_eq!(
            got, 1,
            "{operation}: the caller waited for {got} round trips"
        );
    }
}
