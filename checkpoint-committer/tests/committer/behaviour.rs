//! The committer through its public API: settings, backoff, release, shutdown, backpressure,
//! stats and many concurrent handlers.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use checkpoint_committer::{Committer, CommitterError, Partition};
use checkpoint_core::door::BoxFuture;
use checkpoint_core::layer::{Around, Call, Layered};
use checkpoint_core::{
    Argument, Checkpoint, CheckpointStore, Error, InMemoryCheckpointStore, Operation,
};
use tokio::task::JoinHandle;

const GROUP: &str = "behaviour";

/// The in-memory store, its `save_all` failing while the [`Switch`] is on.
type Switchable = Layered<InMemoryCheckpointStore, Switch>;

/// Fails `save_all` while `failing` is set, counting every call of it.
#[derive(Default)]
struct Switch {
    failing: std::sync::atomic::AtomicBool,
    calls: AtomicUsize,
    call_times: Mutex<Vec<tokio::time::Instant>>,
}

impl Around for Switch {
    fn around<'a, T: Send + 'static>(
        &'a self,
        call: Call<'a>,
        request: BoxFuture<'a, T>,
    ) -> BoxFuture<'a, T> {
        if !matches!(call, Call::SaveAll { .. }) {
            return request;
        }
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.call_times
            .lock()
            .unwrap()
            .push(tokio::time::Instant::now());
        if self.failing.load(Ordering::SeqCst) {
            let down = Error::backend(
                "switchable",
                Operation::SaveAll,
                true,
                std::io::Error::other("the store is down"),
            );
            return Box::pin(async move { Err(down) });
        }
        request
    }
}

fn invalid_setting(result: Result<Committer, CommitterError>) -> Option<Argument> {
    match result {
        Err(CommitterError::Invalid(error)) => error.invalid_input().map(|i| i.argument),
        _ => None,
    }
}

#[tokio::test]
async fn settings_and_names_are_checked_before_anything_runs() {
    let store = || InMemoryCheckpointStore::new();
    assert_eq!(
        invalid_setting(
            Committer::builder(store(), GROUP)
                .interval(Duration::ZERO)
                .start()
        ),
        Some(Argument::Setting("interval"))
    );
    assert_eq!(
        invalid_setting(Committer::builder(store(), GROUP).max_in_flight(0).start()),
        Some(Argument::Setting("max_in_flight"))
    );
    assert_eq!(
        invalid_setting(
            Committer::builder(store(), GROUP)
                .interval(Duration::from_secs(2))
                .max_backoff(Duration::from_secs(1))
                .start()
        ),
        Some(Argument::Setting("max_backoff"))
    );
    assert_eq!(
        invalid_setting(Committer::builder(store(), "").start()),
        Some(Argument::Group)
    );
    let committer = Committer::builder(store(), GROUP).start().unwrap();
    assert!(matches!(
        committer.partition("bad\0name", 0, 0),
        Err(CommitterError::Invalid(_))
    ));
    assert!(matches!(
        committer.partition("s", 0, u64::MAX),
        Err(CommitterError::Invalid(_))
    ));
    let p = committer.partition("s", 0, 0).unwrap();
    assert!(matches!(
        committer.partition("s", 0, 0),
        Err(CommitterError::AlreadyHeld { partition: 0, .. })
    ));
    assert!(matches!(
        p.dispatched(i64::MAX as u64).await,
        Err(CommitterError::PositionTooHigh { .. })
    ));
    committer.shutdown().await.unwrap();
}

