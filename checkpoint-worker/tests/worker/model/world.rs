//! The workers of a run over one in-memory store on tokio's paused clock, each with its own
//! faulty view of the store and its own application, and the checker ticking every
//! [`TICK`] of virtual time.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use checkpoint_committer::Committer;
use checkpoint_core::InMemoryCheckpointStore;
use checkpoint_worker::Worker;
use tokio::time::Instant;

use super::app::{App, Registry};
use super::checker::{Checker, Kind, View};
use super::record::Record;
use super::store::{Faults, faulty};

pub const LEASE_DURATION: Duration = Duration::from_secs(1);
pub const RENEW_INTERVAL: Duration = Duration::from_millis(100);
pub const DRAIN_TIMEOUT: Duration = Duration::from_millis(300);
/// The committer's interval: far longer than a handover, so that what the next owner resumes
/// at after a drained handover is what the leaver's final write carried, not what a periodic
/// write happened to save just before (which would hide a release before the final write).
pub const COMMITTER_INTERVAL: Duration = Duration::from_secs(5);
/// How often the checker looks.
pub const TICK: Duration = Duration::from_millis(10);
/// At most this many workers live at once.
pub const MAX_LIVE: usize = 8;

const GROUP: &str = "model";
const SUBSCRIPTION: &str = "orders";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Live,
    /// Shutting down or shut down.
    Leaving,
    Crashed,
}

struct Slot {
    worker: Worker,
    app: App,
    faults: Arc<Faults>,
    state: State,
}

/// Everything of one run.
pub struct World {
    store: Arc<InMemoryCheckpointStore>,
    record: Arc<Record>,
    registry: Arc<Registry>,
    partitions: u32,
    slots: Vec<Slot>,
    pub checker: Checker,
}

impl World {
    pub fn new(partitions: u32) -> Self {
        let store = InMemoryCheckpointStore::new().with_clock(|| Instant::now().into_std());
        Self {
            store: Arc::new(store),
            record: Arc::default(),
            registry: Arc::default(),
            partitions,
            slots: Vec::new(),
            checker: Checker::new(partitions),
        }
    }

    /// The live workers, in the order they joined.
    pub fn live(&self) -> Vec<usize> {
        (0..self.slots.len())
            .filter(|&index| self.slots[index].state == State::Live)
            .collect()
    }

    /// The `pick`-th live worker (modulo their number), if any.
    pub fn pick(&self, pick: usize) -> Option<usize> {
        let live = self.live();
        (!live.is_empty()).then(|| live[pick % live.len()])
    }

    /// Starts a new worker (a new id, as a restarted process takes). Returns its index.
    pub fn join(&mut self) -> Option<usize> {
        if self.live().len() >= MAX_LIVE {
            return None;
        }
        let index = self.slots.len();
        let faults = Arc::new(Faults::default());
        let store = Arc::new(faulty(
            Arc::clone(&self.store),
            Arc::clone(&faults),
            index,
            Arc::clone(&self.record),
        ));
        let committer = Committer::builder(Arc::clone(&store), GROUP)
            .interval(COMMITTER_INTERVAL)
            .start()
            .expect("valid committer settings");
        let builder = Worker::builder(store, GROUP, SUBSCRIPTION, self.partitions)
            .committer(committer)
            .worker_id(format!("w{index}"))
            .lease_duration(LEASE_DURATION)
            .renew_interval(RENEW_INTERVAL)
            .drain_timeout(DRAIN_TIMEOUT);
        let (worker, assignments) = builder.start().expect("valid settings");
        let app = App {
            worker: index,
            registry: Arc::clone(&self.registry),
            record: Arc::clone(&self.record),
            faults: Arc::clone(&faults),
            tasks: Arc::new(Mutex::new(Vec::new())),
        };
        app.clone().serve(assignments);
        self.slots.push(Slot {
            worker,
            app,
            faults,
            state: State::Live,
        });
        self.checker.happened(index, Kind::Join);
        Some(index)
    }

    /// A graceful leave: the shutdown runs in the background while time goes on.
    pub fn leave(&mut self, index: usize) {
        let slot = &mut self.slots[index];
        slot.state = State::Leaving;
        let worker = slot.worker.clone();
        tokio::spawn(async move { worker.shutdown().await });
        self.checker.happened(index, Kind::Leave);
    }

    /// A crash: the keeper stops with no goodbye, the application's tasks die with it.
    pub fn crash(&mut self, index: usize) {
        let held: BTreeSet<u32> = self
            .registry
            .held()
            .into_iter()
            .filter(|&(worker, _)| worker == index)
            .map(|(_, partition)| partition)
            .collect();
        let slot = &mut self.slots[index];
        slot.state = State::Crashed;
        slot.worker.crash();
        slot.app.abort();
        let others_live = self.slots.iter().any(|slot| slot.state == State::Live);
        self.checker.crashed(index, held, others_live);
    }

    /// The worker's store requests hang for `pause` (past the local deadline, it is a zombie
    /// until woken).
    pub fn pause(&mut self, index: usize, pause: Duration) {
        let faults = Arc::clone(&self.slots[index].faults);
        faults.pause(true);
        tokio::spawn(async move {
            tokio::time::sleep(pause).await;
            faults.pause(false);
        });
        let until = Instant::now() + pause;
        self.checker.happened(index, Kind::Fault { until });
    }

    /// The worker's store requests fail for `failing`.
    pub fn fail(&mut self, index: usize, failing: Duration, timeout: bool) {
        let until = Instant::now() + failing;
        self.slots[index].faults.fail_until(until, timeout);
        self.checker.happened(index, Kind::Fault { until });
    }

    /// Every request of the worker's store (and its reply) takes `latency`.
    pub fn slow(&mut self, index: usize, latency: Duration) {
        self.slots[index].faults.set_latency(latency);
        self.checker.happened(index, Kind::Slow);
    }

    /// Every request of the worker's store (and its reply) takes `lag` more, for `window`.
    pub fn lag(&mut self, index: usize, lag: Duration, window: Duration) {
        let faults = Arc::clone(&self.slots[index].faults);
        faults.set_lag(lag);
        tokio::spawn(async move {
            tokio::time::sleep(window).await;
            faults.set_lag(Duration::ZERO);
        });
        let until = Instant::now() + window;
        self.checker.happened(index, Kind::Lag { until, lag });
    }

    /// Every checkpoint write of the worker's store takes `latency`.
    pub fn slow_writes(&mut self, index: usize, latency: Duration) {
        self.slots[index].faults.set_write_latency(latency);
        self.checker.happened(index, Kind::SlowWrites { latency });
    }

    /// Lets time pass until the state is checked stable (and a little more): the end of a
    /// history, so that its last state is always checked.
    pub async fn settle(&mut self) {
        let window = self.checker.stable_window(&self.live());
        self.run_for(window + Duration::from_millis(200)).await;
    }

    /// Lets `duration` of virtual time pass, checking at every tick.
    pub async fn run_for(&mut self, duration: Duration) {
        let end = Instant::now() + duration;
        while Instant::now() < end {
            tokio::time::sleep(TICK.min(end - Instant::now())).await;
            self.check();
        }
    }

    fn check(&mut self) {
        let held = self.registry.held();
        let live = self.live();
        let events = self.record.lock();
        self.checker.tick(&View {
            held: &held,
            live: &live,
            events: &events,
        });
    }
}
