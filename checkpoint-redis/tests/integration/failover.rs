//! Failovers of a Redis Cluster of the test's own (three masters with one replica each, see
//! [`own_cluster`]): a master SIGKILLed and its replica promoted, under stores built once
//! with `connect_cluster` that have to follow the new topology without a restart.
//!
//! - Measured, and asserted where it must hold: how many acknowledged saves a failover loses
//!   without the replica acknowledgement and with it (writers saving ever higher positions to
//!   the killed master's keys), and how long a failover takes, from the kill to the first
//!   save that succeeds. `CHECKPOINT_FAILOVERS` sets how many failovers (default 20, about
//!   70 s: half a plain crash, half a crash after the replica was cut off). With the
//!   acknowledgement nothing may be lost, after either fault (asserted).
//! - The kit's concurrent histories (owners and zombies) across a failover each, with
//!   `with_replica_ack(1, …)`: the history checker must find nothing acknowledged lost and
//!   nothing moved back, and every error must be retryable.
//! - The same measurement for leases ([`leases`]): whether a failover loses an acquisition the
//!   old master acknowledged, so that a second owner gets an epoch that is not higher.
//! - The acknowledgement is the key's shard's: with one shard's replica paused, writes to that
//!   shard are refused and writes to the others acknowledged.
//!
//! The replica acknowledgement on a cluster had two defects while the store sent `WAIT` as a
//! command of its own, which redis-rs fans out to every master it knows; the histories found
//! both (commit 88119f6), and they are why these tests exist:
//! - the fan-out silently left out a master whose connection was gone (redis-rs's
//!   `execute_on_multiple_nodes` skips it): with one master SIGKILLed, `WAIT 1` through the
//!   cluster connection answered 1 for the seconds until the promotion, so a save its master
//!   answered just before dying, before its replica had it, was acknowledged all the same (an
//!   acknowledged `save_all` lost in 2 of 26 history runs, 2 saves in one of 30 measured
//!   crashes);
//! - after failovers, redis-rs's slot map could keep a node that is now a replica as a master,
//!   and `WAIT` there failed the fan-out, not retryable, for as long as the map was stale.
//!
//! Now `WAIT` travels in one pipeline with the write (`[EVALSHA …, WAIT …]`): redis-rs routes
//! the pipeline to the node of the script's key and redirects or retries it whole, so the
//! write and its `WAIT` always meet the same node.

mod leases;
mod own_cluster;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use checkpoint_conformance::history::{HistoryConfig, run_histories_with_faults};
use checkpoint_conformance::recovery::{Recovery, save_until_recovered};
use checkpoint_conformance::{Audit, ErrorTally, fresh_group};
use checkpoint_core::door::BoxFuture;
use checkpoint_core::layer::{Around, Call, Layered};
use checkpoint_core::{Checkpoint, CheckpointStore, Error};
use checkpoint_redis::{RedisClusterCheckpointStore, ReplicaAckError};
use own_cluster::OwnCluster;

/// A slot of each shard as `redis-cli --cluster create` splits them (0-5460, 5461-10922,
/// 10923-16383): the failovers take the shards in turn.
const SHARD_SLOTS: [u16; 3] = [0, 5461, 10923];

/// The histories, one failover each.
const HISTORY_FAILOVERS: u32 = 6;

/// The failovers the loss measurement runs unless `CHECKPOINT_FAILOVERS` says otherwise.
const MEASURED_FAILOVERS: u32 = 20;

/// Writers per kind (with and without the replica acknowledgement) in the measurement.
const WRITERS: u32 = 4;

/// How long the writers save before the master is killed.
const WRITING_BEFORE_THE_KILL: Duration = Duration::from_millis(300);

/// The `WAIT` timeout of the stores with the replica acknowledgement: while the killed
/// master's replacement has no replica yet, a save fails after it.
const REPLICA_ACK_TIMEOUT: Duration = Duration::from_secs(1);

/// The timeout of the measured writers' stores: shorter than the node timeout, so that a save
/// in flight at the kill ends before the promotion and redis-rs drops it (it retries only
/// requests someone still waits for). Retried on the promoted replica, it would store a
/// position above the ones acknowledged before it, and hide their loss.
const WRITER_TIMEOUT: Duration = Duration::from_millis(500);

