//! A subscription retired under a running worker (`checkpoint retire`, or the operations
//! API): the worker stops its assignments within a renew interval, sends nothing more, and
//! says so to the application; and what shutdown answers each of several callers. In-memory
//! store, tokio's paused clock.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use checkpoint_core::{CheckpointAdmin, InMemoryCheckpointStore};
use checkpoint_worker::{Stop, Worker, WorkerError};
use tokio::time::Instant;

const RENEW: Duration = Duration::from_millis(200);

#[tokio::test(start_paused = true)]
async fn a_retired_subscription_stops_its_worker_at_its_next_renew_and_says_so() {
    let store = Arc::new(InMemoryCheckpointStore::new().with_clock(|| Instant::now().into_std()));
    let (worker, mut assignments) = Worker::builder(Arc::clone(&store), "g", "s", 4)
        .worker_id("a")
        .lease_duration(Duration::from_secs(2))
        .renew_interval(RENEW)
        .start()
        .expect("valid settings");
    let stops: Arc<Mutex<Vec<(u32, Stop, Instant)>>> = Arc::default();
    let recorded = Arc::clone(&stops);
    tokio::spawn(async move {
        while let Some(assignment) = assignments.next().await {
            let recorded = Arc::clone(&recorded);
            tokio::spawn(async move {
                let stop = assignment.stopped().await;
                let partition = assignment.partition();
                recorded
                    .lock()
                    .unwrap()
                    .push((partition, stop, Instant::now()));
            });
        }
    });
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(worker.stats().held.len(), 4);

    let retired_at = Instant::now();
    store.retire("g", "s").await.expect("retired");
    tokio::time::sleep(3 * RENEW).await;
    assert!(worker.stats().held.is_empty(), "{:?}", worker.stats().held);
    {
        let stops = stops.lock().unwrap();
        assert_eq!(stops.len(), 4, "every assignment was stopped: {stops:?}");
        for (partition, stop, at) in stops.iter() {
            assert_eq!(*stop, Stop::Lost, "partition {partition}");
            assert!(
                *at - retired_at <= 2 * RENEW,
                "partition {partition} stopped {:?} after the retire",
                *at - retired_at
            );
        }
    }

    // Nothing more is sent once the worker stopped.
    let requests = worker.stats().store_requests;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(worker.stats().store_requests, requests);

    // The application that shuts the worker down learns why it had stopped.
    let shutdown = worker.shutdown().await;
    assert!(
        matches!(shutdown, Err(WorkerError::Stopped)),
        "{shutdown:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn shutdowns_asked_at_once_all_return_ok_and_a_later_one_too() {
    let store = Arc::new(InMemoryCheckpointStore::new().with_clock(|| Instant::now().into_std()));
    let (worker, mut assignments) = Worker::builder(Arc::clone(&store), "g", "s", 4)
        .worker_id("a")
        .lease_duration(Duration::from_secs(2))
        .renew_interval(RENEW)
        .start()
        .expect("valid settings");
    tokio::spawn(async move { while assignments.next().await.is_some() {} });
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(worker.stats().held.len(), 4);

    let (first, second) = tokio::join!(worker.shutdown(), worker.shutdown());
    assert!(first.is_ok(), "{first:?}");
    assert!(
        second.is_ok(),
        "a second caller of a shutdown that went well: {second:?}"
    );
    assert!(worker.shutdown().await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn when_a_shutdown_fails_its_first_caller_gets_the_error_and_the_others_that_it_stopped() {
    use crate::model::record::Record;
    use crate::model::store::{Faults, FaultyStore};

    let inner = Arc::new(InMemoryCheckpointStore::new().with_clock(|| Instant::now().into_std()));
    let faults = Arc::new(Faults::default());
    let store = Arc::new(FaultyStore::new(
        inner,
        Arc::clone(&faults),
        0,
        Arc::new(Record::default()),
    ));
    let (worker, mut assignments) = Worker::builder(store, "g", "s", 4)
        .worker_id("a")
        .lease_duration(Duration::from_secs(2))
        .renew_interval(RENEW)
        .start()
        .expect("valid settings");
    tokio::spawn(async move { while assignments.next().await.is_some() {} });
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(worker.stats().held.len(), 4);

    // The store fails everything from now on: the leave at the end of the shutdown too.
    faults.fail_until(Instant::now() + Duration::from_secs(3600), false);
    let (first, second) = tokio::join!(worker.shutdown(), worker.shutdown());
    assert!(matches!(first, Err(WorkerError::Leave(_))), "{first:?}");
    assert!(matches!(second, Err(WorkerError::Stopped)), "{second:?}");
}
