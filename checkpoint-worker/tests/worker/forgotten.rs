//! A store that forgets a lease while the owner's heartbeat lives (a Redis failover to a
//! replica that missed the grant, an operator's hand on the table): the owner's next renew
//! does not list it, and the owner stops believing it holds it (the partition is free in the
//! store meanwhile, for anyone to claim, the owner included). Here the store forgets through
//! a release sent on the owner's behalf.
//! In-memory store, tokio's paused clock.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use checkpoint_core::{InMemoryCheckpointStore, LeaseStore};
use checkpoint_worker::{Stop, Worker};
use tokio::time::Instant;

const RENEW: Duration = Duration::from_millis(200);

#[tokio::test(start_paused = true)]
async fn a_lease_the_store_forgot_is_lost_at_the_owners_next_renew() {
    let store = Arc::new(InMemoryCheckpointStore::new().with_clock(|| Instant::now().into_std()));
    let (worker, mut assignments) = Worker::builder(Arc::clone(&store), "g", "s", 4)
        .worker_id("a")
        .lease_duration(Duration::from_secs(2))
        .renew_interval(RENEW)
        .start()
        .expect("valid settings");
    let stops: Arc<Mutex<Vec<(u32, Stop)>>> = Arc::default();
    let recorded = Arc::clone(&stops);
    tokio::spawn(async move {
        while let Some(assignment) = assignments.next().await {
            let recorded = Arc::clone(&recorded);
            tokio::spawn(async move {
                let stop = assignment.stopped().await;
                recorded
                    .lock()
                    .unwrap()
                    .push((assignment.partition(), stop));
            });
        }
    });
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(worker.stats().held.len(), 4);
    let epoch_of_2 = |worker: &Worker| {
        worker
            .stats()
            .held
            .iter()
            .find(|held| held.partition == 2)
            .map(|held| held.epoch)
    };
    let first_epoch = epoch_of_2(&worker).expect("partition 2 held");

    store
        .release("g", "s", "a", &[2])
        .await
        .expect("the store forgets partition 2");
    tokio::time::sleep(2 * RENEW).await;
    assert_eq!(
        stops.lock().unwrap().first().copied(),
        Some((2, Stop::Lost)),
        "the assignment of the forgotten partition was told it is lost"
    );
    // Free again, the partition is claimed again under a new epoch, by its former owner here.
    assert!(
        epoch_of_2(&worker).is_none_or(|epoch| epoch > first_epoch),
        "partition 2 still held under the forgotten grant's epoch {first_epoch}"
    );
}