async fn connect(cluster: &OwnCluster) -> RedisClusterCheckpointStore {
    RedisClusterCheckpointStore::connect_cluster(cluster.urls())
        .await
        .expect("connecting to the test's own cluster")
}

/// A fresh group whose key lives on the master serving `slot`.
async fn group_served_with(
    cluster: &OwnCluster,
    store: &RedisClusterCheckpointStore,
    slot: u16,
) -> String {
    let master = cluster
        .topology()
        .await
        .into_iter()
        .find(|node| node.master && node.serves(slot))
        .unwrap_or_else(|| panic!("no master serves slot {slot}"));
    loop {
        let group = fresh_group("redis-failover");
        let key = store.group_key(&group).expect("a valid group");
        if master.serves(cluster.key_slot(&key).await) {
            return group;
        }
    }
}

/// A layer that keeps when each call started and returned, to show which calls were in flight
/// at a kill.
#[derive(Default)]
struct Spans {
    calls: std::sync::Mutex<Vec<(Instant, Instant)>>,
}

impl Around for Spans {
    fn around<'a, T: Send + 'static>(
        &'a self,
        _call: Call<'a>,
        request: BoxFuture<'a, T>,
    ) -> BoxFuture<'a, T> {
        Box::pin(async move {
            let started = Instant::now();
            let result = request.await;
            let span = (started, Instant::now());
            self.calls.lock().expect("the calls").push(span);
            result
        })
    }
}

impl Spans {
    /// The calls that started before one of `kills` and returned after it, and the longest
    /// of them.
    fn across(&self, kills: &[Instant]) -> (usize, Duration) {
        let calls = self.calls.lock().expect("the calls");
        let across: Vec<Duration> = calls
            .iter()
            .filter(|(start, end)| kills.iter().any(|kill| start <= kill && kill <= end))
            .map(|(start, end)| *end - *start)
            .collect();
        (across.len(), across.into_iter().max().unwrap_or_default())
    }
}

/// How one failover of a history went.
struct Cycle {
    killed: Instant,
    /// From the kill until every live node agreed on the promoted replica.
    promoted: Duration,
    /// From the kill until the killed node was back as a replica, in sync.
    healthy: Duration,
}

/// The cluster of the histories, with the master the next failover kills, found beforehand
/// so that the kill comes without a query's delay, while the history runs.
struct Failovers {
    cluster: OwnCluster,
    next_victim: u16,
    cycles: Vec<Cycle>,
}

impl Failovers {
    /// SIGKILLs the master serving `slot` (`next_victim`), waits for its replica's promotion,
    /// starts the killed node again (it comes back as the new master's replica), waits until
    /// it is in sync, and finds the master serving `next_slot` for the next failover.
    async fn fail_over_and_heal(&mut self, slot: u16, next_slot: u16) {
        let victim = self.next_victim;
        let killed = self.cluster.kill(victim);
        self.cluster.wait_for_promotion(victim, slot).await;
        let promoted = killed.elapsed();
        self.cluster.restart(victim).await;
        self.cluster.wait_until_healthy().await;
        self.cycles.push(Cycle {
            killed,
            promoted,
            healthy: killed.elapsed(),
        });
        self.next_victim = self.cluster.master_of(next_slot).await;
    }
}

/// The slot of the shard whose master the `case`-th failover kills: the shards in turn.
fn shard_slot(case: u32) -> u16 {
    SHARD_SLOTS[case as usize % SHARD_SLOTS.len()]
}

