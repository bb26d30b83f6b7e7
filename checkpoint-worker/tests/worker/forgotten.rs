//! A store that forgets a lease while the owner's heartbeat lives (a Redis failover to a
//! replica that missed the grant, an operator's hand on the table): the owner's next renew
//! does not list it, and the owner stops believing it holds it (the partition is free in the
//! store meanwhile, for anyone to claim, the owner included). Here the store forgets through
//! a release sent on the owner's behalf. In-memory store, tokio's paused clock.

use std::time::Duration;

use checkpoint_core::LeaseStore;
use checkpoint_worker::{Stop, Worker};

use crate::support::{RENEW, paused_store, record_stops, start};

/// The epoch under which `worker` holds partition 2, if it does.
fn epoch_of_2(worker: &Worker) -> Option<u64> {
    let held = worker.stats().held;
    held.iter()
        .find(|held| held.partition == 2)
        .map(|held| held.epoch)
}

#[tokio::test(start_paused = true)]
async fn a_lease_the_store_forgot_is_lost_at_the_owners_next_renew() {
    let store = paused_store();
    let (worker, assignments) = start(store.clone(), 4);
    let stops = record_stops(assignments);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(worker.stats().held.len(), 4);
    let first_epoch = epoch_of_2(&worker).expect("partition 2 held");

    store
        .release("g", "s", "a", &[2])
        .await
        .expect("the store forgets partition 2");
    tokio::time::sleep(2 * RENEW).await;
    let first_stop = stops.lock().unwrap().first().map(|&(p, stop, _)| (p, stop));
    assert_eq!(
        first_stop,
        Some((2, Stop::Lost)),
        "the assignment of the forgotten partition was told it is lost"
    );
    // Free again, the partition is claimed again under a new epoch, by its former owner here.
    assert!(
        epoch_of_2(&worker).is_none_or(|epoch| epoch > first_epoch),
        "partition 2 still held under the forgotten grant's epoch {first_epoch}"
    );
}