#[test]
fn starting_outside_a_runtime_is_an_error_not_a_panic() {
    let result = Committer::builder(InMemoryCheckpointStore::new(), GROUP).start();
    assert!(
        matches!(result, Err(CommitterError::NoRuntime)),
        "{result:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_failing_store_is_retried_with_backoff_and_nothing_is_lost() {
    let store = Arc::new(Switchable::default());
    store.around().failing.store(true, Ordering::SeqCst);
    let reported = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&reported);
    let committer = Committer::builder(Arc::clone(&store), GROUP)
        .interval(Duration::from_millis(100))
        .max_backoff(Duration::from_millis(800))
        .on_error(move |_| {
            seen.fetch_add(1, Ordering::SeqCst);
        })
        .start()
        .unwrap();
    let p = committer.partition("s", 0, 0).unwrap();
    p.dispatched(0).await.unwrap();
    p.completed(0).unwrap();
    let started = tokio::time::Instant::now();
    tokio::time::sleep(Duration::from_secs(5)).await;

    // Attempts at 100 ms, then after waits of about 200, 400, 800, 800, ... ms: each wait
    // drawn in [ceiling / 2, ceiling] (equal jitter, at least the interval) and taken up to
    // the next tick, so every gap is between half its ceiling and the ceiling. 8 attempts in
    // 5 s when every wait is the ceiling, 14 when every one is half: not 50 ticks' worth.
    let attempts = store.around().calls.load(Ordering::SeqCst);
    assert!((8..=14).contains(&attempts), "attempts in 5 s: {attempts}");
    let gaps: Vec<u128> = store
        .around()
        .call_times
        .lock()
        .unwrap()
        .windows(2)
        .map(|w| (w[1] - w[0]).as_millis())
        .collect();
    for (n, gap) in gaps.iter().enumerate() {
        let ceiling = (200u128 << n).min(800);
        assert!(
            (ceiling / 2..=ceiling).contains(gap),
            "gap {n} of {gaps:?}: {gap} ms, outside [{}, {ceiling}] ms",
            ceiling / 2
        );
    }
    assert_eq!(
        reported.load(Ordering::SeqCst),
        attempts,
        "every failure reported"
    );
    let stats = committer.stats();
    assert_eq!(stats.failed_writes, attempts as u64);
    assert_eq!(stats.writes, 0);
    assert!(
        stats.ticks >= 49,
        "ticks go on while backing off: {}",
        stats.ticks
    );
    let partition = &stats.partitions[0];
    assert!(partition.last_error.is_some());
    assert_eq!((partition.committed, partition.gap_free), (0, 1));

    // The store comes back: the next attempt writes what was kept.
    store.around().failing.store(false, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert_eq!(store.inner().load(GROUP, "s", 0).await.unwrap(), Some(1));
    let partition = &committer.stats().partitions[0];
    assert!(
        partition.last_error.is_none(),
        "cleared by a successful write"
    );
    assert_eq!(partition.committed, 1);
    assert!(partition.last_write.is_some());
    assert!(started.elapsed() < Duration::from_secs(6));
    committer.shutdown().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn nothing_is_written_when_nothing_moved() {
    let store = Arc::new(Switchable::default());
    let committer = Committer::builder(Arc::clone(&store), GROUP)
        .interval(Duration::from_millis(100))
        .start()
        .unwrap();
    let p = committer.partition("s", 0, 10).unwrap();
    p.dispatched(10).await.unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        store.around().calls.load(Ordering::SeqCst),
        0,
        "10 still runs"
    );
    p.completed(10).unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        store.around().calls.load(Ordering::SeqCst),
        1,
        "one write, then quiet"
    );
    assert_eq!(store.inner().load(GROUP, "s", 0).await.unwrap(), Some(11));
    committer.shutdown().await.unwrap();
    assert_eq!(
        store.around().calls.load(Ordering::SeqCst),
        1,
        "shutdown had nothing to write"
    );
}

#[tokio::test(start_paused = true)]
async fn one_write_per_tick_covers_every_partition_that_moved() {
    let store = Arc::new(Switchable::default());
    let committer = Committer::builder(Arc::clone(&store), GROUP)
        .interval(Duration::from_millis(100))
        .start()
        .unwrap();
    let mut handles = Vec::new();
    for partition in 0..50 {
        let p = committer.partition("s", partition, 0).unwrap();
        for position in 0..20 {
            p.dispatched(position).await.unwrap();
        }
        handles.push(p);
    }
    for p in &handles {
        for position in (0..20).rev() {
            p.completed(position).unwrap();
        }
    }
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert_eq!(store.around().calls.load(Ordering::SeqCst), 1);
    let stored = store.inner().list(GROUP).await.unwrap();
    assert_eq!(stored.len(), 50);
    assert!(stored.iter().all(|c| c.position == 20), "{stored:?}");
    committer.shutdown().await.unwrap();
}

