//! Checks that need the single server: round trips on the wire, secrets, timeouts, WAIT.

use std::time::{Duration, Instant};

use checkpoint_conformance::fresh_group;
use checkpoint_conformance::round_trips::CountingProxy;
use checkpoint_core::{
    Checkpoint, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint, Operation,
};
use checkpoint_redis::{RedisCheckpointStore, ReplicaAckError};

use crate::support::{DelayingProxy, FreezingProxy, single_addr, single_store, single_url};

/// Round trips per operation, counted on the wire after a warm-up, as the crate doc states.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_trips_per_operation() {
    let proxy = CountingProxy::start(single_addr().await)
        .await
        .expect("starting the counting proxy");
    let store = RedisCheckpointStore::connect(&format!("redis://{}", proxy.local_addr()))
        .await
        .expect("connecting through the proxy");
    let group = fresh_group("redis-round-trips");
    let fingerprint = Fingerprint::from_bytes([9; 32]);
    let batch: Vec<Checkpoint> = (0..10_000u32)
        .map(|i| Checkpoint::new(format!("s{}", i % 10), i, u64::from(i) + 1))
        .collect();

    // Warm-up: every script once, so the server has it cached (EVALSHA hits).
    store.save(&group, "warm", 0, 1).await.expect("save");
    store.save_all(&group, &batch[..2]).await.expect("save_all");
    store
        .claim(&group, "warm", 1, fingerprint, 0)
        .await
        .expect("claim");
    store
        .advance(&group, "warm", 1, 0, 1)
        .await
        .expect("advance");
    store.load(&group, "warm", 0).await.expect("load");

    let mut measured = Vec::new();
    macro_rules! count {
        ($name:literal, $expected:expr, $operation:expr) => {{
            proxy.reset();
            $operation.await.expect($name);
            let round_trips = proxy.round_trips();
            measured.push(($name, round_trips));
            assert_eq!(round_trips, $expected, "round trips of {}", $name);
        }};
    }
    count!("save", 1, store.save(&group, "s", 0, 5));
    count!("save (behind)", 1, store.save(&group, "s", 0, 4));
    count!("load", 1, store.load(&group, "s", 0));
    // Ten chunk calls in one pipeline: the client waits once (see
    // `save_all_of_ten_chunks_waits_for_one_response_time`), but the proxy counts one more
    // exchange each time the server starts answering before the rest of the pipeline has
    // passed it, so its count depends on timing: 1 most of the time, at most one per chunk.
    let chunks = 10_000usize.div_ceil(checkpoint_redis::SAVE_ALL_CHUNK) as u64;
    assert_eq!(chunks, 10, "the documented chunk size");
    proxy.reset();
    store.save_all(&group, &batch).await.expect("save_all");
    let round_trips = proxy.round_trips();
    measured.push(("save_all of 10,000", round_trips));
    assert!(
        (1..=chunks).contains(&round_trips),
        "save_all of 10,000: {round_trips} exchanges counted"
    );
    count!("claim", 1, store.claim(&group, "c", 0, fingerprint, 7));
    count!("advance", 1, store.advance(&group, "c", 0, 7, 8));
    let small = fresh_group("redis-round-trips-small");
    store.save(&small, "s", 0, 1).await.expect("save");
    count!("list (small group)", 1, store.list(&small));
    // The batch, plus warm/0, warm/1, s/0 and c/0.
    let listed = store.list(&group).await.expect("list");
    assert_eq!(listed.len(), 10_000 + 4);
    eprintln!("round trips per operation: {measured:?}");

    // With a replica acknowledgement, each write is followed by one WAIT.
    let acked = store
        .clone()
        .with_replica_ack(0, Duration::from_millis(100));
    count!("save with WAIT", 2, acked.save(&group, "s", 0, 6));
}

/// save_all of 10,000 is ten script calls in one pipeline: behind a proxy that delays every
/// answer of the server by one second, it takes that second once, not once per chunk (ten
/// seconds); with `WAIT` after it, twice; after `SCRIPT FLUSH`, twice (every chunk is sent
/// again with the script's source, in a second pipeline).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn save_all_of_ten_chunks_waits_for_one_response_time() {
    const DELAY: Duration = Duration::from_secs(1);
    let proxy = DelayingProxy::start(single_addr().await).await;
    let store = RedisCheckpointStore::connect(&format!("redis://{}", proxy.addr))
        .await
        .expect("connecting through the proxy")
        .with_timeout(Duration::from_secs(60));
    let group = fresh_group("redis-pipelined");
    let batch = |offset: u64| -> Vec<Checkpoint> {
        (0..10_000u32)
            .map(|i| Checkpoint::new(format!("s{}", i % 10), i, u64::from(i) + offset))
            .collect()
    };
    let chunks = 10_000usize.div_ceil(checkpoint_redis::SAVE_ALL_CHUNK);
    assert_eq!(chunks, 10, "the documented chunk size");
    // Undelayed warm-up: the script cached, every field created.
    store.save_all(&group, &batch(1)).await.expect("save_all");

    proxy.set_delay(DELAY);
    let started = Instant::now();
    store.save(&group, "s0", 0, 2).await.expect("save");
    let one_save = started.elapsed();
    assert!(
        one_save >= DELAY,
        "the proxy delays: a save took {one_save:?}"
    );

    let timed = |what: &'static str, responses: u32, took: Duration| {
        eprintln!("{what}: {took:?} behind a {DELAY:?} delay per answer");
        assert!(
            took >= DELAY * responses && took < DELAY * (responses + 2),
            "{what} took {took:?} behind a proxy that delays each answer by {DELAY:?}: \
             expected {responses} response time(s), not one per chunk ({:?} for {chunks})",
            DELAY * u32::try_from(chunks).expect("a few chunks")
        );
    };
    let started = Instant::now();
    store.save_all(&group, &batch(10)).await.expect("save_all");
    timed("save_all of 10,000", 1, started.elapsed());

    let acked = store
        .clone()
        .with_replica_ack(0, Duration::from_millis(100));
    let started = Instant::now();
    acked
        .save_all(&group, &batch(20))
        .await
        .expect("save_all with WAIT");
    timed("save_all of 10,000 with WAIT", 2, started.elapsed());

    let mut admin = redis::Client::open(single_url().await)
        .expect("REDIS_URL")
        .get_multiplexed_async_connection()
        .await
        .expect("an admin connection");
    let () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async(&mut admin)
        .await
        .expect("SCRIPT FLUSH");
    let started = Instant::now();
    store
        .save_all(&group, &batch(30))
        .await
        .expect("save_all after SCRIPT FLUSH");
    timed(
        "save_all of 10,000 after SCRIPT FLUSH",
        2,
        started.elapsed(),
    );

    proxy.set_delay(Duration::ZERO);
    let mut listed = store.list(&group).await.expect("list");
    listed.sort();
    let mut expected = batch(30);
    expected.sort();
    assert_eq!(listed, expected);
}

