//! A store that fails gets fewer requests from a worker, not more: the keeper's pause between
//! rounds doubles with each failure in a row (capped at the renew interval). The model's
//! faulty store, tokio's paused clock.

use std::sync::Arc;
use std::time::Duration;

use checkpoint_core::InMemoryCheckpointStore;
use checkpoint_worker::Worker;
use futures_util::StreamExt;
use tokio::time::Instant;

use crate::model::record::Record;
use crate::model::store::{Faults, FaultyStore};

const RENEW: Duration = Duration::from_millis(200);

#[tokio::test(start_paused = true)]
async fn a_failing_store_is_asked_at_most_a_few_times_per_renew_interval() {
    let inner = Arc::new(InMemoryCheckpointStore::new().with_clock(|| Instant::now().into_std()));
    let faults = Arc::new(Faults::default());
    let store = Arc::new(FaultyStore::new(
        inner,
        Arc::clone(&faults),
        0,
        Arc::new(Record::default()),
    ));
    let (worker, assignments) = Worker::builder(store, "g", "s", 4)
        .worker_id("a")
        .lease_duration(Duration::from_secs(2))
        .renew_interval(RENEW)
        .start()
        .expect("valid settings");
    tokio::spawn(assignments.collect::<Vec<_>>());
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(worker.stats().held.len(), 4);

    // Every request fails for 15 renew intervals.
    const INTERVALS: u32 = 15;
    faults.fail_until(Instant::now() + RENEW * INTERVALS, false);
    tokio::time::sleep(RENEW * INTERVALS).await;
    let failed = faults.injected();
    // Measured: 77 (the renewer's retries, the keeper's rounds backing off to one per renew
    // interval, the acquires after the leases were lost); without the doubling, about 3,000.
    assert!(
        failed <= 8 * u64::from(INTERVALS),
        "{failed} requests in {INTERVALS} renew intervals of a failing store: the keeper's \
         rounds did not back off"
    );
    assert!(
        failed >= u64::from(INTERVALS),
        "the renews went on: {failed}"
    );
}
