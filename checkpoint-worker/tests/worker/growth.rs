//! A partition count that grows while workers run (`Worker::grow_partitions`), on the
//! in-memory store under tokio's paused clock: the new partitions are leased and balanced
//! without a restart, nothing held moves, and a new partition starts where its checkpoint
//! (or the start position) says.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use checkpoint_core::CheckpointStore;
use checkpoint_worker::{Assignments, Worker, WorkerError};

use crate::support::{RENEW, builder, paused_store, start};

/// Every assignment handed out, by partition: (epoch, resume_at), kept until it is stopped.
type Granted = Arc<Mutex<Vec<(u32, u64, u64)>>>;

/// The application: records each assignment and holds it until it is stopped.
fn hold(mut assignments: Assignments) -> Granted {
    let granted = Granted::default();
    let recorded = Arc::clone(&granted);
    tokio::spawn(async move {
        while let Some(assignment) = assignments.next().await {
            recorded.lock().unwrap().push((
                assignment.partition(),
                assignment.epoch(),
                assignment.resume_at(),
            ));
            tokio::spawn(async move {
                let _ = assignment.stopped().await;
            });
        }
    });
    granted
}

/// What `worker` holds: partition → epoch.
fn held(worker: &Worker) -> BTreeMap<u32, u64> {
    worker
        .stats()
        .held
        .iter()
        .map(|held| (held.partition, held.epoch))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn two_workers_lease_new_partitions_and_keep_what_they_held() {
    let store = paused_store();
    let (a, a_assignments) = builder(store.clone(), "a", 4).start().unwrap();
    let (b, b_assignments) = builder(store.clone(), "b", 4).start().unwrap();
    let (_a_granted, _b_granted) = (hold(a_assignments), hold(b_assignments));
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (a_before, b_before) = (held(&a), held(&b));
    assert_eq!((a_before.len(), b_before.len()), (2, 2), "balanced over 4");

    assert_eq!(a.grow_partitions(7).unwrap(), 7);
    assert_eq!(b.grow_partitions(7).unwrap(), 7);
    tokio::time::sleep(Duration::from_secs(2)).await;

    let (a_after, b_after) = (held(&a), held(&b));
    let mut counts = [a_after.len(), b_after.len()];
    counts.sort_unstable();
    assert_eq!(counts, [3, 4], "balanced over 7: {a_after:?} {b_after:?}");
    let mut all: Vec<u32> = a_after.keys().chain(b_after.keys()).copied().collect();
    all.sort_unstable();
    assert_eq!(all, (0..7).collect::<Vec<_>>(), "every partition held once");
    for (before, after) in [(&a_before, &a_after), (&b_before, &b_after)] {
        for (partition, epoch) in before {
            assert_eq!(
                after.get(partition),
                Some(epoch),
                "partition {partition} moved or was leased again when the count grew"
            );
        }
    }
    for worker in [&a, &b] {
        let stats = worker.stats();
        assert_eq!((stats.handovers_out, stats.losses), (0, 0), "{stats:?}");
        assert_eq!(stats.partitions, 7);
    }
}

#[tokio::test(start_paused = true)]
async fn a_worker_told_first_takes_only_its_share_and_the_other_takes_the_rest_later() {
    let store = paused_store();
    let (a, a_assignments) = builder(store.clone(), "a", 4).start().unwrap();
    let (b, b_assignments) = builder(store.clone(), "b", 4).start().unwrap();
    let (_a_granted, _b_granted) = (hold(a_assignments), hold(b_assignments));
    tokio::time::sleep(Duration::from_secs(2)).await;

    a.grow_partitions(6).unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(held(&a).len(), 3, "a's share of 6 over 2");
    assert_eq!(held(&b).len(), 2, "b, still at 4, claims nothing new");
    let unheld: Vec<u32> = (0..6)
        .filter(|p| !held(&a).contains_key(p) && !held(&b).contains_key(p))
        .collect();
    assert_eq!(unheld.len(), 1, "one new partition waits for b");

    b.grow_partitions(6).unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!((held(&a).len(), held(&b).len()), (3, 3));
    assert!(held(&b).contains_key(&unheld[0]));
    assert_eq!(a.stats().handovers_out + b.stats().handovers_out, 0);
}

#[tokio::test(start_paused = true)]
async fn a_new_partition_is_claimed_before_the_next_round_and_starts_at_its_checkpoint() {
    let store = paused_store();
    store.save("g", "s", 3, 40).await.unwrap();
    let (worker, assignments) = builder(store.clone(), "a", 2)
        .start_position(0)
        .start()
        .unwrap();
    let granted = hold(assignments);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(held(&worker).len(), 2);

    // Just after a round at rest, so that the next one is a renew interval away.
    let rounds = worker.stats().rounds;
    while worker.stats().rounds == rounds {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    worker.grow_partitions(4).unwrap();
    // The growth starts a round at once, not at the next one.
    tokio::time::sleep(RENEW / 4).await;
    assert_eq!(held(&worker).len(), 4, "the new partitions are held");
    let mut resumed: Vec<(u32, u64)> = granted
        .lock()
        .unwrap()
        .iter()
        .map(|(partition, _, resume_at)| (*partition, *resume_at))
        .collect();
    resumed.sort_unstable();
    assert_eq!(
        resumed,
        vec![(0, 0), (1, 0), (2, 0), (3, 40)],
        "a new partition starts at its start (no checkpoint) or at its stored checkpoint"
    );
}

#[tokio::test(start_paused = true)]
async fn the_count_never_decreases_and_stays_within_the_lease_limit() {
    let store = paused_store();
    let (worker, assignments) = start(store, 4);
    let _granted = hold(assignments);
    assert_eq!(
        worker.grow_partitions(2).unwrap(),
        4,
        "a lower count is ignored"
    );
    assert_eq!(worker.partitions(), 4);
    let too_many = u32::try_from(checkpoint_core::lease::MAX_LEASE_PARTITIONS).unwrap() + 1;
    assert!(matches!(
        worker.grow_partitions(too_many),
        Err(WorkerError::Settings(_))
    ));
    assert_eq!(worker.partitions(), 4, "a refused growth changes nothing");
    worker.shutdown().await.unwrap();
    assert!(matches!(
        worker.grow_partitions(8),
        Err(WorkerError::Stopped)
    ));
}
