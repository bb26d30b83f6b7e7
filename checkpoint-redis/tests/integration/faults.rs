//! Faults injected into servers of the tests' own (never the machine's shared Redis): killed
//! connections, clean restarts and crashes, a paused server. Each test shows the fault hit
//! (calls failed), that every failure was a retryable backend or timeout error, that the
//! history checker finds nothing acknowledged lost and nothing moved back, and that the store
//! works again afterwards.
//!
//! On the single server: a hanging server times out, too few replica acknowledgements, a
//! killed connection; leases held across a killed connection, a clean restart and a crash. On
//! the single server and on the cluster (`single::`, `cluster::`): a server that lost its
//! script cache (`SCRIPT FLUSH`, as after a restart or a failover), and a group holding data no
//! store writes, each also for leases. On both too, each with tests of its own: a black hole
//! (the kit's `BlackHoleProxy` in front of the server, or of every cluster node): every call
//! times out, and the store works again soon after the network does; and a lease holder
//! behind the black hole stops before another owner is granted its leases.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use checkpoint_conformance::harness::{BlackHoleBounds, BlackHoleProxy, black_hole_and_back};
use checkpoint_conformance::history::{HistoryConfig, run_histories_with_faults};
use checkpoint_conformance::recovery::{Recovery, save_until_recovered};
use checkpoint_conformance::{ErrorTally, audited, fresh_group};
use checkpoint_core::{
    Checkpoint, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint, LeaseStore,
    Operation, UnexpectedValue,
};
use checkpoint_redis::{RedisCheckpointStore, RedisClusterCheckpointStore, ReplicaAckError};
use redis::cluster::{ClusterClientBuilder, NodeAddress};

use crate::support::{
    Conn, DURABLE, OwnRedis, VOLATILE, cluster_urls, raw_value, single_addr, single_store,
    single_url,
};

