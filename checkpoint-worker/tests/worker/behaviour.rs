//! Workers on the in-memory store under tokio's paused clock: balance, graceful handover,
//! takeover after a crash.

use std::sync::Arc;
use std::time::Duration;

use checkpoint_core::{CheckpointStore, InMemoryCheckpointStore};
use checkpoint_worker::{Assignments, Worker};

fn paused_store() -> Arc<InMemoryCheckpointStore> {
    Arc::new(InMemoryCheckpointStore::new().with_clock(|| tokio::time::Instant::now().into_std()))
}

/// Runs every assignment: completes positions 0..target, then waits for the stop and drops.
fn serve(mut assignments: Assignments, target: u64) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        while let Some(assignment) = assignments.next().await {
            tokio::spawn(async move {
                let committer = assignment.committer().clone();
                let mut position = assignment.resume_at();
                while position < target && assignment.is_held() {
                    if committer.dispatched(position).await.is_err() {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    let _ = committer.completed(position);
                    position += 1;
                }
                let _ = assignment.stopped().await;
            });
        }
    })
}

fn start(store: &Arc<InMemoryCheckpointStore>, id: &str, partitions: u32) -> Worker {
    let (worker, assignments) = Worker::builder(Arc::clone(store), "g", "s", partitions)
        .worker_id(id)
        .lease_duration(Duration::from_secs(2))
        .renew_interval(Duration::from_millis(200))
        .start()
        .expect("valid settings");
    serve(assignments, 50);
    worker
}

fn held(workers: &[&Worker]) -> Vec<usize> {
    workers.iter().map(|w| w.stats().held.len()).collect()
}

