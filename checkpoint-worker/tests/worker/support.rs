//! What the tests written against the keeper's mutants share: a worker of 2 s leases renewed
//! every 200 ms on a store of the paused clock, the model's faulty store, and an application
//! that records how each assignment was stopped.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use checkpoint_core::InMemoryCheckpointStore;
use checkpoint_worker::{Assignments, Stop, Worker, WorkerBuilder, WorkerStore};
use tokio::time::Instant;

use crate::model::record::Record;
use crate::model::store::{Faults, FaultyStore, faulty};

/// The renew interval of [`start`]'s workers.
pub const RENEW: Duration = Duration::from_millis(200);

/// The in-memory store on tokio's paused clock.
pub fn paused_store() -> Arc<InMemoryCheckpointStore> {
    Arc::new(InMemoryCheckpointStore::new().with_clock(|| Instant::now().into_std()))
}

/// The model's faulty store over a fresh [`paused_store`], and the switch of its faults.
pub fn faulty_store() -> (Arc<FaultyStore>, Arc<Faults>) {
    let faults = Arc::new(Faults::default());
    let store = faulty(
        paused_store(),
        Arc::clone(&faults),
        0,
        Arc::new(Record::default()),
    );
    (Arc::new(store), faults)
}

/// Worker `id` over `partitions` of `g`/`s`, not started: 2 s leases renewed every [`RENEW`].
pub fn builder(store: Arc<dyn WorkerStore>, id: &str, partitions: u32) -> WorkerBuilder {
    Worker::builder(store, "g", "s", partitions)
        .worker_id(id)
        .lease_duration(Duration::from_secs(2))
        .renew_interval(RENEW)
}

/// Worker `a` of [`builder`], started.
pub fn start(store: Arc<dyn WorkerStore>, partitions: u32) -> (Worker, Assignments) {
    builder(store, "a", partitions)
        .start()
        .expect("valid settings")
}

/// How each assignment was stopped, and when, in the order the stops came.
pub type Stops = Arc<Mutex<Vec<(u32, Stop, Instant)>>>;

/// The application: holds each assignment until it is stopped, and records the stop.
pub fn record_stops(mut assignments: Assignments) -> Stops {
    let stops = Stops::default();
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
    stops
}