#[tokio::test]
async fn release_many_writes_them_all_at_once_and_forgets_them() {
    let store = Arc::new(Switchable::default());
    let committer = Committer::builder(Arc::clone(&store), GROUP)
        .interval(Duration::from_secs(3600))
        .start()
        .unwrap();
    let kept = committer.partition("s", 9, 0).unwrap();
    let handles: Vec<Partition> = (0..4)
        .map(|partition| committer.partition("s", partition, 0).unwrap())
        .collect();
    for (partition, handle) in handles.iter().enumerate() {
        for position in 0..=partition as u64 {
            handle.dispatched(position).await.unwrap();
            handle.completed(position).unwrap();
        }
    }
    kept.dispatched(0).await.unwrap();
    kept.completed(0).unwrap();
    committer.release_many("s", &[0, 1, 2, 3, 5]).await.unwrap();
    assert_eq!(
        store.around().calls.load(Ordering::SeqCst),
        1,
        "one save_all for the four partitions released"
    );
    for partition in 0..4 {
        assert_eq!(
            store.inner().load(GROUP, "s", partition).await.unwrap(),
            Some(u64::from(partition) + 1),
            "partition {partition} written at its gap-free position"
        );
        assert!(matches!(
            handles[partition as usize].completed(0),
            Err(CommitterError::NotHeld { .. })
        ));
    }
    assert_eq!(
        store.inner().load(GROUP, "s", 9).await.unwrap(),
        None,
        "a partition not named is neither written nor released"
    );
    let held: Vec<u32> = committer
        .stats()
        .partitions
        .iter()
        .map(|p| p.partition)
        .collect();
    assert_eq!(held, vec![9]);
    committer.shutdown().await.unwrap();
}

#[tokio::test]
async fn release_writes_forgets_and_refuses_the_old_handle() {
    let store = Arc::new(InMemoryCheckpointStore::new());
    let committer = Committer::builder(Arc::clone(&store), GROUP)
        .interval(Duration::from_secs(3600))
        .max_in_flight(3)
        .start()
        .unwrap();
    let p = committer.partition("s", 7, 0).unwrap();
    for position in [0, 1, 2] {
        p.dispatched(position).await.unwrap();
    }
    p.completed(0).unwrap();
    p.completed(2).unwrap();
    committer.release("s", 7).await.unwrap();
    assert_eq!(
        store.load(GROUP, "s", 7).await.unwrap(),
        Some(1),
        "written at once, held back by 1, which still ran"
    );
    assert!(matches!(
        p.completed(1),
        Err(CommitterError::NotHeld { .. })
    ));
    assert!(matches!(
        p.dispatched(3).await,
        Err(CommitterError::NotHeld { .. })
    ));
    assert!(matches!(
        committer.release("s", 7).await,
        Err(CommitterError::NotHeld { .. })
    ));
    assert!(committer.stats().partitions.is_empty());

    // The room its entries held is free again: three dispatches go through without waiting.
    let again = committer.resume("s", 7).await.unwrap();
    assert_eq!(
        again.gap_free(),
        1,
        "resumes at the first entry not completed"
    );
    for position in [1, 2, 3] {
        finished(again.dispatched(position), "room was given back at release").await;
    }
    committer.shutdown().await.unwrap();
}

/// A committer on an in-memory store that holds at most `max_in_flight` entries, full: its
/// partition ("s", 0) has `0..max_in_flight` dispatched, and a dispatch of the next position
/// waits for room on a task of its own.
async fn full_committer(
    max_in_flight: u64,
) -> (Committer, Partition, JoinHandle<Result<(), CommitterError>>) {
    let committer = Committer::builder(InMemoryCheckpointStore::new(), GROUP)
        .max_in_flight(usize::try_from(max_in_flight).unwrap())
        .start()
        .unwrap();
    let p = committer.partition("s", 0, 0).unwrap();
    for position in 0..max_in_flight {
        p.dispatched(position).await.unwrap();
    }
    let waiting = {
        let p = p.clone();
        tokio::spawn(async move { p.dispatched(max_in_flight).await })
    };
    (committer, p, waiting)
}