#[tokio::test(start_paused = true)]
async fn four_workers_balance_then_one_leaves_gracefully_with_its_partitions_written() {
    let store = paused_store();
    let a = start(&store, "a", 16);
    let b = start(&store, "b", 16);
    let c = start(&store, "c", 16);
    let d = start(&store, "d", 16);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(held(&[&a, &b, &c, &d]), vec![4, 4, 4, 4]);

    d.shutdown().await.expect("a graceful shutdown");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut counts = held(&[&a, &b, &c]);
    counts.sort_unstable();
    assert_eq!(counts, vec![5, 5, 6]);
    assert_eq!(d.stats().handovers_out, 4);

    // Every partition completes up to 50 in the end.
    tokio::time::sleep(Duration::from_secs(2)).await;
    for partition in 0..16 {
        assert_eq!(
            store.load("g", "s", partition).await.unwrap(),
            Some(50),
            "partition {partition}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn at_rest_a_worker_makes_two_store_requests_per_renew_interval() {
    let store = paused_store();
    let a = start(&store, "a", 16);
    let b = start(&store, "b", 16);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(held(&[&a, &b]), vec![8, 8]);
    let before = (a.stats(), b.stats());
    // 25 renew intervals of 200 ms.
    tokio::time::sleep(Duration::from_secs(5)).await;
    for (worker, before) in [(&a, &before.0), (&b, &before.1)] {
        let after = worker.stats();
        let requests = after.store_requests - before.store_requests;
        let rounds = after.rounds - before.rounds;
        assert!(
            (24..=26).contains(&rounds),
            "{}: {rounds} rounds in 25 renew intervals at rest",
            after.worker_id
        );
        assert_eq!(
            requests,
            2 * rounds,
            "{}: a renew and a table read per round at rest, whatever the partitions",
            after.worker_id
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_worker_granted_many_partitions_reads_where_they_resume_in_one_request() {
    let store = paused_store();
    for partition in 0..32u32 {
        store
            .save("g", "s", partition, 100 + u64::from(partition))
            .await
            .expect("saved");
    }
    store.save("g", "other", 0, 7).await.expect("saved");
    let (worker, mut assignments) = Worker::builder(Arc::clone(&store), "g", "s", 40)
        .worker_id("alone")
        .lease_duration(Duration::from_secs(2))
        .renew_interval(Duration::from_millis(200))
        .start_position(5)
        .start()
        .expect("valid settings");
    let mut held = Vec::new();
    for _ in 0..40 {
        held.push(assignments.next().await.expect("an assignment"));
    }
    let mut resumed: Vec<(u32, u64)> = held
        .iter()
        .map(|assignment| (assignment.partition(), assignment.resume_at()))
        .collect();
    resumed.sort_unstable();
    let expected: Vec<(u32, u64)> = (0..40u32)
        .map(|p| (p, if p < 32 { 100 + u64::from(p) } else { 5 }))
        .collect();
    assert_eq!(
        resumed, expected,
        "each resumes at its own stored checkpoint"
    );
    // The join, the table read of the cold start, the next round's table read, the acquire of
    // all 40, and one list for where they resume (not 40 loads); renews beside them.
    let stats = worker.stats();
    assert!(
        stats.store_requests <= 10,
        "{} store requests to start 40 partitions",
        stats.store_requests
    );
}

#[tokio::test(start_paused = true)]
async fn a_worker_whose_rounds_run_slow_reads_the_table_less_often_and_renews_on_time() {
    use crate::model::record::Record;
    use crate::model::store::{Faults, faulty};

    let faults = Arc::new(Faults::default());
    let store = Arc::new(faulty(
        paused_store(),
        Arc::clone(&faults),
        0,
        Arc::new(Record::default()),
    ));
    let (worker, assignments) = Worker::builder(store, "g", "s", 8)
        .worker_id("slow")
        .lease_duration(Duration::from_secs(2))
        .renew_interval(Duration::from_millis(200))
        .start()
        .expect("valid settings");
    serve(assignments, 50);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(worker.stats().held.len(), 8);
    // Every request now takes 300 ms (150 ms each way), longer than the renew interval: a
    // round (a table read) takes 300 ms, so at rest the next starts 600 ms after it started.
    faults.set_latency(Duration::from_millis(150));
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = worker.stats();
    // 30 renew intervals of 200 ms.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let after = worker.stats();
    let rounds = after.rounds - before.rounds;
    let renews = after.store_requests - before.store_requests - rounds;
    assert!(
        (9..=11).contains(&rounds),
        "{rounds} rounds in 6 s of 300 ms rounds: one every 600 ms, not back to back (20)"
    );
    assert!(
        (29..=31).contains(&renews),
        "{renews} renews in 30 renew intervals: the renews keep their cadence"
    );
    assert_eq!(
        after.losses, 0,
        "nothing lost: the renews answer within the lease"
    );
    assert_eq!(after.held.len(), 8);
}

#[tokio::test(start_paused = true)]
async fn a_crashed_workers_partitions_are_owned_again_within_the_lease_and_a_renew_interval() {
    let store = paused_store();
    let a = start(&store, "a", 16);
    let b = start(&store, "b", 16);
    let c = start(&store, "c", 16);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let mut counts = held(&[&a, &b, &c]);
    counts.sort_unstable();
    assert_eq!(counts, vec![5, 5, 6]);

    c.crash();
    let crashed_at = tokio::time::Instant::now();
    let bound = Duration::from_secs(2) + Duration::from_millis(200);
    loop {
        if held(&[&a, &b]).iter().sum::<usize>() == 16 {
            break;
        }
        assert!(
            crashed_at.elapsed() <= bound,
            "not owned again within {bound:?}: {:?}",
            held(&[&a, &b])
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(held(&[&a, &b]), vec![8, 8]);
    eprintln!("owned again {:?} after the crash", crashed_at.elapsed());
}

#[tokio::test(start_paused = true)]
async fn a_joining_worker_is_given_its_share_by_asking() {
    let store = paused_store();
    let a = start(&store, "a", 10);
    let b = start(&store, "b", 10);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(held(&[&a, &b]), vec![5, 5]);
    let out_before = a.stats().handovers_out + b.stats().handovers_out;
    let c = start(&store, "c", 10);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut counts = held(&[&a, &b, &c]);
    counts.sort_unstable();
    assert_eq!(counts, vec![3, 3, 4]);
    let handed_in = c.stats().handovers_in;
    let handed_out = a.stats().handovers_out + b.stats().handovers_out - out_before;
    assert_eq!((handed_in, handed_out), (3, 3), "only c's share moved");
    assert_eq!(a.stats().losses + b.stats().losses, 0);
}

#[tokio::test]
async fn settings_that_cannot_work_are_refused_before_anything_starts() {
    use checkpoint_committer::Committer;
    use checkpoint_worker::WorkerError;

    let store = Arc::new(InMemoryCheckpointStore::new());
    let builder = || Worker::builder(Arc::clone(&store), "g", "s", 4);
    let refused = |result: Result<(Worker, Assignments), WorkerError>| match result {
        Ok(_) => panic!("started with settings that cannot work"),
        Err(error) => error,
    };
    assert!(matches!(
        refused(builder().worker_id("").start()),
        WorkerError::Invalid(_)
    ));
    assert!(matches!(
        refused(builder().lease_duration(Duration::from_millis(1)).start()),
        WorkerError::Invalid(_)
    ));
    assert!(matches!(
        refused(Worker::builder(Arc::clone(&store), "g", "s", 0).start()),
        WorkerError::Settings(_)
    ));
    // A renew interval that leaves no third try before the local deadline.
    let error = refused(
        builder()
            .lease_duration(Duration::from_secs(3))
            .renew_interval(Duration::from_secs(1))
            .start(),
    );
    assert!(error.to_string().contains("renew interval"), "{error}");
    assert!(matches!(
        refused(builder().drain_timeout(Duration::ZERO).start()),
        WorkerError::Settings(_)
    ));
    let other_group = Committer::builder(Arc::clone(&store), "other")
        .start()
        .unwrap();
    let error = refused(builder().committer(other_group.clone()).start());
    assert!(error.to_string().contains("\"other\""), "{error}");
    other_group.shutdown().await.unwrap();
    // Nothing was leased by any of them.
    use checkpoint_core::LeaseStore;
    assert!(store.leases("g", "s").await.unwrap().owners.is_empty());
}

#[test]
fn a_worker_outside_a_runtime_says_so() {
    let store = InMemoryCheckpointStore::new();
    match Worker::builder(store, "g", "s", 1).start() {
        Err(checkpoint_worker::WorkerError::NoRuntime) => {}
        other => panic!("expected NoRuntime, got {:?}", other.map(|_| ())),
    }
}
