//! The failover and handover rows' fleet: subscriptions of one group over one log while a
//! writer per partition appends steadily, and a ledger of every entry each one handled.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use checkpoint_core::source::Entry;
use checkpoint_subscription::{HandlerResult, Subscription};
use tokio::task::JoinSet;

use super::log::Log;
use super::pairs::Pair;
use super::{Plan, SUBSCRIPTION, payload, unique, wait_for};
use crate::subject::{BenchError, BenchStore};

/// Between two appends of one partition's writer.
pub(super) const WRITE_PAUSE: Duration = Duration::from_millis(20);

/// Every entry handled, by whom, and when the newest of each partition was sent.
#[derive(Debug, Default)]
pub(super) struct Ledger {
    handled: Mutex<HashSet<(u32, u64)>>,
    twice: AtomicU64,
    /// (member, partition) → the send time of the newest entry that member handled there.
    newest: Mutex<HashMap<(usize, u32), SystemTime>>,
}

impl Ledger {
    fn record(&self, member: usize, partition: u32, position: u64, sent: SystemTime) {
        let fresh = lock(&self.handled).insert((partition, position));
        if !fresh {
            self.twice.fetch_add(1, Ordering::Relaxed);
        }
        let mut newest = lock(&self.newest);
        let at = newest.entry((member, partition)).or_insert(sent);
        *at = (*at).max(sent);
    }

    /// Entries handled more than once so far.
    pub(super) fn twice(&self) -> u64 {
        self.twice.load(Ordering::Relaxed)
    }

    /// Whether `member` handled an entry of `partition` sent at or after `since`.
    fn handled_since(&self, member: usize, partition: u32, since: SystemTime) -> bool {
        lock(&self.newest)
            .get(&(member, partition))
            .is_some_and(|sent| *sent >= since)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Subscriptions of one group, the log they read and its writers.
pub(super) struct Fleet {
    store: Arc<dyn BenchStore>,
    log: Arc<dyn Log>,
    group: String,
    plan: Plan,
    pub ledger: Arc<Ledger>,
    /// Every subscription started, by index; `live[i]` until crashed.
    pub members: Vec<Subscription>,
    live: Vec<bool>,
    writers: JoinSet<Result<(), BenchError>>,
    stop: Arc<AtomicBool>,
}

impl Fleet {
    /// A new log of `plan.ownership_partitions` partitions on `pair`, no subscription yet.
    pub(super) async fn new(pair: &Pair, plan: Plan) -> Result<Self, BenchError> {
        Ok(Self {
            store: Arc::clone(&pair.store),
            log: pair
                .create_log("ownership", plan.ownership_partitions)
                .await?,
            group: unique("ownership"),
            plan,
            ledger: Arc::default(),
            members: Vec::new(),
            live: Vec::new(),
            writers: JoinSet::new(),
            stop: Arc::default(),
        })
    }

    /// Starts one more subscription; returns its index.
    pub(super) fn add(&mut self) -> Result<usize, BenchError> {
        let member = self.members.len();
        let ledger = Arc::clone(&self.ledger);
        let (lease, renew) = (self.plan.lease, self.plan.renew);
        let subscription = Subscription::builder(
            Arc::clone(&self.store),
            self.log.source(),
            &self.group,
            SUBSCRIPTION,
        )
        .handler(move |entry: Arc<Entry>| {
            let ledger = Arc::clone(&ledger);
            async move {
                let (partition, sent) =
                    payload::read(&entry.payload).ok_or("not a stamped entry")?;
                ledger.record(member, partition, entry.position, sent);
                HandlerResult::Ok(())
            }
        })
        .worker(|worker| {
            worker
                .worker_id(format!("{}-{member}", self.group))
                .lease_duration(lease)
                .renew_interval(renew)
        })
        .start()?;
        self.members.push(subscription);
        self.live.push(true);
        Ok(member)
    }

    /// Crashes `member` (its lease keeper stops: no handover, no release).
    pub(super) fn crash(&mut self, member: usize) {
        self.members[member].worker().crash();
        self.live[member] = false;
    }

    /// A writer per partition, one entry every [`WRITE_PAUSE`], until [`close`](Self::close).
    pub(super) fn start_writers(&mut self) {
        for partition in 0..self.plan.ownership_partitions {
            let (log, stop) = (Arc::clone(&self.log), Arc::clone(&self.stop));
            self.writers.spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    log.append(partition, payload::stamped(partition)).await?;
                    tokio::time::sleep(WRITE_PAUSE).await;
                }
                Ok(())
            });
        }
    }

    /// The partitions `member` holds now.
    pub(super) fn held(&self, member: usize) -> Vec<u32> {
        let stats = self.members[member].stats();
        stats
            .worker
            .held
            .iter()
            .map(|held| held.partition)
            .collect()
    }

    /// Waits until `members` hold every partition, an equal share each, none handing over.
    pub(super) async fn wait_balanced(&self, members: &[usize]) -> Result<(), BenchError> {
        let partitions = self.plan.ownership_partitions as usize;
        let share = partitions / members.len().max(1);
        wait_for("the subscriptions balanced", || {
            members.iter().all(|&member| {
                let held = self.members[member].stats().worker.held;
                held.len() == share && held.iter().all(|held| !held.handing_over)
            })
        })
        .await
    }

    /// Waits until `member` handled, on every one of `partitions`, an entry sent at or after
    /// `since`.
    pub(super) async fn wait_handled(
        &self,
        member: usize,
        partitions: &[u32],
        since: SystemTime,
    ) -> Result<(), BenchError> {
        wait_for("every partition handled again", || {
            partitions
                .iter()
                .all(|&partition| self.ledger.handled_since(member, partition, since))
        })
        .await
    }

    /// Stops the writers, shuts the live subscriptions down and removes the log.
    pub(super) async fn close(mut self) -> Result<(), BenchError> {
        self.stop.store(true, Ordering::Relaxed);
        while let Some(done) = self.writers.join_next().await {
            done??;
        }
        for (member, subscription) in self.members.iter().enumerate() {
            if self.live[member] {
                subscription.shutdown().await?;
            }
        }
        self.log.remove().await
    }
}

/// How long the fleet runs before a measurement (checkpoints written) and after it (so that an
/// entry handled twice shows in the ledger).
pub(super) const SETTLE: Duration = Duration::from_millis(500);

/// The fleet's settings, as the rows print them.
pub(super) fn setting(plan: Plan) -> String {
    format!(
        "{} partitions, {} s lease, {} ms renew; a writer per partition appending an entry \
         every {} ms",
        plan.ownership_partitions,
        plan.lease.as_secs_f64(),
        plan.renew.as_millis(),
        WRITE_PAUSE.as_millis()
    )
}
