//! Leases across a failover: can a failover lose an acquisition that the old master
//! acknowledged, so that a second owner then acquires the same lease under an epoch that is
//! not higher than the one the first owner was granted (a fencing token handed out twice)?
//! Measured without and with the replica acknowledgement, under the same two faults as the
//! checkpoints' measurement ([`Fault`]); asserted, as for the checkpoints, only with the
//! acknowledgement: then no acknowledged acquisition may be lost.
//!
//! Each writer acquires one partition and releases it, again and again, as soon as each call
//! returns: every acquisition is a change of hands, so its epoch is one more than the last.
//! After the kill and the promotion a checker acquires the same partition (waiting out a
//! lease that survived): the acquisition the writer was last acknowledged is lost exactly
//! when the checker's epoch is not higher than the writer's.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use checkpoint_core::LeaseStore;
use checkpoint_redis::RedisClusterCheckpointStore;

use super::own_cluster::OwnCluster;
use super::{
    CUT_OFF_BEFORE_THE_KILL, Fault, REPLICA_ACK_TIMEOUT, WRITER_TIMEOUT, WRITERS,
    WRITING_BEFORE_THE_KILL, connect, fault_of, group_served_with, shard_slot,
};

/// The failovers unless `CHECKPOINT_LEASE_FAILOVERS` says otherwise.
const MEASURED_FAILOVERS: u32 = 10;

/// The writers' leases: short, so that the checker waits little for one that survived.
const LEASE: Duration = Duration::from_millis(500);

/// What one writer saw.
#[derive(Debug, Default)]
struct Acquisitions {
    /// The epoch of the last acquisition acknowledged (0: none).
    last_epoch: u64,
    /// Acquisitions acknowledged.
    acknowledged: u64,
    /// Calls that failed with an error that is not retryable.
    not_retryable: u64,
}

/// Acquires and releases `partition` as owner `writer`, again and again, until `stop`.
fn spawn_acquirer(
    store: RedisClusterCheckpointStore,
    group: String,
    subscription: &'static str,
    partition: u32,
    stop: Arc<AtomicBool>,
) -> tokio::task::JoinHandle<Acquisitions> {
    tokio::spawn(async move {
        let mut seen = Acquisitions::default();
        while !stop.load(Ordering::SeqCst) {
            match store
                .acquire(&group, subscription, "writer", &[partition], LEASE)
                .await
            {
                Ok(acquired) => {
                    if let Some(lease) = acquired.granted.iter().find(|l| l.partition == partition)
                    {
                        seen.last_epoch = lease.epoch;
                        seen.acknowledged += 1;
                    }
                }
                Err(error) if !error.is_retryable() => seen.not_retryable += 1,
                Err(_) => {}
            }
            match store
                .release(&group, subscription, "writer", &[partition])
                .await
            {
                Err(error) if !error.is_retryable() => seen.not_retryable += 1,
                _ => {}
            }
        }
        seen
    })
}

