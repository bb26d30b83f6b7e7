//! A store that fails gets fewer requests from a worker, not more: the keeper's pause between
//! rounds doubles with each failure in a row (capped at the renew interval). The model's
//! faulty store, tokio's paused clock.

use std::time::Duration;

use futures_util::StreamExt;
use tokio::time::Instant;

use crate::support::{RENEW, faulty_store, start};

#[tokio::test(start_paused = true)]
async fn a_failing_store_is_asked_at_most_a_few_times_per_renew_interval() {
    let (store, faults) = faulty_store();
    let (worker, assignments) = start(store, 4);
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