/// The kit's histories, each across a failover, with the replica acknowledgement: nothing
/// acknowledged lost, nothing moved back, every error retryable, and the store, never rebuilt,
/// works on every new master afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn histories_across_failovers_lose_nothing_with_replica_ack() {
    let started = Instant::now();
    let cluster = OwnCluster::start().await;
    let formed = started.elapsed();
    // Spans around the audit: every call timed, every error kept.
    let store = Layered::new(
        connect(&cluster)
            .await
            .with_replica_ack(1, REPLICA_ACK_TIMEOUT),
        (Spans::default(), Audit::default()),
    );
    let next_victim = cluster.master_of(shard_slot(0)).await;
    let failovers = Arc::new(tokio::sync::Mutex::new(Failovers {
        cluster,
        next_victim,
        cycles: Vec::new(),
    }));
    let config = HistoryConfig::for_faults(HISTORY_FAILOVERS);
    // Each history: after 0 to 3 ms, SIGKILL the master of the next shard in turn, wait for
    // its replica's promotion, start the killed node again and wait until it is in sync.
    let failed_calls =
        run_histories_with_faults(&store, &config, Duration::from_secs(20), |case| {
            let failovers = Arc::clone(&failovers);
            async move {
                tokio::time::sleep(Duration::from_micros(500 * u64::from(case % 7))).await;
                failovers
                    .lock()
                    .await
                    .fail_over_and_heal(shard_slot(case), shard_slot(case + 1))
                    .await;
            }
        })
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    let ErrorTally {
        count: errors,
        first: sample,
    } = store
        .around()
        .1
        .take_errors()
        .unwrap_or_else(|failure| panic!("{failure}"));
    let failovers = failovers.lock().await;
    let cycles = &failovers.cycles;
    let kills: Vec<Instant> = cycles.iter().map(|c| c.killed).collect();
    let (across, longest) = store.around().0.across(&kills);
    eprintln!(
        "failover histories with replica ack: {} histories (seed {}), each across a SIGKILLed \
         master: {across} calls in flight at a kill (the longest took {longest:?}), \
         {failed_calls} calls failed, {errors} errors in all (e.g. {sample:?}); \
         promotion after {:?}, back in sync after {:?}; cluster formed in {formed:?}, {:?} in all",
        config.cases,
        config.seed,
        cycles.iter().map(|c| c.promoted).collect::<Vec<_>>(),
        cycles.iter().map(|c| c.healthy).collect::<Vec<_>>(),
        started.elapsed()
    );
    assert_eq!(cycles.len(), config.cases as usize);
    assert!(
        across > 0,
        "no call was in flight at a kill: the failovers did not hit the histories"
    );

    // The store, never rebuilt, works on the new topology: every shard's master has changed.
    let store = store.inner();
    for slot in SHARD_SLOTS {
        let group = group_served_with(&failovers.cluster, store, slot).await;
        store
            .save(&group, "after", 0, 7)
            .await
            .expect("a save with replica ack after the failovers");
        assert_eq!(store.load(&group, "after", 0).await.expect("load"), Some(7));
    }
}

/// The `WAIT` of a write goes to the write's own master: with the replica of one shard paused
/// (SIGSTOP, for about half a second; nothing fails over a replica), writes to that shard
/// fail with a retryable [`ReplicaAckError`] (no replica acknowledged), while writes to the
/// other shards are acknowledged by their own replicas. A `WAIT` fanned out to every master (the
/// store's former defect) answered the fewest of all shards, and failed those too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_replica_acknowledgement_is_the_written_shards() {
    let mut cluster = OwnCluster::start().await;
    let store = connect(&cluster)
        .await
        .with_replica_ack(1, Duration::from_millis(100));
    let mut groups = Vec::new();
    for slot in SHARD_SLOTS {
        let group = group_served_with(&cluster, &store, slot).await;
        store
            .save(&group, "s", 0, 1)
            .await
            .expect("a save with replica ack on a healthy cluster");
        groups.push(group);
    }
    let master = cluster.master_of(SHARD_SLOTS[0]).await;
    let replica = cluster.replica_of(master).await;
    cluster.signal(replica, "STOP");
    let paused = Instant::now();
    // All at once, to keep the pause short: each refused write waits out its `WAIT` timeout.
    let refused = async {
        let save = store.save(&groups[0], "s", 0, 2).await;
        let batch = [Checkpoint::new("s", 1, 2)];
        (save, store.save_all(&groups[0], &batch).await)
    };
    let write = |group: &str| {
        let (store, group) = (store.clone(), group.to_owned());
        async move {
            store.save(&group, "s", 0, 2).await?;
            let batch = [Checkpoint::new("s", 0, 3), Checkpoint::new("s", 1, 3)];
            store.save_all(&group, &batch).await
        }
    };
    let ((refused, refused_batch), first, second) =
        tokio::join!(refused, write(&groups[1]), write(&groups[2]));
    let others: [Result<(), Error>; 2] = [first, second];
    cluster.signal(replica, "CONT");
    let paused_for = paused.elapsed();
    for (what, result) in [("save", refused), ("save_all", refused_batch)] {
        let error = result.expect_err("no replica of the paused shard can acknowledge");
        let ack = std::error::Error::source(&error)
            .and_then(|source| source.downcast_ref::<ReplicaAckError>())
            .unwrap_or_else(|| panic!("{what}: expected a ReplicaAckError, got {error:?}"));
        assert_eq!((ack.requested, ack.acknowledged), (1, 0), "{what}");
        assert!(error.is_retryable(), "{what}: {error:?}");
    }
    for result in others {
        result.expect("a write to a shard whose replica runs, acknowledged");
    }
    // The refused writes are applied on the master all the same, and the paused shard
    // acknowledges again once its replica resumes.
    let probe = connect(&cluster).await;
    assert_eq!(probe.load(&groups[0], "s", 1).await.expect("load"), Some(2));
    let resumed = save_until_recovered(&store, &groups[0], "s", 0, 3, Duration::from_secs(5))
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    eprintln!(
        "replica ack per shard: one shard's replica paused for {paused_for:?}; its writes \
         refused, the others' acknowledged; acknowledged again {resumed:?} after it resumed"
    );
}

