//! A subscription retired under a running worker (`checkpoint retire`, or the operations
//! API): the worker stops its assignments within a renew interval, sends nothing more, and
//! says so to the application; and what shutdown answers each of several callers. In-memory
//! store, tokio's paused clock.

use std::time::Duration;

use checkpoint_core::CheckpointAdmin;
use checkpoint_worker::{Stop, WorkerError};
use futures_util::StreamExt;
use tokio::time::Instant;

use crate::support::{RENEW, faulty_store, paused_store, record_stops, start};

#[tokio::test(start_paused = true)]
async fn a_retired_subscription_stops_its_worker_at_its_next_renew_and_says_so() {
    let store = paused_store();
    let (worker, assignments) = start(store.clone(), 4);
    let stops = record_stops(assignments);
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
    let (worker, assignments) = start(paused_store(), 4);
    tokio::spawn(assignments.collect::<Vec<_>>());
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
    let (store, faults) = faulty_store();
    let (worker, assignments) = start(store, 4);
    tokio::spawn(assignments.collect::<Vec<_>>());
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(worker.stats().held.len(), 4);

    // The store fails everything from now on: the leave at the end of the shutdown too.
    faults.fail_until(Instant::now() + Duration::from_secs(3600), false);
    let (first, second) = tokio::join!(worker.shutdown(), worker.shutdown());
    assert!(matches!(first, Err(WorkerError::Leave(_))), "{first:?}");
    assert!(matches!(second, Err(WorkerError::Stopped)), "{second:?}");
}
