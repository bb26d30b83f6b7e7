//! Faults of the SQL family: a crash under writers on a server the test runs itself, advances
//! under killed sessions.

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use checkpoint_core::{CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint, Operation};
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

/// A store whose sessions the test can end from a connection of its own, as a server
/// administrator would (PostgreSQL's `pg_terminate_backend`, MySQL's `KILL CONNECTION`).
pub trait KilledSessions<E: Engine>: Sync {
    /// What the killer ends sessions through (an administrator's connection), opened once.
    type Killer: Send;

    /// The store under test, migrated, whose sessions [`kill_sessions`](Self::kill_sessions)
    /// ends.
    fn store(&self) -> impl Future<Output = SqlStore<E>> + Send;

    /// Opens the killer's connection.
    fn killer(&self) -> impl Future<Output = Self::Killer> + Send;

    /// Ends every session of the store (and whatever call they have in flight); returns how
    /// many it ended.
    fn kill_sessions(&self, killer: &mut Self::Killer) -> impl Future<Output = usize> + Send;

    /// What the server logged of a crash of its own, if the test can read its log (a server
    /// of the test's own); empty if it did not crash.
    fn crashes(&self) -> Vec<String> {
        Vec::new()
    }
}

const STEPS: u64 = 150;

/// One owner claims a checkpoint and advances it step by step, 150 steps, while the store's
/// sessions are ended every 50 ms. `advance` is not run again by the store (a second attempt
/// after a commit whose answer was lost would report `Moved` for the owner's own step), so
/// some advances fail, each a retryable backend error of `advance`; after each failure the
/// owner reads the position back (up to 20 loads, each failure retryable), which must be where
/// it was or one step on (a kill between the commit and its answer), never anywhere else, and
/// goes on from there. At the end the checkpoint is at 150 within `load_attempts` loads (1 for
/// an engine that reruns a request on a lost connection, PostgreSQL; more for one where a dead
/// pooled session costs a retryable failure, MySQL), and the server never crashed.
///
/// # Panics
///
/// When the store does not keep the clause, like a failed test.
#[allow(clippy::unwrap_used)]
pub async fn advances_under_killed_sessions<E: Engine>(
    server: &impl KilledSessions<E>,
    load_attempts: u32,
) {
    let store = server.store().await;
    let group = fresh_group("kill-advance");
    let fingerprint = Fingerprint::from_bytes([5; 32]);
    let from = store
        .claim(&group, "owner", 0, fingerprint, 0)
        .await
        .unwrap();
    let stop = AtomicBool::new(false);
    let killing = async {
        let mut killer = server.killer().await;
        let mut killed = 0;
        while !stop.load(Ordering::SeqCst) {
            killed += server.kill_sessions(&mut killer).await;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        killed
    };
    let started = Instant::now();
    let advancing = async {
        let advanced = advance_to_the_end(server, &store, &group, from).await;
        stop.store(true, Ordering::SeqCst);
        advanced
    };
    let (killed, (failed, committed_anyway, kinds)) = tokio::join!(killing, advancing);
    eprintln!(
        "{STEPS} advances under killed sessions every 50 ms: {killed} sessions killed, {failed} \
         advances failed ({committed_anyway} of them had committed; errors {kinds:?}), {:?}",
        started.elapsed()
    );
    assert!(killed > 0, "no session was killed");
    assert!(failed > 0, "no advance met a killed session");
    // A session the killer's last round ended may still sit idle in the pool.
    let loaded = load_position(&store, &group, load_attempts).await;
    assert_eq!(loaded, Some(STEPS));
    assert_eq!(server.crashes(), Vec::<String>::new(), "the server crashed");
}

/// Advances the owner from `position` to [`STEPS`]; answers how many advances failed, how many
/// of those had committed, and the failures' last causes.
#[allow(clippy::unwrap_used)]
async fn advance_to_the_end<E: Engine>(
    server: &impl KilledSessions<E>,
    store: &SqlStore<E>,
    group: &str,
    mut position: u64,
) -> (u32, u32, BTreeSet<String>) {
    let (mut failed, mut committed_anyway) = (0u32, 0u32);
    let mut kinds = BTreeSet::new();
    while position < STEPS {
        let Err(error) = store
            .advance(group, "owner", 0, position, position + 1)
            .await
        else {
            position += 1;
            continue;
        };
        assert!(
            matches!(
                error,
                Error::Backend {
                    operation: Operation::Advance,
                    retryable: true,
                    ..
                }
            ),
            "at {position}: {error:?}"
        );
        let chain = error_chain(&error);
        kinds.insert(chain.split(": ").last().unwrap_or_default().to_owned());
        failed += 1;
        let crashes = server.crashes();
        assert!(crashes.is_empty(), "the server crashed: {crashes:?}");
        let loaded = load_position(store, group, 20).await.unwrap();
        assert!(
            loaded == position || loaded == position + 1,
            "after a failed advance from {position}, the checkpoint is at {loaded}"
        );
        if loaded == position + 1 {
            committed_anyway += 1;
        }
        position = loaded;
    }
    (failed, committed_anyway, kinds)
}

/// The owner's checkpoint within `attempts` loads, each failure retryable.
#[allow(clippy::panic)]
async fn load_position<E: Engine>(store: &SqlStore<E>, group: &str, attempts: u32) -> Option<u64> {
    let mut failures = Vec::new();
    for _ in 0..attempts.max(1) {
        match store.load(group, "owner", 0).await {
            Ok(loaded) => return loaded,
            Err(error) => {
                assert!(error.is_retryable(), "load: {}", error_chain(&error));
                failures.push(error_chain(&error));
            }
        }
    }
    panic!("the owner's load still failing after {attempts} attempts: {failures:#?}")
}