/// What one writer saw: the last position acknowledged, the last attempted, and how many
/// saves failed with an error that is not retryable.
struct Written {
    acknowledged: u64,
    attempted: u64,
    not_retryable: u64,
}

/// Saves 1, 2, 3, … to one key, each as soon as the last returned, until `stop`.
fn spawn_writer(
    store: RedisClusterCheckpointStore,
    group: String,
    subscription: &'static str,
    partition: u32,
    stop: Arc<AtomicBool>,
) -> tokio::task::JoinHandle<Written> {
    tokio::spawn(async move {
        let mut written = Written {
            acknowledged: 0,
            attempted: 0,
            not_retryable: 0,
        };
        while !stop.load(Ordering::SeqCst) {
            let position = written.attempted + 1;
            written.attempted = position;
            match store.save(&group, subscription, partition, position).await {
                Ok(()) => written.acknowledged = position,
                // Counted, and asserted to be none: a failover's errors are retryable.
                Err(error) if !error.is_retryable() => written.not_retryable += 1,
                Err(_) => {}
            }
        }
        written
    })
}

/// How the master dies in a measured failover.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// SIGKILL: the process dies; what it had written to its sockets still reaches the
    /// replica (the kernel sends it), so only a write it acknowledged and had not yet handed
    /// to the kernel for the replica can be lost.
    Crash,
    /// The replica is cut off first, [`CUT_OFF_BEFORE_THE_KILL`] before the SIGKILL: paused
    /// (SIGSTOP) and its replication link closed, as by a network partition or a replica
    /// that lags: the master goes on acknowledging writes the replica never gets. The replica
    /// resumes (SIGCONT) right after the kill and is promoted without them. (Closing the link
    /// alone is not enough: a running replica reconnects within about 7 ms and catches up
    /// from the master's backlog.)
    CutOffThenCrash,
}

/// How long the replica is cut off before the kill in [`Fault::CutOffThenCrash`].
const CUT_OFF_BEFORE_THE_KILL: Duration = Duration::from_millis(50);

/// The fault of the `run`-th measured failover: each in turn.
fn fault_of(run: u32) -> Fault {
    if run.is_multiple_of(2) {
        Fault::Crash
    } else {
        Fault::CutOffThenCrash
    }
}

/// One measured failover's outcome.
#[derive(Debug, Clone, Copy)]
struct Measured {
    fault: Fault,
    /// Acknowledged saves lost (the last acknowledged position minus the stored one, summed
    /// over the writers), without and with the replica acknowledgement.
    lost_without: u64,
    lost_with: u64,
    /// Saves acknowledged before the kill, without and with.
    acknowledged_without: u64,
    acknowledged_with: u64,
    /// Saves that failed with an error that is not retryable, without and with.
    not_retryable_without: u64,
    not_retryable_with: u64,
    /// From the kill to the first save that succeeded (without replica ack: with it, saves
    /// fail until the killed node is back as the new master's replica).
    recovered: Duration,
    /// From the kill until every live node agreed on the promoted replica.
    promoted: Duration,
}