/// Measures save_all of 10,000 against 10,000 sequential saves (printed, not asserted), and
/// checks that both stored everything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timing_save_all_against_sequential_saves() {
    let store = single_store().await;
    let batch: Vec<Checkpoint> = (0..10_000u32)
        .map(|i| Checkpoint::new(format!("s{}", i % 10), i, u64::from(i) + 1))
        .collect();
    let bulk = fresh_group("redis-timing-bulk");
    let started = Instant::now();
    store.save_all(&bulk, &batch).await.expect("save_all");
    let bulk_time = started.elapsed();
    let one_by_one = fresh_group("redis-timing-single");
    let started = Instant::now();
    for checkpoint in &batch {
        store
            .save(
                &one_by_one,
                &checkpoint.subscription,
                checkpoint.partition,
                checkpoint.position,
            )
            .await
            .expect("save");
    }
    let sequential_time = started.elapsed();
    eprintln!(
        "10,000 checkpoints: save_all {bulk_time:?}, 10,000 sequential saves {sequential_time:?}"
    );
    for group in [&bulk, &one_by_one] {
        let mut listed = store.list(group).await.expect("list");
        listed.sort();
        let mut expected = batch.clone();
        expected.sort();
        assert_eq!(listed, expected);
    }
}

/// A user with a password, made with ACL for this test and removed after it.
struct TemporaryUser {
    name: String,
    password: String,
}

impl TemporaryUser {
    async fn create() -> Self {
        let group = fresh_group("user");
        let name = format!("checkpoint-test-{group}");
        let password = format!("pw-{group}-secret");
        let client = redis::Client::open(single_url().await).expect("REDIS_URL");
        let mut connection = client
            .get_multiplexed_async_connection()
            .await
            .expect("connecting");
        let () = redis::cmd("ACL")
            .arg("SETUSER")
            .arg(&name)
            .arg("on")
            .arg(format!(">{password}"))
            .arg("~*")
            .arg("+@all")
            .query_async(&mut connection)
            .await
            .expect("ACL SETUSER");
        Self { name, password }
    }

    async fn delete(&self) {
        let client = redis::Client::open(single_url().await).expect("REDIS_URL");
        let mut connection = client
            .get_multiplexed_async_connection()
            .await
            .expect("connecting");
        let _: i64 = redis::cmd("ACL")
            .arg("DELUSER")
            .arg(&self.name)
            .query_async(&mut connection)
            .await
            .expect("ACL DELUSER");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debug_and_errors_never_show_the_password() {
    let addr = single_addr().await;
    let user = TemporaryUser::create().await;
    let url = format!("redis://{}:{}@{addr}/0", user.name, user.password);
    let connected = RedisCheckpointStore::connect(&url).await;
    let wrong = RedisCheckpointStore::connect(&format!(
        "redis://{}:{}-wrong@{addr}/0",
        user.name, user.password
    ))
    .await;
    user.delete().await;
    let store = connected.expect("connecting with the temporary user");
    let debug = format!("{store:?} {:#?}", store);
    assert!(
        !debug.contains(&user.password),
        "Debug shows the password: {debug}"
    );
    assert!(
        debug.contains(&addr.port().to_string()),
        "Debug shows the endpoint: {debug}"
    );
    // The connection itself would print it: that is why the store never prints it.
    let connection_debug = format!("{:?}", store.connection());
    eprintln!(
        "connection Debug shows the password: {}",
        connection_debug.contains(&user.password)
    );

    let error = wrong.expect_err("a wrong password must fail");
    let text = format!(
        "{error} {error:?} {}",
        checkpoint_conformance::error_chain(&error)
    );
    assert!(
        !text.contains(&user.password),
        "the error shows the password: {text}"
    );
    assert!(
        !error.is_retryable(),
        "a refused password is not retryable: {error:?}"
    );
    match error {
        Error::Backend {
            operation: Operation::Connect,
            ..
        } => {}
        other => panic!("expected a connect error, got {other:?}"),
    }
    let malformed = RedisCheckpointStore::connect("redis://user:pw-hunter2@[::1").await;
    let text = format!("{:?}", malformed.expect_err("a malformed URL"));
    assert!(!text.contains("hunter2"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_server_times_out_and_the_next_call_works() {
    let proxy = FreezingProxy::start(single_addr().await).await;
    let store = RedisCheckpointStore::connect(&format!("redis://{}", proxy.addr))
        .await
        .expect("connecting through the proxy")
        .with_timeout(Duration::from_millis(300));
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
