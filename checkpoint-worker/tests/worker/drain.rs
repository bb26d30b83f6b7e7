//! A graceful handover waits for the application to drop its assignment, and for nothing
//! else: not before the drop (entries in flight would be redone), not until the drain deadline
//! when the drop comes sooner, and at the deadline when it never comes. In-memory store,
//! tokio's paused clock.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use checkpoint_core::InMemoryCheckpointStore;
use checkpoint_worker::{Assignments, Stop, Worker};
use tokio::time::Instant;

use crate::support::{RENEW, builder, paused_store};

const DRAIN: Duration = Duration::from_secs(6);
/// How long the handlers of a partition told to hand over take to finish.
const FINISHING: Duration = Duration::from_secs(1);

/// When each worker was given, and dropped, each partition.
#[derive(Default)]
struct Timeline {
    granted: Mutex<BTreeMap<(String, u32), Instant>>,
    dropped: Mutex<BTreeMap<(String, u32), Instant>>,
}

/// The application: holds each assignment until it is stopped; on a handover it finishes for
/// `finishing` (or never drops, when `None`), then drops it.
fn serve(
    id: &'static str,
    mut assignments: Assignments,
    finishing: Option<Duration>,
    timeline: Arc<Timeline>,
) {
    tokio::spawn(async move {
        while let Some(assignment) = assignments.next().await {
            let timeline = Arc::clone(&timeline);
            let key = (id.to_owned(), assignment.partition());
            timeline
                .granted
                .lock()
                .unwrap()
                .insert(key.clone(), Instant::now());
            tokio::spawn(async move {
                if let Stop::Handover { .. } = assignment.stopped().await {
                    match finishing {
                        Some(finishing) => tokio::time::sleep(finishing).await,
                        None => std::future::pending::<()>().await,
                    }
                }
                timeline.dropped.lock().unwrap().insert(key, Instant::now());
                drop(assignment);
            });
        }
    });
}

fn start(
    store: &Arc<InMemoryCheckpointStore>,
    id: &'static str,
    finishing: Option<Duration>,
    timeline: &Arc<Timeline>,
) -> Worker {
    let (worker, assignments) = builder(store.clone(), id, 2)
        .drain_timeout(DRAIN)
        .start()
        .expect("valid settings");
    serve(id, assignments, finishing, Arc::clone(timeline));
    worker
}

/// The partition `b` was given from `a`, when `a` dropped it and when `b` got it.
fn handed_from_a_to_b(timeline: &Timeline) -> (u32, Option<Instant>, Instant) {
    let granted = timeline.granted.lock().unwrap();
    let dropped = timeline.dropped.lock().unwrap();
    let (&(_, partition), &to_b) = granted
        .iter()
        .find(|((worker, _), _)| worker == "b")
        .expect("b was given a partition");
    let by_a = dropped.get(&("a".to_owned(), partition)).copied();
    (partition, by_a, to_b)
}

#[tokio::test(start_paused = true)]
async fn a_handover_waits_for_the_drop_and_goes_ahead_right_after_it() {
    let store = paused_store();
    let timeline = Arc::new(Timeline::default());
    let a = start(&store, "a", Some(FINISHING), &timeline);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(a.stats().held.len(), 2, "a alone holds both partitions");

    let asked_at = Instant::now();
    let b = start(&store, "b", Some(FINISHING), &timeline);
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(b.stats().held.len(), 1, "b was given its share");
    let (partition, dropped, granted) = handed_from_a_to_b(&timeline);
    let dropped = dropped.expect("a dropped the partition it handed over");
    assert!(
        granted >= dropped,
        "partition {partition} went to b {:?} before a's handlers finished: entries in flight \
         would be redone",
        dropped - granted
    );
    assert!(
        granted - dropped <= 2 * RENEW,
        "partition {partition} went to b {:?} after a dropped it: the handover waited for \
         something else than the drop",
        granted - dropped
    );
    assert!(
        granted - asked_at < DRAIN,
        "the handover took the drain timeout though the handlers finished in {FINISHING:?}"
    );
    assert_eq!(
        a.stats().drain_timeouts,
        0,
        "the drop came before the deadline"
    );
    assert_eq!(a.stats().handovers_out, 1);
}

#[tokio::test(start_paused = true)]
async fn an_assignment_never_dropped_is_handed_over_at_the_drain_deadline() {
    let store = paused_store();
    let timeline = Arc::new(Timeline::default());
    let a = start(&store, "a", None, &timeline);
    tokio::time::sleep(Duration::from_secs(3)).await;

    let asked_at = Instant::now();
    let b = start(&store, "b", None, &timeline);
    tokio::time::sleep(DRAIN + Duration::from_secs(3)).await;
    assert_eq!(b.stats().held.len(), 1, "b was given its share in the end");
    let (partition, dropped, granted) = handed_from_a_to_b(&timeline);
    assert_eq!(
        dropped, None,
        "a's application never dropped partition {partition}"
    );
    assert!(
        granted - asked_at >= DRAIN,
        "partition {partition} went to b {:?} after b joined, before the drain deadline",
        granted - asked_at
    );
    assert_eq!(a.stats().drain_timeouts, 1);
    assert_eq!(a.stats().handovers_out, 1);
}