crate::on_single_and_cluster!(
    scripts_are_reloaded_after_script_flush
    foreign_data_in_a_group_is_an_error
    lease_scripts_are_reloaded_after_script_flush
    foreign_data_in_the_leases_is_an_error
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_connections_in_the_middle_of_histories() {
    let server = OwnRedis::start(DURABLE).await;
    let store = audited(
        RedisCheckpointStore::connect(&server.url())
            .await
            .expect("connecting to the test's own server"),
    );
    let admin = server.admin().await;
    let killed = AtomicU64::new(0);
    let config = HistoryConfig::for_faults(48);
    let started = Instant::now();
    // In each history, after 0 to 2.1 ms, kill every normal connection but the admin's own:
    // that is the store's connection, with whatever calls it has in flight.
    let failed_calls =
        run_histories_with_faults(&store, &config, Duration::from_secs(10), |case| {
            let mut admin = admin.clone();
            let killed = &killed;
            async move {
                tokio::time::sleep(Duration::from_micros(300 * u64::from(case % 8))).await;
                let n: u64 = redis::cmd("CLIENT")
                    .arg("KILL")
                    .arg("TYPE")
                    .arg("normal")
                    .arg("SKIPME")
                    .arg("yes")
                    .query_async(&mut admin)
                    .await
                    .expect("CLIENT KILL");
                killed.fetch_add(n, Ordering::SeqCst);
            }
        })
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    let ErrorTally {
        count: errors,
        first: sample,
    } = store
        .around()
        .take_errors()
        .unwrap_or_else(|failure| panic!("{failure}"));
    eprintln!(
        "CLIENT KILL in {} histories (seed {}): {} connections killed, {failed_calls} calls \
         failed, {errors} errors in all (e.g. {:?}), {:?}",
        config.cases,
        config.seed,
        killed.load(Ordering::SeqCst),
        sample,
        started.elapsed()
    );
    assert!(
        killed.load(Ordering::SeqCst) >= u64::from(config.cases),
        "a kill missed the store's connection"
    );
    assert!(
        failed_calls > 0,
        "no call was in flight when the connections were killed"
    );

    // Recovery after one more kill, measured.
    let mut admin = admin.clone();
    let group = fresh_group("redis-kill-recovery");
    store
        .inner()
        .save(&group, "probe", 0, 1)
        .await
        .expect("save");
    let _: u64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("normal")
        .arg("SKIPME")
        .arg("yes")
        .query_async(&mut admin)
        .await
        .expect("CLIENT KILL");
    let Recovery { took, failures } =
        save_until_recovered(store.inner(), &group, "probe", 0, 2, Duration::from_secs(5))
            .await
            .unwrap_or_else(|failure| panic!("{failure}"));
    eprintln!("after CLIENT KILL: saved again after {took:?} and {failures} failed attempts");
    assert_eq!(
        store.inner().load(&group, "probe", 0).await.expect("load"),
        Some(2)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_restarts_in_the_middle_of_histories() {
    let server = Arc::new(tokio::sync::Mutex::new(OwnRedis::start(DURABLE).await));
    let url = server.lock().await.url();
    let store = audited(
        RedisCheckpointStore::connect(&url)
            .await
            .expect("connecting to the test's own server"),
    );
    let config = HistoryConfig::for_faults(10);
    let started = Instant::now();
    // Each history: after 0 to 2 ms, stop the server (a clean SIGTERM shutdown in even
    // histories, a SIGKILL crash in odd ones) and start it again on the same port and data.
    let failed_calls =
        run_histories_with_faults(&store, &config, Duration::from_secs(10), |case| {
            let server = Arc::clone(&server);
            async move {
                tokio::time::sleep(Duration::from_micros(500 * u64::from(case % 5))).await;
                let mut server = server.lock().await;
                server
                    .stop(if case % 2 == 0 { "TERM" } else { "KILL" })
                    .await;
                server.restart().await;
            }
        })
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    let ErrorTally {
        count: errors,
        first: sample,
    } = store
        .around()
        .take_errors()
        .unwrap_or_else(|failure| panic!("{failure}"));
    eprintln!(
        "restart in {} histories (seed {}): {failed_calls} calls failed, {errors} errors in all \
         (e.g. {:?}), {:?}",
        config.cases,
        config.seed,
        sample,
        started.elapsed()
    );
    assert!(
        failed_calls > 0,
        "no call was in flight when the server stopped"
    );

    // Recovery after one more restart, measured from the moment the server answers again.
    let group = fresh_group("redis-restart-recovery");
    store
        .inner()
        .save(&group, "probe", 0, 1)
        .await
        .expect("save");
    {
        let mut server = server.lock().await;
        server.stop("KILL").await;
        // While the server is down, a call fails with a retryable error; it does not hang.
        let started = Instant::now();
        let error = store
            .inner()
            .save(&group, "probe", 0, 2)
            .await
            .expect_err("a save while the server is down");
        let down_for = started.elapsed();
        assert!(error.is_retryable(), "{error:?}");
        assert!(
            down_for < checkpoint_core::DEFAULT_TIMEOUT + Duration::from_secs(1),
            "{down_for:?}"
        );
        eprintln!("a save while the server is down failed after {down_for:?}: {error}");
        server.restart().await;
    }
    let Recovery { took, failures } = save_until_recovered(
        store.inner(),
        &group,
        "probe",
        0,
        2,
        Duration::from_secs(10),
    )
    .await
    .unwrap_or_else(|failure| panic!("{failure}"));
    eprintln!("after a restart: saved again after {took:?} and {failures} failed attempts");
    assert_eq!(
        store.inner().load(&group, "probe", 0).await.expect("load"),
        Some(2)
    );
}

/// Writers save ever higher positions until the server is SIGKILLed under them; after the
/// restart every key is at least at its last acknowledged save, under the persistence the
/// crate doc recommends. Without persistence the same check finds everything lost, which shows
/// the check can fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_saves_survive_a_crash_with_appendfsync_always() {
    let durable = crash_during_saves(DURABLE).await;
    for (key, (acknowledged, attempted, loaded)) in durable.iter().enumerate() {
        assert!(
            *loaded >= Some(*acknowledged) && *loaded <= Some(*attempted),
            "writer {key}: {loaded:?} after the crash, but {acknowledged} was acknowledged \
             (and {attempted} the highest attempted)"
        );
    }
    let volatile = crash_during_saves(VOLATILE).await;
    assert!(
        volatile.iter().all(|(_, _, loaded)| loaded.is_none()),
        "without persistence a crash should lose the checkpoints: {volatile:?}"
    );
}

/// (last acknowledged, last attempted, loaded after the restart) per writer.
async fn crash_during_saves(persistence: &[&str]) -> Vec<(u64, u64, Option<u64>)> {
    let mut server = OwnRedis::start(persistence).await;
    let store = RedisCheckpointStore::connect(&server.url())
        .await
        .expect("connecting to the test's own server");
    let group = fresh_group("redis-crash");
    let writers: Vec<_> = (0..4u32)
        .map(|writer| {
            let store = store.clone();
            let group = group.clone();
            tokio::spawn(async move {
                let mut acknowledged = 0;
                let mut position = 1;
                loop {
                    match store.save(&group, "w", writer, position).await {
                        Ok(()) => acknowledged = position,
                        Err(error) => {
                            assert!(error.is_retryable(), "{error:?}");
                            return (acknowledged, position);
                        }
                    }
                    position += 1;
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(200)).await;
    server.stop("KILL").await;
    let mut outcomes = Vec::new();
    for writer in writers {
        outcomes.push(writer.await.expect("a writer task"));
    }
    server.restart().await;
    let mut result = Vec::new();
    for (writer, (acknowledged, attempted)) in outcomes.into_iter().enumerate() {
        let started = Instant::now();
        let loaded = loop {
            match store.load(&group, "w", writer as u32).await {
                Ok(position) => break position,
                Err(error) if started.elapsed() < Duration::from_secs(10) => {
                    assert!(error.is_retryable(), "{error:?}");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(error) => panic!("no recovery after the restart: {error:?}"),
            }
        };
        assert!(
            acknowledged > 0,
            "writer {writer} saved nothing before the crash"
        );
        result.push((acknowledged, attempted, loaded));
    }
    eprintln!(
        "SIGKILL under 4 writers with {persistence:?}: (acknowledged, attempted, after restart) = {result:?}"
    );
    result
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_server_times_out_in_bounded_time_and_the_store_works_after_it() {
    let server = OwnRedis::start(DURABLE).await;
    let timeout = Duration::from_millis(500);
    let store = RedisCheckpointStore::connect(&server.url())
        .await
        .expect("connecting to the test's own server")
        .with_timeout(timeout)
        .expect("a valid timeout");
    let group = fresh_group("redis-paused");
    let fingerprint = Fingerprint::from_bytes([3; 32]);
    store.save(&group, "s", 0, 1).await.expect("save");
    store
        .claim(&group, "e", 0, fingerprint, 10)
        .await
        .expect("claim");

    server.signal("STOP");
    let mut latencies = Vec::new();
    macro_rules! times_out {
        ($operation:expr, $call:expr) => {{
            let started = Instant::now();
            let result = $call.await;
            let took = started.elapsed();
            match result {
                Err(Error::Timeout {
                    operation, after, ..
                }) => {
                    assert_eq!(operation, $operation);
                    assert_eq!(after, timeout);
                }
                other => panic!("expected a timeout of {:?}, got {other:?}", $operation),
            }
            assert!(
                took >= timeout,
                "{:?} returned before the timeout: {took:?}",
                $operation
            );
            // A correctness bound (the call returns at all), not a speed target.
            assert!(
                took < timeout + Duration::from_secs(2),
                "{:?} took {took:?} with a {timeout:?} timeout",
                $operation
            );
            latencies.push(($operation, took));
        }};
    }
    times_out!(Operation::Save, store.save(&group, "s", 0, 2));
    times_out!(Operation::Load, store.load(&group, "s", 0));
    times_out!(Operation::List, store.list(&group));
    times_out!(
        Operation::SaveAll,
        store.save_all(&group, &[Checkpoint::new("s", 1, 5)])
    );
    times_out!(
        Operation::Claim,
        store.claim(&group, "e", 0, fingerprint, 0)
    );
    times_out!(Operation::Advance, store.advance(&group, "e", 0, 10, 11));
    eprintln!("paused server, {timeout:?} timeout: {latencies:?}");

    server.signal("CONT");
    let started = Instant::now();
    // The server now runs what it had queued: the timed-out save of 2 and advance to 11 may
    // have been applied. Whatever happened, nothing moves back and the next calls work.
    store
        .save(&group, "s", 0, 3)
        .await
        .expect("save after SIGCONT");
    let recovered = started.elapsed();
    assert_eq!(store.load(&group, "s", 0).await.expect("load"), Some(3));
    let position = store
        .claim(&group, "e", 0, fingerprint, 0)
        .await
        .expect("claim");
    assert!(position == 10 || position == 11, "{position}");
    store
        .advance(&group, "e", 0, position, 20)
        .await
        .expect("advance after SIGCONT");
    eprintln!("after SIGCONT: the first save took {recovered:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_server_times_out_and_the_next_call_works() {
    let proxy = crate::support::proxy(single_addr().await).await;
    let store = RedisCheckpointStore::connect(&format!("redis://{}", proxy.local_addr()))
        .await
        .expect("connecting through the proxy")
        .with_timeout(Duration::from_millis(300))
        .expect("a valid timeout");
    let group = fresh_group("redis-timeout");
    store.save(&group, "s", 0, 1).await.expect("save");
    proxy.freeze(true);
    let started = Instant::now();
    match store.save(&group, "s", 0, 2).await {
        Err(Error::Timeout {
            operation: Operation::Save,
            after,
            ..
        }) => {
            assert_eq!(after, Duration::from_millis(300));
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(started.elapsed() >= Duration::from_millis(300));
    match store.load(&group, "s", 0).await {
        Err(error @ Error::Timeout { .. }) => assert!(error.is_retryable()),
        other => panic!("expected a timeout, got {other:?}"),
    }
    proxy.freeze(false);
    // The timed-out save may or may not have been applied; it was sent, so it is.
    store
        .save(&group, "s", 0, 3)
        .await
        .expect("save after the server answers again");
    assert_eq!(store.load(&group, "s", 0).await.expect("load"), Some(3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_few_replica_acknowledgements_is_a_backend_error() {
    let store = single_store().await;
    let mut connection = store.connection().clone();
    let info: String = redis::cmd("INFO")
        .arg("replication")
        .query_async(&mut connection)
        .await
        .expect("INFO replication");
    let replicas: u32 = info
        .lines()
        .find_map(|line| line.strip_prefix("connected_slaves:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("connected_slaves in INFO replication");
    let group = fresh_group("redis-wait");
    let acked = store
        .clone()
        .with_replica_ack(replicas + 1, Duration::from_millis(50));
    let error = acked
        .save(&group, "s", 0, 10)
        .await
        .expect_err("not enough replicas");
    let source = std::error::Error::source(&error).expect("a source");
    let ack = source
        .downcast_ref::<ReplicaAckError>()
        .unwrap_or_else(|| panic!("expected a ReplicaAckError, got {error:?}"));
    assert_eq!(ack.requested, replicas + 1);
    assert!(ack.acknowledged <= u64::from(replicas));
    assert!(error.is_retryable());
    assert!(error.to_string().contains("save"), "{error}");
    assert!(
        source.to_string().contains("replicas acknowledged"),
        "{source}"
    );
    // The write is applied on the primary all the same.
    assert_eq!(store.load(&group, "s", 0).await.expect("load"), Some(10));
    // Asking for what is there succeeds.
    let enough = store
        .clone()
        .with_replica_ack(replicas, Duration::from_millis(50));
    enough
        .save(&group, "s", 0, 11)
        .await
        .expect("save with enough replicas");
    enough
        .save_all(&group, &[Checkpoint::new("s", 1, 1)])
        .await
        .expect("save_all with enough replicas");
    enough
        .claim(&group, "c", 0, Fingerprint::from_bytes([1; 32]), 0)
        .await
        .expect("claim with enough replicas");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_connection_loses_nothing_and_the_store_reconnects() {
    let store = single_store().await;
    let group = fresh_group("redis-killed");
    store.save(&group, "s", 0, 10).await.expect("save");
    let mut connection = store.connection().clone();
    let id: i64 = redis::cmd("CLIENT")
        .arg("ID")
        .query_async(&mut connection)
        .await
        .expect("CLIENT ID");
    // Kill exactly the store's connection, from another one.
    let client = redis::Client::open(single_url().await).expect("REDIS_URL");
    let mut killer = client
        .get_multiplexed_async_connection()
        .await
        .expect("connecting");
    let killed: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("ID")
        .arg(id)
        .query_async(&mut killer)
        .await
        .expect("CLIENT KILL");
    assert_eq!(killed, 1);
    // The first call may see the dropped connection (a retryable error); the manager then
    // reconnects and the next calls work. Nothing saved is lost or moved back.
    match store.save(&group, "s", 0, 5).await {
        Ok(()) => {}
        Err(error) => assert!(error.is_retryable(), "{error:?}"),
    }
    let mut loaded = None;
    for _ in 0..50 {
        match store.load(&group, "s", 0).await {
            Ok(position) => {
                loaded = position;
                break;
            }
            Err(error) => {
                assert!(error.is_retryable(), "{error:?}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    assert_eq!(loaded, Some(10));
    store
        .save(&group, "s", 0, 11)
        .await
        .expect("save after reconnecting");
    assert_eq!(store.load(&group, "s", 0).await.expect("load"), Some(11));
}

fn fingerprint(byte: u8) -> Fingerprint {
    Fingerprint::from_bytes([byte; 32])
}

async fn script_flush<C: Conn>(store: &RedisCheckpointStore<C>) {
    let mut connection = store.connection().clone();
    // On a cluster redis-rs sends SCRIPT FLUSH to every node.
    let () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async(&mut connection)
        .await
        .expect("SCRIPT FLUSH");
}

async fn scripts_are_reloaded_after_script_flush<C: Conn>(store: &RedisCheckpointStore<C>) {
    let group = fresh_group("redis-flush");
    store
        .save(&group, "s", 0, 1)
        .await
        .expect("save before the flush");
    script_flush(store).await;
    store
        .save(&group, "s", 0, 2)
        .await
        .expect("save after the flush");
    assert_eq!(store.load(&group, "s", 0).await.expect("load"), Some(2));
    script_flush(store).await;
    store
        .save_all(
            &group,
            &[Checkpoint::new("s", 0, 3), Checkpoint::new("s", 1, 4)],
        )
        .await
        .expect("save_all after the flush");
    script_flush(store).await;
    let position = store
        .claim(&group, "s", 0, fingerprint(2), 0)
        .await
        .expect("claim after the flush");
    assert_eq!(position, 3);
    script_flush(store).await;
    store
        .advance(&group, "s", 0, 3, 5)
        .await
        .expect("advance after the flush");
    assert_eq!(store.load(&group, "s", 0).await.expect("load"), Some(5));
    assert_eq!(store.load(&group, "s", 1).await.expect("load"), Some(4));
    // A batch of several chunks, pipelined: every chunk finds the script gone and is sent
    // again with its source.
    script_flush(store).await;
    let batch: Vec<Checkpoint> = (0..2_500u32)
        .map(|i| Checkpoint::new("many", i, u64::from(i) + 10))
        .collect();
    store
        .save_all(&group, &batch)
        .await
        .expect("save_all of three chunks after the flush");
    let listed = store.list(&group).await.expect("list");
    for checkpoint in &batch {
        assert!(
            listed.contains(checkpoint),
            "{checkpoint:?} missing after the flush"
        );
    }
}

async fn foreign_data_in_a_group_is_an_error<C: Conn>(store: &RedisCheckpointStore<C>) {
    let group = fresh_group("redis-foreign");
    store.save(&group, "s", 0, 1).await.expect("save");
    let mut connection = store.connection().clone();
    let () = redis::cmd("HSET")
        .arg(store.group_key(&group).expect("a valid group"))
        .arg("0:t")
        .arg("not a number")
        .query_async(&mut connection)
        .await
        .expect("HSET");
    for error in [
        store
            .list(&group)
            .await
            .expect_err("list of a corrupt group"),
        store
            .load(&group, "t", 0)
            .await
            .expect_err("load of a corrupt value"),
        store
            .save(&group, "t", 0, 5)
            .await
            .expect_err("save over a corrupt value"),
    ] {
        match &error {
            Error::Backend {
                retryable: false, ..
            } => {}
            other => panic!("expected a non-retryable backend error, got {other:?}"),
        }
        let chain = checkpoint_conformance::error_chain(&error);
        assert!(
            chain.contains("not a checkpoint")
                || chain.contains("which no checkpoint store writes"),
            "{chain}"
        );
    }
    let error = store.list(&group).await.expect_err("list");
    let source = std::error::Error::source(&error).expect("a source");
    assert!(
        source.downcast_ref::<UnexpectedValue>().is_some(),
        "{error:?}"
    );
    // The corrupt value was not overwritten by the refused save.
    let raw = raw_value(store, &group, "0:t").await;
    assert_eq!(raw.as_deref(), Some("not a number"));
}

/// The bounds of the black-hole tests (the same for every backend): a 1 s timeout; each call
/// in the black hole ends within 0.5 s of it; once the network is back, a save retried every
/// 10 ms succeeds within the timeout and 2 s more.
const BLACK_HOLE: BlackHoleBounds = BlackHoleBounds {
    timeout: Duration::from_secs(1),
    margin: Duration::from_millis(500),
    recovery: Duration::from_secs(3),
};

/// The server vanishes without closing the store's connection: every call times out, and once
/// the network is back the store, which gave that connection up, works on a new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_black_hole_times_out_every_call_and_the_store_reconnects_after_it() {
    let proxy = BlackHoleProxy::start(single_addr().await)
        .await
        .expect("starting a proxy");
    let store = RedisCheckpointStore::connect(&format!("redis://{}", proxy.local_addr()))
        .await
        .expect("connecting through the proxy")
        .with_timeout(BLACK_HOLE.timeout)
        .expect("a valid timeout");
    let report = black_hole_and_back(&store, &[&proxy], BLACK_HOLE)
        .await
        .unwrap_or_else(|failure| panic!("single server: {failure}"));
    eprintln!(
        "single server, black hole: {report:?}; {} connections, {} held",
        proxy.connections(),
        proxy.held()
    );
}

/// Every node of the cluster (`REDIS_CLUSTER_URLS`) as `CLUSTER NODES` lists it, failed ones
/// left out: masters and replicas.
async fn cluster_nodes() -> Vec<NodeAddress> {
    let url = cluster_urls().into_iter().next().expect("a node URL");
    let mut connection = redis::Client::open(url.as_str())
        .expect("a node URL")
        .get_multiplexed_async_connection()
        .await
        .expect("a connection to a cluster node");
    let nodes: String = redis::cmd("CLUSTER")
        .arg("NODES")
        .query_async(&mut connection)
        .await
        .expect("CLUSTER NODES");
    nodes
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let address = fields.nth(1)?;
            let flags = fields.next()?;
            if flags.contains("fail") || flags.contains("noaddr") || flags.contains("handshake") {
                return None;
            }
            // `ip:port@cluster-bus-port[,hostname]`
            let node = address.split('@').next()?;
            Some(node.parse().expect("a node address"))
        })
        .collect()
}

/// The same on a cluster, with a proxy in front of every node. The nodes announce their own
/// addresses (in `CLUSTER SLOTS` and in redirects), which would go around the proxies: the
/// client maps each announced address to its node's proxy (redis-rs's `node_address_map`,
/// applied whenever it connects to a node), so every connection goes through a proxy, the
/// black hole catches them all, and the test runs on the shared cluster without starting one
/// whose nodes announce the proxies' ports.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_black_hole_in_front_of_every_cluster_node_times_out_every_call_and_the_store_reconnects()
{
    let nodes = cluster_nodes().await;
    assert!(!nodes.is_empty(), "CLUSTER NODES listed no node");
    let mut proxies = Vec::new();
    let mut map = std::collections::HashMap::new();
    for node in &nodes {
        let proxy = BlackHoleProxy::start((node.host(), node.port()))
            .await
            .expect("starting a proxy");
        let local = proxy.local_addr();
        map.insert(
            node.clone(),
            NodeAddress::new(local.ip().to_string(), local.port()),
        );
        proxies.push(proxy);
    }
    let client = ClusterClientBuilder::new(
        proxies
            .iter()
            .map(|proxy| format!("redis://{}", proxy.local_addr())),
    )
    .node_address_map(map)
    .build()
    .expect("a cluster client");
    let store = RedisClusterCheckpointStore::connect_cluster_client(client)
        .await
        .expect("connecting through the proxies")
        .with_timeout(BLACK_HOLE.timeout)
        .expect("a valid timeout");
    let proxies: Vec<&BlackHoleProxy> = proxies.iter().collect();
    let report = black_hole_and_back(&store, &proxies, BLACK_HOLE)
        .await
        .unwrap_or_else(|failure| panic!("cluster: {failure}"));
    let relayed: Vec<u64> = proxies.iter().map(|proxy| proxy.relayed()).collect();
    eprintln!(
        "cluster of {} nodes, black hole: {report:?}; connections relayed per node {relayed:?}",
        nodes.len()
    );
}

/// The lease of a test: a minute, so that no fault test waits for an expiry.
const LEASE: Duration = Duration::from_secs(60);

/// The owner and epoch of each live lease of (group, "s").
async fn holders<C: Conn>(store: &RedisCheckpointStore<C>, group: &str) -> Vec<(u32, String, u64)> {
    let table = store.leases(group, "s").await.expect("leases");
    table
        .leases
        .into_iter()
        .map(|lease| (lease.partition, lease.owner, lease.epoch))
        .collect()
}

/// Retries `call` on retryable errors (a reconnect under way) for up to 5 s.
async fn retried<T, F, Fut>(mut call: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, Error>>,
{
    let started = Instant::now();
    loop {
        match call().await {
            Ok(value) => return value,
            Err(error) if error.is_retryable() && started.elapsed() < Duration::from_secs(5) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(error) => panic!("{error:?}"),
        }
    }
}

/// A lease acquired before the store's connection is killed is still held, by the same owner
/// under the same epoch, after the reconnect; renew works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_survive_a_killed_connection() {
    let store = single_store().await;
    let group = fresh_group("redis-lease-killed");
    let acquired = store
        .acquire(&group, "s", "a", &[0, 1], LEASE)
        .await
        .expect("acquire");
    let before = holders(&store, &group).await;
    let mut connection = store.connection().clone();
    let id: i64 = redis::cmd("CLIENT")
        .arg("ID")
        .query_async(&mut connection)
        .await
        .expect("CLIENT ID");
    let client = redis::Client::open(single_url().await).expect("REDIS_URL");
    let mut killer = client
        .get_multiplexed_async_connection()
        .await
        .expect("connecting");
    let killed: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("ID")
        .arg(id)
        .query_async(&mut killer)
        .await
        .expect("CLIENT KILL");
    assert_eq!(killed, 1);
    if let Err(error) = store.renew(&group, "s", "a", LEASE).await {
        assert!(error.is_retryable(), "{error:?}");
    }
    let renewed = retried(|| store.renew(&group, "s", "a", LEASE)).await;
    assert_eq!(renewed, acquired.granted);
    assert_eq!(holders(&store, &group).await, before);
    let other = store
        .acquire(&group, "s", "b", &[0], LEASE)
        .await
        .expect("acquire");
    assert_eq!(other.refused, vec![0], "the lease is still held");
}

/// Leases acquired before a clean restart and before a crash (SIGKILL) of a server with the
/// persistence the crate doc recommends are still held after it, by the same owner under the
/// same epoch, and renew works: the expiry is the server's clock, which a restart does not
/// move back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_survive_a_restart_and_a_crash() {
    let mut server = OwnRedis::start(DURABLE).await;
    let store = RedisCheckpointStore::connect(&server.url())
        .await
        .expect("connecting to the test's own server");
    let group = fresh_group("redis-lease-restart");
    for (round, signal) in ["TERM", "KILL"].into_iter().enumerate() {
        let partition = u32::try_from(round).expect("two rounds");
        store
            .acquire(&group, "s", "a", &[partition], LEASE)
            .await
            .expect("acquire");
        let before = holders(&store, &group).await;
        server.stop(signal).await;
        server.restart().await;
        let table = retried(|| store.leases(&group, "s")).await;
        let after: Vec<(u32, String, u64)> = table
            .leases
            .into_iter()
            .map(|lease| (lease.partition, lease.owner, lease.epoch))
            .collect();
        assert_eq!(after, before, "{signal}");
        let renewed = retried(|| store.renew(&group, "s", "a", LEASE)).await;
        assert_eq!(renewed.len(), before.len(), "{signal}");
        let other = store
            .acquire(&group, "s", "b", &[partition], LEASE)
            .await
            .expect("acquire");
        assert_eq!(
            other.refused,
            vec![partition],
            "{signal}: the lease is still held"
        );
    }
}

async fn lease_scripts_are_reloaded_after_script_flush<C: Conn>(store: &RedisCheckpointStore<C>) {
    let group = fresh_group("redis-lease-flush");
    script_flush(store).await;
    let acquired = store
        .acquire(&group, "s", "a", &[0, 1, 2], LEASE)
        .await
        .expect("acquire after the flush");
    assert_eq!(acquired.granted.len(), 3);
    script_flush(store).await;
    assert_eq!(
        store
            .renew(&group, "s", "a", LEASE)
            .await
            .expect("renew after the flush"),
        acquired.granted
    );
    script_flush(store).await;
    store
        .request_handover(&group, "s", "b", &[0])
        .await
        .expect("request_handover after the flush");
    script_flush(store).await;
    let released = store
        .release(&group, "s", "a", &[0])
        .await
        .expect("release after the flush");
    assert_eq!(released.released, vec![0]);
    script_flush(store).await;
    assert_eq!(
        store
            .leases(&group, "s")
            .await
            .expect("leases after the flush")
            .leases
            .len(),
        2
    );
    script_flush(store).await;
    assert_eq!(
        store
            .leave(&group, "s", "a")
            .await
            .expect("leave after the flush"),
        vec![1, 2]
    );
}

async fn foreign_data_in_the_leases_is_an_error<C: Conn>(store: &RedisCheckpointStore<C>) {
    let group = fresh_group("redis-lease-foreign");
    store
        .acquire(&group, "s", "a", &[0], LEASE)
        .await
        .expect("acquire");
    let key = format!(
        "{}:leases:s",
        store.group_key(&group).expect("a valid group")
    );
    let mut connection = store.connection().clone();
    let () = redis::cmd("HSET")
        .arg(&key)
        .arg("1")
        .arg("not a lease")
        .query_async(&mut connection)
        .await
        .expect("HSET");
    for error in [
        store
            .leases(&group, "s")
            .await
            .expect_err("leases over a corrupt value"),
        store
            .acquire(&group, "s", "a", &[1], LEASE)
            .await
            .expect_err("acquire of a corrupt lease"),
        store
            .release(&group, "s", "a", &[1])
            .await
            .expect_err("release of a corrupt lease"),
    ] {
        assert!(
            matches!(
                error,
                Error::Backend {
                    retryable: false,
                    ..
                }
            ),
            "{error:?}"
        );
        let source = std::error::Error::source(&error).expect("a source");
        assert!(
            source.downcast_ref::<UnexpectedValue>().is_some(),
            "{error:?}"
        );
    }
    // Nothing was written by the refused calls: the corrupt value is as it was, and the lease
    // of partition 0 too.
    let raw: Option<String> = redis::cmd("HGET")
        .arg(&key)
        .arg("1")
        .query_async(&mut connection)
        .await
        .expect("HGET");
    assert_eq!(raw.as_deref(), Some("not a lease"));
    let renewed = store
        .renew(&group, "s", "a", LEASE)
        .await
        .expect("renew of partition 0");
    assert_eq!(renewed.len(), 1);
}

/// A lease holder cut off by a black hole (the kit's proxy between it and the server) fails
/// every renew within its timeout, and another owner (a direct client) is granted its leases
/// only after the holder's local deadline: the server's clock expired them, no later than the
/// holder had stopped treating them as held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_black_holed_lease_holder_stops_before_another_owner_takes_over() {
    use checkpoint_conformance::harness::lease_faults::black_holed_holder_stops_first;

    let proxy = BlackHoleProxy::start(single_addr().await)
        .await
        .expect("starting a proxy");
    let holder = RedisCheckpointStore::connect(&format!("redis://{}", proxy.local_addr()))
        .await
        .expect("connecting through the proxy")
        .with_timeout(Duration::from_millis(200))
        .expect("a valid timeout");
    let taker = single_store().await;
    let measured = black_holed_holder_stops_first(&holder, &taker, &proxy, Duration::from_secs(2))
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    eprintln!("black-holed lease holder: {measured:?}");
}
