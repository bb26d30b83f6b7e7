//! A renew answered `NotHeld` after a later acquire granted the partition again ends only what
//! was granted before the renew was sent: here its answer arrives after the keeper's acquire
//! (which started a new heartbeat) has answered, and the new assignment stays held. (The
//! other order, the `NotHeld` arriving while that acquire is still on its way, is the model's
//! `scenarios::a_late_not_held_does_not_end_a_later_grant`.) In-memory store, tokio's paused
//! clock; a store in front of it holds the renews back on a timetable.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use checkpoint_core::{
    Acquired, Checkpoint, CheckpointStore, Error, HeldLease, InMemoryCheckpointStore, LeaseStore,
    LeaseTable, Released,
};
use checkpoint_worker::Stop;
use tokio::time::Instant;

use crate::support::{paused_store, record_stops, start};

/// When held-back requests run, and when their answers come.
#[derive(Debug, Clone, Copy)]
struct Timetable {
    /// Renews sent before this are held back...
    renews_sent_before: Instant,
    /// ...run by the store at this instant (after the heartbeat expired)...
    renews_run_at: Instant,
    /// ...and answered at this one.
    renews_answered_at: Instant,
    /// Acquires sent before this wait for it (so that the held-back renews run first).
    acquires_run_from: Instant,
}

/// The paused in-memory store, with renews and acquires held back by a [`Timetable`] once one
/// is set.
struct HeldBack {
    inner: Arc<InMemoryCheckpointStore>,
    timetable: Mutex<Option<Timetable>>,
}

impl HeldBack {
    fn timetable(&self) -> Option<Timetable> {
        *self
            .timetable
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl CheckpointStore for HeldBack {
    async fn list(&self, group: &str) -> Result<Vec<Checkpoint>, Error> {
        self.inner.list(group).await
    }

    async fn load(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> Result<Option<u64>, Error> {
        self.inner.load(group, subscription, partition).await
    }

    async fn save(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<(), Error> {
        self.inner
            .save(group, subscription, partition, position)
            .await
    }

    async fn save_all(&self, group: &str, checkpoints: &[Checkpoint]) -> Result<(), Error> {
        self.inner.save_all(group, checkpoints).await
    }
}

#[async_trait]
impl LeaseStore for HeldBack {
    async fn acquire(
        &self,
        group: &str,
        subscription: &str,
        owner: &str,
        partitions: &[u32],
        duration: Duration,
    ) -> Result<Acquired, Error> {
        if let Some(timetable) = self.timetable() {
            tokio::time::sleep_until(timetable.acquires_run_from).await;
        }
        self.inner
            .acquire(group, subscription, owner, partitions, duration)
            .await
    }

    async fn renew(
        &self,
        group: &str,
        subscription: &str,
        owner: &str,
        duration: Duration,
    ) -> Result<Vec<HeldLease>, Error> {
        let held_back = self
            .timetable()
            .filter(|timetable| Instant::now() < timetable.renews_sent_before);
        let Some(timetable) = held_back else {
            return self.inner.renew(group, subscription, owner, duration).await;
        };
        tokio::time::sleep_until(timetable.renews_run_at).await;
        let answer = self.inner.renew(group, subscription, owner, duration).await;
        tokio::time::sleep_until(timetable.renews_answered_at).await;
        answer
    }

    async fn release(
        &self,
        group: &str,
        subscription: &str,
        owner: &str,
        partitions: &[u32],
    ) -> Result<Released, Error> {
        self.inner
            .release(group, subscription, owner, partitions)
            .await
    }

    async fn leave(&self, group: &str, subscription: &str, owner: &str) -> Result<Vec<u32>, Error> {
        self.inner.leave(group, subscription, owner).await
    }

    async fn leases(&self, group: &str, subscription: &str) -> Result<LeaseTable, Error> {
        self.inner.leases(group, subscription).await
    }

    async fn request_handover(
        &self,
        group: &str,
        subscription: &str,
        requester: &str,
        partitions: &[u32],
    ) -> Result<(), Error> {
        self.inner
            .request_handover(group, subscription, requester, partitions)
            .await
    }
}

/// Worker `a` (2 s leases, renewed every 200 ms) holds partition 0. From `t`, its renews sent
/// within 2.3 s are held back: they run at `t` + 2.5 s and are answered at `t` + 3 s. The
/// local deadline passes at about `t` + 1.8 s (the first loss, rightly: the renews then in
/// flight are abandoned at it, and the two sent after it are held back too), the heartbeat
/// expires with it, the two run after that (`NotHeld`), and the keeper claims partition 0
/// again: its acquire, held until `t` + 2.7 s, starts a new heartbeat (a new epoch) and is
/// answered at once, before the `NotHeld`s, which answer renews sent before it. The new
/// assignment must not be lost to them; the worker renews its new heartbeat and keeps it.
#[tokio::test(start_paused = true)]
async fn a_not_held_answered_after_a_later_grant_does_not_end_it() {
    let store = Arc::new(HeldBack {
        inner: paused_store(),
        timetable: Mutex::new(None),
    });
    let (worker, assignments) = start(store.clone(), 1);
    let stops = record_stops(assignments);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let first_epoch = worker.stats().held.first().map(|held| held.epoch);
    assert!(
        first_epoch.is_some(),
        "partition 0 held before the renews are held back"
    );

    let t = Instant::now();
    *store
        .timetable
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = Some(Timetable {
        renews_sent_before: t + Duration::from_millis(2_300),
        renews_run_at: t + Duration::from_millis(2_500),
        renews_answered_at: t + Duration::from_secs(3),
        acquires_run_from: t + Duration::from_millis(2_700),
    });
    tokio::time::sleep(Duration::from_millis(2_900)).await;
    let regranted = worker.stats().held.first().map(|held| held.epoch);
    assert!(
        regranted > first_epoch,
        "partition 0 granted again under a new epoch before the NotHeld answers come: {regranted:?} after {first_epoch:?}"
    );

    tokio::time::sleep(Duration::from_secs(3)).await;
    let stopped: Vec<(u32, Stop)> = stops
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .map(|&(partition, stop, _)| (partition, stop))
        .collect();
    assert_eq!(
        stopped,
        [(0, Stop::Lost)],
        "one loss (the local deadline, the renews held back): the NotHeld answering renews sent before the new grant must not end it"
    );
    assert_eq!(
        worker.stats().held.first().map(|held| held.epoch),
        regranted,
        "the new grant is still held, renewed under its own heartbeat"
    );
    worker.shutdown().await.expect("a clean shutdown");
}
