//! Faults of the SQL family on a server the test runs itself: a crash under writers.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use checkpoint_core::CheckpointStore;
use checkpoint_sql::{Engine, SqlStore};
use tokio::task::JoinHandle;

use crate::recovery::{Recovery, save_until_recovered};
use crate::{error_chain, fresh_group};

/// A server of the test's own that it can crash and start again on the same data.
pub trait CrashingServer: Sync {
    /// Stops the server at once, as a crash would (no clean shutdown: PostgreSQL's
    /// `pg_ctl stop -m immediate`, a SIGKILL), and returns once it is down.
    fn crash(&self) -> impl Future<Output = ()> + Send;

    /// Starts it again on the same data, and returns once it accepts connections.
    fn start(&self) -> impl Future<Output = ()> + Send;
}

const WRITERS: u32 = 4;

/// Four writers saving rising positions, each its last attempted and acknowledged one.
struct Writers {
    stop: Arc<AtomicBool>,
    acknowledged: Arc<Vec<AtomicU64>>,
    attempted: Arc<Vec<AtomicU64>>,
    failures: Arc<AtomicU64>,
    tasks: Vec<JoinHandle<()>>,
}

impl Writers {
    /// Starts the writers on `store`: every failed save must be retryable.
    #[allow(clippy::panic)]
    fn start<E: Engine>(store: &SqlStore<E>, group: &str) -> Self {
        let counters = || Arc::new((0..WRITERS).map(|_| AtomicU64::new(0)).collect::<Vec<_>>());
        let (acknowledged, attempted) = (counters(), counters());
        let stop = Arc::new(AtomicBool::new(false));
        let failures = Arc::new(AtomicU64::new(0));
        let tasks = (0..WRITERS)
            .map(|writer| {
                let (store, group, stop) = (store.clone(), group.to_owned(), Arc::clone(&stop));
                let (acknowledged, attempted) = (Arc::clone(&acknowledged), Arc::clone(&attempted));
                let failures = Arc::clone(&failures);
                tokio::spawn(async move {
                    let index = writer as usize;
                    let mut position = 0;
                    while !stop.load(Ordering::SeqCst) {
                        position += 1;
                        attempted[index].store(position, Ordering::SeqCst);
                        match store.save(&group, "crash", writer, position).await {
                            Ok(()) => acknowledged[index].store(position, Ordering::SeqCst),
                            Err(error) => {
                                assert!(error.is_retryable(), "{error:?}");
                                failures.fetch_add(1, Ordering::SeqCst);
                                tokio::time::sleep(Duration::from_millis(5)).await;
                            }
                        }
                    }
                })
            })
            .collect();
        Self {
            stop,
            acknowledged,
            attempted,
            failures,
            tasks,
        }
    }

    fn acknowledged(&self) -> Vec<u64> {
        self.acknowledged
            .iter()
            .map(|a| a.load(Ordering::SeqCst))
            .collect()
    }

    fn attempted(&self) -> Vec<u64> {
        self.attempted
            .iter()
            .map(|a| a.load(Ordering::SeqCst))
            .collect()
    }
}

/// Four writers save rising positions as fast as they can; the server crashes under them;
/// after the start every acknowledged save is there (an acknowledged commit is in the
/// engine's log: PostgreSQL's `synchronous_commit`, InnoDB's
/// `innodb_flush_log_at_trx_commit = 1`, both the default) and nothing beyond what was sent.
/// Every writer must have saved before the crash, every failure be retryable.
///
/// The writers call with a 2 s timeout, so that none waits long for a server that is down.
/// After the store saved again, each writer's checkpoint is loaded with up to
/// `load_attempts` calls, each failure retryable: 1 for an engine that reruns a request on a
/// lost connection (PostgreSQL), more for one where each dead pooled connection costs one
/// retryable failure (MySQL: 5).
///
/// # Panics
///
/// When the store does not keep the clause, like a failed test.
#[allow(clippy::unwrap_used, clippy::panic)]
pub async fn acknowledged_saves_survive_a_crash<E: Engine>(
    server: &impl CrashingServer,
    store: &SqlStore<E>,
    load_attempts: u32,
) {
    let group = fresh_group("crash");
    let writing = store.clone().with_timeout(Duration::from_secs(2)).unwrap();
    let mut writers = Writers::start(&writing, &group);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let crashed = Instant::now();
    server.crash().await;
    writers.stop.store(true, Ordering::SeqCst);
    // What was acknowledged by now (a call answered later could only fail or have waited for
    // the restart).
    let acked_at_crash = writers.acknowledged();
    server.start().await;
    let restarted = crashed.elapsed();
    for task in std::mem::take(&mut writers.tasks) {
        task.await.unwrap();
    }
    let probe = fresh_group("crash-probe");
    let Recovery { took, .. } =
        save_until_recovered(store, &probe, "probe", 0, 1, Duration::from_secs(10))
            .await
            .unwrap_or_else(|failure| panic!("{failure}"));
    let (acked, sent) = (writers.acknowledged(), writers.attempted());
    for writer in 0..WRITERS {
        let index = writer as usize;
        let loaded = load(store, &group, writer, load_attempts).await;
        assert!(
            acked_at_crash[index] > 0,
            "writer {writer} saved nothing before the crash"
        );
        let (acked, sent) = (acked[index], sent[index]);
        assert!(
            acked <= loaded && loaded <= sent,
            "writer {writer}: acknowledged {acked}, sent {sent}, but {loaded} after the crash"
        );
    }
    eprintln!(
        "crash under {WRITERS} writers: acknowledged {acked_at_crash:?} at the crash, {} failed \
         saves, server back after {restarted:?}, the next save took {took:?}",
        writers.failures.load(Ordering::SeqCst)
    );
}

/// A writer's checkpoint (0 if none), within `attempts` loads, each failure retryable.
#[allow(clippy::panic)]
async fn load<E: Engine>(store: &SqlStore<E>, group: &str, writer: u32, attempts: u32) -> u64 {
    let mut failures = Vec::new();
    for _ in 0..attempts.max(1) {
        match store.load(group, "crash", writer).await {
            Ok(loaded) => return loaded.unwrap_or(0),
            Err(error) => {
                assert!(
                    error.is_retryable(),
                    "a load failed with an error that is not retryable: {}",
                    error_chain(&error)
                );
                failures.push(error_chain(&error));
            }
        }
    }
    panic!("writer {writer}'s load still failing after {attempts} attempts: {failures:#?}")
}