/// Writers with and without the replica acknowledgement save to keys of the master serving
/// `slot`; the master dies under them by `fault`; once its replica is promoted, each key is
/// read back and compared with the last save acknowledged to its writer. Then the killed node
/// is started again, ready for the next run.
async fn measure_one_failover(
    cluster: &mut OwnCluster,
    stores: &MeasuredStores,
    slot: u16,
    fault: Fault,
) -> Measured {
    let MeasuredStores {
        plain,
        acked,
        probe,
    } = stores;
    let master = cluster.master_of(slot).await;
    let group = group_served_with(cluster, probe, slot).await;
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for partition in 0..WRITERS {
        for (store, subscription) in [(plain, "without"), (acked, "with")] {
            let writer = spawn_writer(
                store.clone(),
                group.clone(),
                subscription,
                partition,
                Arc::clone(&stop),
            );
            writers.push((subscription, partition, writer));
        }
    }
    tokio::time::sleep(WRITING_BEFORE_THE_KILL).await;
    let replica = cluster.replica_of(master).await;
    if fault == Fault::CutOffThenCrash {
        cluster.signal(replica, "STOP");
        let cut = cluster.cut_replica_links(master).await;
        assert_eq!(cut, 1, "the master had {cut} replication links, not one");
        tokio::time::sleep(CUT_OFF_BEFORE_THE_KILL).await;
    }
    // Stop the writers from starting new saves, then kill at once: the saves in flight meet
    // the kill. A save started after the kill would land on the promoted replica and hide a
    // loss.
    stop.store(true, Ordering::SeqCst);
    let killed = cluster.kill(master);
    if fault == Fault::CutOffThenCrash {
        cluster.signal(replica, "CONT");
    }
    let (recovery, promoted) = tokio::join!(
        save_until_recovered(probe, &group, "probe", 0, 1, Duration::from_secs(20)),
        async {
            cluster.wait_for_promotion(master, slot).await;
            killed.elapsed()
        }
    );
    let Recovery {
        took: recovered, ..
    } = recovery.unwrap_or_else(|failure| panic!("{failure}"));
    let mut measured = Measured {
        fault,
        lost_without: 0,
        lost_with: 0,
        acknowledged_without: 0,
        acknowledged_with: 0,
        not_retryable_without: 0,
        not_retryable_with: 0,
        recovered,
        promoted,
    };
    for (subscription, partition, writer) in writers {
        let written = writer.await.expect("a writer");
        let stored = probe
            .load(&group, subscription, partition)
            .await
            .expect("load after the failover")
            .unwrap_or(0);
        assert!(
            stored <= written.attempted,
            "{subscription}/{partition}: {stored} stored, but only up to {} attempted",
            written.attempted
        );
        let lost = written.acknowledged.saturating_sub(stored);
        if subscription == "with" {
            measured.lost_with += lost;
            measured.acknowledged_with += written.acknowledged;
            measured.not_retryable_with += written.not_retryable;
        } else {
            measured.lost_without += lost;
            measured.acknowledged_without += written.acknowledged;
            measured.not_retryable_without += written.not_retryable;
        }
    }
    cluster.restart(master).await;
    measured
}

/// The stores of the measurement, each built once for every failover.
struct MeasuredStores {
    /// The writers without the replica acknowledgement, with [`WRITER_TIMEOUT`].
    plain: RedisClusterCheckpointStore,
    /// The writers with it, with [`WRITER_TIMEOUT`].
    acked: RedisClusterCheckpointStore,
    /// The failover's timing and the read-back, with the default timeout, as a user has it.
    probe: RedisClusterCheckpointStore,
}

