//! A fleet: workers of one subscription in this process, over one store, each with the
//! application of `app.rs` on its assignments; and the conditions the rows wait for.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use checkpoint_worker::{Worker, WorkerStats};
use futures_util::future::join_all;
use tokio::task::JoinHandle;

use super::app::{self, Drops, Ledger, Work};
use super::{SUBSCRIPTION, Settings};
use crate::subject::{BenchError, BenchStore};

/// How often a wait looks at the workers' stats (no I/O: it reads what each keeper published).
const POLL: Duration = Duration::from_millis(2);

/// One worker and its application.
pub(super) struct Member {
    pub worker: Worker,
    app: JoinHandle<()>,
    pub drops: Arc<Drops>,
    crashed: bool,
}

/// Workers of one subscription, started one by one with [`Fleet::add`].
pub(super) struct Fleet {
    store: Arc<dyn BenchStore>,
    pub group: String,
    pub partitions: u32,
    pub settings: Settings,
    work: Work,
    pub ledger: Arc<Ledger>,
    pub members: Vec<Member>,
}

impl Fleet {
    pub(super) fn new(
        store: &Arc<dyn BenchStore>,
        group: String,
        partitions: u32,
        settings: Settings,
        work: Work,
    ) -> Self {
        Self {
            store: Arc::clone(store),
            group,
            partitions,
            settings,
            work,
            ledger: Arc::default(),
            members: Vec::new(),
        }
    }

    /// Starts `count` workers at once.
    pub(super) fn start(&mut self, count: usize) -> Result<(), BenchError> {
        for _ in 0..count {
            self.add()?;
        }
        Ok(())
    }

    /// Starts one more worker.
    pub(super) fn add(&mut self) -> Result<(), BenchError> {
        let id = format!("{}-w{}", self.group, self.members.len());
        let (worker, assignments) = Worker::builder(
            Arc::clone(&self.store),
            &self.group,
            SUBSCRIPTION,
            self.partitions,
        )
        .worker_id(id)
        .lease_duration(self.settings.lease)
        .renew_interval(self.settings.renew)
        .start()?;
        let drops = Arc::<Drops>::default();
        let app = app::serve(
            assignments,
            self.work,
            Arc::clone(&self.ledger),
            Arc::clone(&drops),
        );
        self.members.push(Member {
            worker,
            app,
            drops,
            crashed: false,
        });
        Ok(())
    }

    /// Crashes member `index`: its keeper stops with no goodbye and its application's tasks are
    /// aborted, as when the process dies. It stays in the list (its stats still read).
    pub(super) fn crash(&mut self, index: usize) {
        let member = &mut self.members[index];
        member.worker.crash();
        member.app.abort();
        member.crashed = true;
    }

    pub(super) fn stats(&self, members: &[usize]) -> Vec<WorkerStats> {
        members
            .iter()
            .map(|&i| self.members[i].worker.stats())
            .collect()
    }

    /// Waits until `done` holds for the stats of `members`; how long that took.
    pub(super) async fn wait(
        &self,
        what: &str,
        members: &[usize],
        timeout: Duration,
        done: impl Fn(&[WorkerStats]) -> bool,
    ) -> Result<Duration, BenchError> {
        let started = Instant::now();
        loop {
            let stats = self.stats(members);
            if done(&stats) {
                return Ok(started.elapsed());
            }
            if started.elapsed() > timeout {
                return Err(format!("{what}: not within {timeout:?}; {}", summary(&stats)).into());
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Waits until `members` own every partition, balanced (see [`balanced`]).
    pub(super) async fn wait_balanced(
        &self,
        members: &[usize],
        timeout: Duration,
    ) -> Result<Duration, BenchError> {
        let partitions = self.partitions;
        self.wait("balancing", members, timeout, |stats| {
            balanced(stats, partitions)
        })
        .await
    }

    /// Who owns each partition, as the store's lease table says.
    pub(super) async fn owners(&self) -> Result<BTreeMap<u32, String>, BenchError> {
        let table = self.store.leases(&self.group, SUBSCRIPTION).await?;
        Ok(table
            .leases
            .into_iter()
            .map(|lease| (lease.partition, lease.owner))
            .collect())
    }

    /// Every member still running: hands everything over and leaves (crashed ones are skipped:
    /// their keeper is gone). Ends with the applications.
    pub(super) async fn shutdown(self) -> Result<(), BenchError> {
        match self.shutdown_reporting().await.into_iter().next() {
            Some(error) => Err(error.into()),
            None => Ok(()),
        }
    }

    /// [`shutdown`](Self::shutdown), every member's failure returned rather than the first
    /// raised: a fleet of 100 shutting down at once on a loaded store is a finding of the
    /// scale row, not a failed run.
    pub(super) async fn shutdown_reporting(self) -> Vec<String> {
        let running: Vec<&Member> = self
            .members
            .iter()
            .filter(|member| !member.crashed)
            .collect();
        let results = join_all(running.iter().map(|member| member.worker.shutdown())).await;
        let failed = running
            .iter()
            .zip(results)
            .filter_map(|(member, result)| {
                let error = result.err()?;
                Some(format!("{}: {error}", member.worker.id()))
            })
            .collect();
        for member in self.members {
            member.app.abort();
        }
        failed
    }
}

/// Every partition owned by exactly one of these workers, none being handed over, and every
/// worker within ±1 of `P / N`.
pub(super) fn balanced(stats: &[WorkerStats], partitions: u32) -> bool {
    let share = f64::from(partitions) / stats.len() as f64;
    let owned: usize = stats.iter().map(|s| s.held.len()).sum();
    owned == partitions as usize
        && stats.iter().all(|s| {
            (s.held.len() as f64 - share).abs() <= 1.0 && s.held.iter().all(|h| !h.handing_over)
        })
}

/// Distinct partitions held by these workers: a partition that one still counts as held after
/// another took it (its loss not noticed yet) counts once.
pub(super) fn owned(stats: &[WorkerStats]) -> usize {
    stats
        .iter()
        .flat_map(|s| s.held.iter().map(|h| h.partition))
        .collect::<std::collections::BTreeSet<u32>>()
        .len()
}

/// Partitions held by these workers (being handed over or not).
pub(super) fn held(stats: &[WorkerStats]) -> usize {
    stats.iter().map(|s| s.held.len()).sum()
}

/// What a fleet that did not get there holds and went through, for the error.
fn summary(stats: &[WorkerStats]) -> String {
    let held: Vec<usize> = stats.iter().map(|s| s.held.len()).collect();
    let sum = |count: fn(&WorkerStats) -> u64| stats.iter().map(count).sum::<u64>();
    format!(
        "held {held:?}; in all {} acquired, {} handed over, {} lost, {} failed lease requests, \
         {} drain timeouts, {} rounds",
        sum(|s| s.acquired),
        sum(|s| s.handovers_out),
        sum(|s| s.losses),
        sum(|s| s.renew_failures),
        sum(|s| s.drain_timeouts),
        sum(|s| s.rounds),
    )
}