/// The epoch a second owner is granted `partition` under, once the failover is over: retried
/// through errors and refusals (a writer's lease that survived) for up to 20 s.
async fn second_owners_epoch(
    probe: &RedisClusterCheckpointStore,
    group: &str,
    subscription: &str,
    partition: u32,
) -> u64 {
    let started = Instant::now();
    loop {
        if let Ok(acquired) = probe
            .acquire(group, subscription, "checker", &[partition], LEASE)
            .await
            && let Some(lease) = acquired.granted.iter().find(|l| l.partition == partition)
        {
            return lease.epoch;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{subscription}/{partition}: no second owner within 20 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One failover's outcome.
#[derive(Debug, Clone, Copy, Default)]
struct Measured {
    /// Writers whose last acknowledged acquisition was lost (the second owner's epoch was not
    /// higher), without and with the replica acknowledgement.
    lost_without: u64,
    lost_with: u64,
    /// Epochs handed out twice (the writer's last acknowledged epoch minus the one the
    /// promoted replica had), summed over the writers, without and with.
    reused_without: u64,
    reused_with: u64,
    /// Acquisitions acknowledged, without and with.
    acknowledged_without: u64,
    acknowledged_with: u64,
    /// Calls that failed with an error that is not retryable.
    not_retryable: u64,
}

/// Writers with and without the replica acknowledgement acquire and release leases of a
/// group on the master serving `slot`; the master dies under them by `fault`; once its
/// replica is promoted, a second owner acquires each partition. Then the killed node is
/// started again.
async fn measure_one_failover(
    cluster: &mut OwnCluster,
    (plain, acked, probe): (
        &RedisClusterCheckpointStore,
        &RedisClusterCheckpointStore,
        &RedisClusterCheckpointStore,
    ),
    slot: u16,
    fault: Fault,
) -> Measured {
    let master = cluster.master_of(slot).await;
    let group = group_served_with(cluster, probe, slot).await;
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for partition in 0..WRITERS {
        for (store, subscription) in [(plain, "without"), (acked, "with")] {
            let writer = spawn_acquirer(
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
    stop.store(true, Ordering::SeqCst);
    cluster.kill(master);
    if fault == Fault::CutOffThenCrash {
        cluster.signal(replica, "CONT");
    }
    cluster.wait_for_promotion(master, slot).await;
    let mut measured = Measured::default();
    for (subscription, partition, writer) in writers {
        let seen = writer.await.expect("a writer");
        let second = second_owners_epoch(probe, &group, subscription, partition).await;
        let lost = u64::from(seen.last_epoch > 0 && second <= seen.last_epoch);
        let reused = (seen.last_epoch + 1).saturating_sub(second);
        measured.not_retryable += seen.not_retryable;
        if subscription == "with" {
            measured.lost_with += lost;
            measured.reused_with += reused;
            measured.acknowledged_with += seen.acknowledged;
        } else {
            measured.lost_without += lost;
            measured.reused_without += reused;
            measured.acknowledged_without += seen.acknowledged;
        }
    }
    cluster.restart(master).await;
    measured
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_acquisitions_lost_in_a_failover_with_and_without_replica_ack() {
    let runs = std::env::var("CHECKPOINT_LEASE_FAILOVERS")
        .ok()
        .and_then(|runs| runs.parse().ok())
        .unwrap_or(MEASURED_FAILOVERS);
    let budget = Duration::from_secs(6) * runs;
    let started = Instant::now();
    let mut cluster = OwnCluster::start().await;
    let writer = |store: RedisClusterCheckpointStore| {
        store.with_timeout(WRITER_TIMEOUT).expect("a valid timeout")
    };
    let plain = writer(connect(&cluster).await);
    let acked = writer(connect(&cluster).await).with_replica_ack(1, REPLICA_ACK_TIMEOUT);
    let probe = connect(&cluster).await;
    let mut results: Vec<(Fault, Measured)> = Vec::new();
    for run in 0..runs {
        if started.elapsed() > budget {
            break;
        }
        let fault = fault_of(run);
        let stores = (&plain, &acked, &probe);
        let measured = measure_one_failover(&mut cluster, stores, shard_slot(run), fault).await;
        eprintln!("lease failover {run}: {fault:?} {measured:?}");
        results.push((fault, measured));
        cluster.wait_until_healthy().await;
    }
    for fault in [Fault::Crash, Fault::CutOffThenCrash] {
        let runs: Vec<&Measured> = results
            .iter()
            .filter(|(f, _)| *f == fault)
            .map(|(_, m)| m)
            .collect();
        let sum = |f: fn(&Measured) -> u64| runs.iter().map(|m| f(m)).sum::<u64>();
        eprintln!(
            "LEASE FAILOVER LOSS {fault:?}: {} failovers, {WRITERS} writers each way; without \
             replica ack {} of {} writers' last acknowledged acquisitions lost, {} epochs \
             handed out twice ({} acquisitions acknowledged); with replica ack {} lost, {} \
             epochs twice ({} acknowledged); calls failing with an error that is not \
             retryable: {}",
            runs.len(),
            sum(|m| m.lost_without),
            u64::from(WRITERS) * runs.len() as u64,
            sum(|m| m.reused_without),
            sum(|m| m.acknowledged_without),
            sum(|m| m.lost_with),
            sum(|m| m.reused_with),
            sum(|m| m.acknowledged_with),
            sum(|m| m.not_retryable),
        );
    }
    assert!(
        results.len() >= 6,
        "only {} failovers within {budget:?}: too few to say anything",
        results.len()
    );
    // As for the checkpoints: with the acknowledgement an acquisition succeeds only once the
    // killed master's replica, the one promoted, has it.
    let lost_with: u64 = results.iter().map(|(_, m)| m.lost_with).sum();
    assert_eq!(
        lost_with, 0,
        "with the replica acknowledgement, failovers lost acknowledged acquisitions: {results:?}"
    );
    let not_retryable: u64 = results.iter().map(|(_, m)| m.not_retryable).sum();
    assert_eq!(
        not_retryable, 0,
        "calls failed with errors that are not retryable: {results:?}"
    );
}
