//! Partitions changing hands: a graceful handover redoes nothing; a lost partition dispatches
//! nothing after the worker's local deadline.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use checkpoint_core::source::Entry;
use checkpoint_core::{CheckpointStore, InMemoryCheckpointStore};
use checkpoint_subscription::{HandlerResult, Subscription};
use tokio::time::Instant;

use crate::support::{HangingStore, Record, eventually, filled_source, recording};

const LIMIT: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graceful_handover_redoes_nothing_while_writers_append() {
    let store = Arc::new(InMemoryCheckpointStore::new());
    let source = filled_source(4, 50);
    let record = Arc::new(Record::default());
    let start = |id: &'static str| {
        Subscription::builder(Arc::clone(&store), source.clone(), "g", "s")
            .handler(recording(&record, Duration::from_millis(3)))
            .max_in_flight(8)
            .worker(move |w| {
                w.worker_id(id)
                    .lease_duration(Duration::from_millis(600))
                    .drain_timeout(Duration::from_secs(5))
            })
            .start()
            .expect("valid settings")
    };
    let writer = {
        let source = source.clone();
        tokio::spawn(async move {
            for n in 50..650u64 {
                for partition in 0..4 {
                    source
                        .append(partition, format!("{partition}/{n}").into_bytes())
                        .expect("a partition");
                }
                tokio::time::sleep(Duration::from_millis(3)).await;
            }
        })
    };
    let a = start("a");
    eventually(LIMIT, "a handles", || record.total() > 50).await;
    let b = start("b");
    eventually(LIMIT, "a and b hold two partitions each", || {
        a.stats().worker.held.len() == 2 && b.stats().worker.held.len() == 2
    })
    .await;
    a.shutdown().await.expect("a hands its partitions over");
    let c = start("c");
    eventually(LIMIT, "b and c hold two partitions each", || {
        b.stats().worker.held.len() == 2 && c.stats().worker.held.len() == 2
    })
    .await;
    b.shutdown().await.expect("b hands its partitions over");
    eventually(LIMIT, "c holds every partition", || {
        c.stats().worker.held.len() == 4
    })
    .await;
    let d = start("d");
    eventually(LIMIT, "c and d hold two partitions each", || {
        c.stats().worker.held.len() == 2 && d.stats().worker.held.len() == 2
    })
    .await;
    assert!(
        !writer.is_finished(),
        "the handovers ran while the writer appended"
    );
    writer.await.expect("the writer");
    eventually(LIMIT, "every entry handled", || record.total() == 2600).await;
    c.shutdown().await.expect("c leaves");
    d.shutdown().await.expect("d leaves");
    let redone: Vec<_> = record.runs().into_iter().filter(|(_, n)| *n > 1).collect();
    assert!(
        redone.is_empty(),
        "entries redone after graceful handovers: {redone:?}"
    );
    for partition in 0..4 {
        assert_eq!(
            store.load("g", "s", partition).await.expect("load"),
            Some(651)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_partition_dispatches_nothing_after_the_local_deadline() {
    let store = Arc::new(HangingStore::default());
    let source = filled_source(2, 1);
    let started: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let handler = {
        let started = started.clone();
        move |_entry: Arc<Entry>| {
            let started = started.clone();
            async move {
                started.lock().expect("not poisoned").push(Instant::now());
                HandlerResult::Ok(())
            }
        }
    };
    let subscription = Subscription::builder(Arc::clone(&store), source.clone(), "g", "s")
        .handler(handler)
        .worker(|w| w.lease_duration(Duration::from_millis(600)))
        .start()
        .expect("valid settings");
    eventually(LIMIT, "both first entries handled", || {
        subscription.stats().handled == 2
    })
    .await;
    // The store stops answering renewals: the leases run out by the worker's local deadline.
    store.around().hang.store(true, Ordering::SeqCst);
    let hung_at = Instant::now();
    let writer = {
        let source = source.clone();
        tokio::spawn(async move {
            for _ in 0..200 {
                source.append(0, b"0/late".to_vec()).expect("partition 0");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    };
    eventually(LIMIT, "the partitions lost", || {
        subscription.stats().worker.losses == 2
    })
    .await;
    let lost_at = Instant::now();
    writer.await.expect("the writer");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = started.lock().expect("not poisoned").clone();
    let after_loss = started.iter().filter(|at| **at > lost_at).count();
    assert_eq!(
        after_loss, 0,
        "{after_loss} entries dispatched after the loss"
    );
    // Lost by the local deadline: within the 600 ms lease of the last renew; the margin is
    // for a loaded host (the check polls).
    assert!(
        lost_at - hung_at <= Duration::from_secs(3),
        "lost {:?} after the store hung, with a 600 ms lease",
        lost_at - hung_at
    );
    assert!(
        subscription.stats().partitions.is_empty(),
        "no partition is read any more"
    );
    drop(subscription);
}

#[tokio::test(start_paused = true)]
async fn a_lone_subscription_handles_its_first_entry_within_100_ms_of_its_start() {
    // The worker's defaults: a 10 s lease renewed every 2 s. A subscription that finds no
    // other live worker does not wait a renew interval for one to show up (it did, issue 41):
    // its worker claims every partition a short settle after joining.
    let store = Arc::new(
        InMemoryCheckpointStore::new().with_clock(|| tokio::time::Instant::now().into_std()),
    );
    let first: Arc<Mutex<Option<Instant>>> = Arc::default();
    let seen = Arc::clone(&first);
    let started = Instant::now();
    let subscription = Subscription::builder(Arc::clone(&store), filled_source(4, 10), "g", "s")
        .handler(move |_entry: Arc<Entry>| {
            seen.lock()
                .expect("not poisoned")
                .get_or_insert_with(Instant::now);
            async { HandlerResult::Ok(()) }
        })
        .start()
        .expect("valid settings");
    eventually(LIMIT, "the first entry handled", || {
        first.lock().expect("not poisoned").is_some()
    })
    .await;
    let after = first.lock().expect("not poisoned").map(|at| at - started);
    assert!(
        after.is_some_and(|after| after <= Duration::from_millis(100)),
        "the first entry handled {after:?} after start()"
    );
    subscription.shutdown().await.expect("a graceful shutdown");
}