/// What `call` (a dispatch, a task) succeeded with, which it must within 5 s (`expectation`
/// says why).
async fn finished<T, E: std::fmt::Debug>(
    call: impl Future<Output = Result<T, E>>,
    expectation: &str,
) -> T {
    tokio::time::timeout(Duration::from_secs(5), call)
        .await
        .expect(expectation)
        .unwrap()
}

#[tokio::test]
async fn a_full_committer_makes_dispatch_wait_until_the_checkpoint_passes_an_entry() {
    let (committer, p, waiting) = full_committer(2).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!waiting.is_finished(), "two entries held: the third waits");
    p.completed(1).unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !waiting.is_finished(),
        "1 is done but still held behind 0, which runs: still no room"
    );
    assert_eq!(p.stats().held, 2);
    p.completed(0).unwrap();
    finished(waiting, "room once the checkpoint passed 0 and 1")
        .await
        .unwrap();
    committer.shutdown().await.unwrap();
}

#[tokio::test]
async fn shutdown_wakes_a_waiting_dispatch_and_refuses_later_calls() {
    let (committer, p, waiting) = full_committer(1).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    committer.shutdown().await.unwrap();
    let outcome = finished(waiting, "woken by shutdown").await;
    assert!(
        matches!(outcome, Err(CommitterError::ShutDown)),
        "{outcome:?}"
    );
    // Every call of a handle says why it is refused: the committer is shut down (the docs of
    // `dispatched`, `skipped` and `completed` name `ShutDown`), not that the partition alone
    // was released.
    let completed = p.completed(0);
    assert!(
        matches!(completed, Err(CommitterError::ShutDown)),
        "{completed:?}"
    );
    let dispatched = p.dispatched(5).await;
    assert!(
        matches!(dispatched, Err(CommitterError::ShutDown)),
        "{dispatched:?}"
    );
    let skipped = p.skipped(6);
    assert!(
        matches!(skipped, Err(CommitterError::ShutDown)),
        "{skipped:?}"
    );
    assert!(matches!(
        committer.partition("s", 1, 0),
        Err(CommitterError::ShutDown)
    ));
    committer.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_partition_released_before_shutdown_answers_shut_down_after_it() {
    let committer = Committer::builder(InMemoryCheckpointStore::new(), GROUP)
        .interval(Duration::from_secs(3600))
        .start()
        .unwrap();
    let released = committer.partition("s", 0, 0).unwrap();
    let held = committer.partition("s", 1, 0).unwrap();
    released.dispatched(0).await.unwrap();
    committer.release("s", 0).await.unwrap();
    let skipped = released.skipped(1);
    assert!(
        matches!(skipped, Err(CommitterError::NotHeld { partition: 0, .. })),
        "released while the committer runs: {skipped:?}"
    );
    committer.shutdown().await.unwrap();
    for (name, handle) in [("released", &released), ("held", &held)] {
        let skipped = handle.skipped(2);
        assert!(
            matches!(skipped, Err(CommitterError::ShutDown)),
            "{name} partition after shutdown: {skipped:?}"
        );
    }
}

#[tokio::test]
async fn a_failed_final_write_hands_back_what_it_could_not_write() {
    let store = Arc::new(Switchable::default());
    let committer = Committer::builder(Arc::clone(&store), GROUP)
        .interval(Duration::from_secs(3600))
        .start()
        .unwrap();
    for partition in 0..3 {
        let p = committer.partition("s", partition, 100).unwrap();
        p.skipped(100 + u64::from(partition)).unwrap();
    }
    committer.partition("s", 9, 5).unwrap(); // never moves: not in the final write
    store.around().failing.store(true, Ordering::SeqCst);
    let Err(CommitterError::Flush { source, unwritten }) = committer.shutdown().await else {
        panic!("the final write failed: shutdown must say so");
    };
    assert!(source.is_retryable());
    let mut unwritten = unwritten;
    unwritten.sort();
    assert_eq!(
        unwritten,
        vec![
            Checkpoint::new("s", 0, 101),
            Checkpoint::new("s", 1, 102),
            Checkpoint::new("s", 2, 103),
        ]
    );
}

#[tokio::test]
async fn stats_show_a_stuck_entry() {
    let committer = Committer::builder(InMemoryCheckpointStore::new(), GROUP)
        .interval(Duration::from_millis(20))
        .start()
        .unwrap();
    let p = committer.partition("s", 3, 0).unwrap();
    for position in 0..5 {
        p.dispatched(position).await.unwrap();
    }
    for position in 1..5 {
        p.completed(position).unwrap();
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let stats = p.stats();
    assert_eq!((stats.subscription.as_str(), stats.partition), ("s", 3));
    assert_eq!((stats.committed, stats.gap_free), (0, 0));
    assert_eq!((stats.in_flight, stats.held), (1, 5));
    let age = stats.oldest_in_flight_age.expect("0 still runs");
    assert!(age >= Duration::from_millis(100), "{age:?}");
    p.completed(0).unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let stats = p.stats();
    assert_eq!((stats.committed, stats.gap_free), (5, 5));
    assert_eq!((stats.in_flight, stats.held), (0, 0));
    assert!(stats.oldest_in_flight_age.is_none());
    assert_eq!(stats.unwritten_positions(), 0);
    committer.shutdown().await.unwrap();
}

/// 16 handler tasks over 64 partitions complete entries in scrambled orders on a
/// multi-thread runtime; every partition ends exactly at its last entry + 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_handlers_end_at_the_gap_free_position() {
    const PARTITIONS: u32 = 64;
    const ENTRIES: u64 = 2_000;
    let store = Arc::new(InMemoryCheckpointStore::new());
    let committer = Committer::builder(Arc::clone(&store), GROUP)
        .interval(Duration::from_millis(5))
        .max_in_flight(512)
        .start()
        .unwrap();
    let (sender, receiver) =
        tokio::sync::mpsc::channel::<(checkpoint_committer::Partition, u64)>(256);
    let receiver = Arc::new(tokio::sync::Mutex::new(receiver));
    let mut handlers = Vec::new();
    for handler in 0..16u64 {
        let receiver = Arc::clone(&receiver);
        handlers.push(tokio::spawn(async move {
            let mut state = handler.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            loop {
                let next = receiver.lock().await.recv().await;
                let Some((p, position)) = next else { return };
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                if state % 4 == 0 {
                    tokio::task::yield_now().await; // finish later than the others
                }
                p.completed(position).unwrap();
            }
        }));
    }
    let mut readers = Vec::new();
    for partition in 0..PARTITIONS {
        let p = committer.partition("s", partition, 0).unwrap();
        let sender = sender.clone();
        readers.push(tokio::spawn(async move {
            for position in 0..ENTRIES {
                // Every third position is filtered out; the rest go to the handlers.
                if position % 3 == 2 {
                    p.skipped(position).unwrap();
                } else {
                    p.dispatched(position).await.unwrap();
                    sender.send((p.clone(), position)).await.unwrap();
                }
            }
        }));
    }
    drop(sender);
    for reader in readers {
        reader.await.unwrap();
    }
    for handler in handlers {
        handler.await.unwrap();
    }
    let stats = committer.stats();
    assert!(
        stats
            .partitions
            .iter()
            .all(|p| p.in_flight == 0 && p.held == 0)
    );
    committer.shutdown().await.unwrap();
    let stored = store.list(GROUP).await.unwrap();
    assert_eq!(stored.len(), PARTITIONS as usize);
    assert!(stored.iter().all(|c| c.position == ENTRIES), "{stored:?}");
}