/// One line of figures over the failovers of one fault.
fn summary(fault: Fault, results: &[Measured]) -> String {
    let runs: Vec<&Measured> = results.iter().filter(|m| m.fault == fault).collect();
    let sum = |f: fn(&Measured) -> u64| runs.iter().map(|m| f(m)).sum::<u64>();
    let losing = runs.iter().filter(|m| m.lost_without > 0).count();
    let most = runs.iter().map(|m| m.lost_without).max().unwrap_or(0);
    format!(
        "{fault:?}: {} failovers; without replica ack {} acknowledged saves lost of {} \
         ({losing} failovers lost some, at most {most} in one); with replica ack {} lost of {}; \
         saves failing with an error that is not retryable: {} without, {} with",
        runs.len(),
        sum(|m| m.lost_without),
        sum(|m| m.acknowledged_without),
        sum(|m| m.lost_with),
        sum(|m| m.acknowledged_with),
        sum(|m| m.not_retryable_without),
        sum(|m| m.not_retryable_with),
    )
}

/// The smallest, median and largest of `durations`.
fn spread(mut durations: Vec<Duration>) -> String {
    durations.sort();
    match (durations.first(), durations.last()) {
        (Some(first), Some(last)) => format!(
            "{first:.2?} to {last:.2?} (median {:.2?})",
            durations[durations.len() / 2]
        ),
        _ => "none".to_owned(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_saves_lost_in_a_failover_with_and_without_replica_ack() {
    let runs = std::env::var("CHECKPOINT_FAILOVERS")
        .ok()
        .and_then(|runs| runs.parse().ok())
        .unwrap_or(MEASURED_FAILOVERS);
    // Bounded in time: no new failover starts after this, however many are left.
    let budget = Duration::from_secs(5) * runs;
    let started = Instant::now();
    let mut cluster = OwnCluster::start().await;
    let stores = MeasuredStores {
        plain: connect(&cluster)
            .await
            .with_timeout(WRITER_TIMEOUT)
            .expect("a valid timeout"),
        acked: connect(&cluster)
            .await
            .with_timeout(WRITER_TIMEOUT)
            .expect("a valid timeout")
            .with_replica_ack(1, REPLICA_ACK_TIMEOUT),
        probe: connect(&cluster).await,
    };
    let mut results = Vec::new();
    for run in 0..runs {
        if started.elapsed() > budget {
            break;
        }
        let measured =
            measure_one_failover(&mut cluster, &stores, shard_slot(run), fault_of(run)).await;
        eprintln!("failover {run}: {measured:?}");
        results.push(measured);
        cluster.wait_until_healthy().await;
    }
    eprintln!(
        "FAILOVER LOSS ({WRITERS} writers each way, SIGKILL after {WRITING_BEFORE_THE_KILL:?} of \
         saving; CutOffThenCrash cuts the replica off {CUT_OFF_BEFORE_THE_KILL:?} before it):\n  \
         {}\n  {}\n  promotion after {}; first successful save after the kill {}; {:.1?} in all",
        summary(Fault::Crash, &results),
        summary(Fault::CutOffThenCrash, &results),
        spread(results.iter().map(|m| m.promoted).collect()),
        spread(results.iter().map(|m| m.recovered).collect()),
        started.elapsed()
    );
    assert!(
        results.len() >= 6,
        "only {} failovers within {budget:?}: too few to say anything",
        results.len()
    );
    // What must hold: with the acknowledgement, a save succeeds only once the killed master's
    // replica has it, and that replica is the one promoted, so none is lost, whether the
    // replica was cut off before the crash (it never acknowledged what it missed) or not (a
    // save the master answered just before dying is acknowledged only if its replica had it:
    // the `WAIT` goes to the same master in the same pipeline, and fails with it).
    for fault in [Fault::Crash, Fault::CutOffThenCrash] {
        let lost_with: u64 = results
            .iter()
            .filter(|m| m.fault == fault)
            .map(|m| m.lost_with)
            .sum();
        assert_eq!(
            lost_with, 0,
            "with the replica acknowledgement, failovers by {fault:?} lost acknowledged saves: \
             {results:?}"
        );
    }
    // And every save that failed in a failover failed with a retryable error.
    let not_retryable: u64 = results
        .iter()
        .map(|m| m.not_retryable_with + m.not_retryable_without)
        .sum();
    assert_eq!(
        not_retryable, 0,
        "saves failed with errors that are not retryable: {results:?}"
    );
}
