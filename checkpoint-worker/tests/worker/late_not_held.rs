//! A renew answered `NotHeld` after a later acquire granted the partition again ends only what
//! was granted before the renew was sent: here its answer arrives after the keeper's acquire
//! (which started a new heartbeat) has answered, and the new assignment stays held. (The
//! other order, the `NotHeld` arriving while that acquire is still on its way, is the model's
//! `scenarios::a_late_not_held_does_not_end_a_later_grant`.) In-memory store, tokio's paused
//! clock; a store in front of it holds the renews back on a timetable.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use checkpoint_core::door::BoxFuture;
use checkpoint_core::layer::{Around, Call, Layered};
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

/// The layer in front of the paused in-memory store: renews and acquires held back by a
/// [`Timetable`] once one is set.
struct HeldBack {
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

impl Around for HeldBack {
    fn around<'a, T: Send + 'static>(
        &'a self,
        call: Call<'a>,
        request: BoxFuture<'a, T>,
    ) -> BoxFuture<'a, T> {
        let Some(timetable) = self.timetable() else {
            return request;
        };
        match call {
            Call::Acquire { .. } => Box::pin(async move {
                tokio::time::sleep_until(timetable.acquires_run_from).await;
                request.await
            }),
            Call::Renew { .. } if Instant::now() < timetable.renews_sent_before => {
                Box::pin(async move {
                    tokio::time::sleep_until(timetable.renews_run_at).await;
                    let answer = request.await;
                    tokio::time::sleep_until(timetable.renews_answered_at).await;
                    answer
                })
            }
            _ => request,
        }
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
    let held_back = HeldBack {
        timetable: Mutex::new(None),
    };
    let store = Arc::new(Layered::new(paused_store(), held_back));
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
        .around()
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
