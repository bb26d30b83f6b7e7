//! Round trips on the single server, counted on the wire by the kit's `CountingProxy`, and a
//! pipelined `save_all` timed behind a proxy that delays every answer.

use std::time::{Duration, Instant};

use checkpoint_conformance::fresh_group;
use checkpoint_core::{Checkpoint, CheckpointStore, ExclusiveCheckpointStore, Fingerprint};
use checkpoint_redis::RedisCheckpointStore;

use crate::support::{counted_store, proxy, single_addr, single_url};

/// Round trips per operation, counted on the wire after a warm-up, as the crate doc states.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_trips_per_operation() {
    let (store, proxy) = counted_store().await;
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
    eprintln!("round trips per operation: {measured:?}");

    // With a replica acknowledgement, each write carries its WAIT in the same pipeline: no
    // round trip more.
    let acked = store
        .clone()
        .with_replica_ack(0, Duration::from_millis(100));
    count!("save with WAIT", 1, acked.save(&group, "s", 0, 6));
    count!(
        "save_all with WAIT",
        1,
        acked.save_all(&group, &[Checkpoint::new("s", 0, 7)])
    );
    count!(
        "claim with WAIT",
        1,
        acked.claim(&group, "c", 1, fingerprint, 7)
    );
    count!("advance with WAIT", 1, acked.advance(&group, "c", 1, 7, 8));
}

/// Round trips of `list`: `HLEN` alone for an empty group, then one `HGETALL` up to
/// `LIST_HGETALL_MAX` fields, `HSCAN` steps above.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_trips_of_list() {
    let (store, proxy) = counted_store().await;
    let count = |what: &str, expected: u64, round_trips: u64| {
        eprintln!("list ({what}): {round_trips} round trips");
        assert_eq!(round_trips, expected, "round trips of list ({what})");
    };
    let empty = fresh_group("redis-round-trips-empty");
    proxy.reset();
    store.list(&empty).await.expect("list");
    count("empty group", 1, proxy.round_trips());
    let small = fresh_group("redis-round-trips-small");
    store.save(&small, "s", 0, 1).await.expect("save");
    proxy.reset();
    store.list(&small).await.expect("list");
    count("small group", 2, proxy.round_trips());
    let largest = checkpoint_redis::LIST_HGETALL_MAX;
    let batch: Vec<Checkpoint> = (0..largest + 4)
        .map(|i| Checkpoint::new(format!("s{}", i % 10), i as u32, i as u64 + 1))
        .collect();
    let full = fresh_group("redis-round-trips-full");
    store
        .save_all(&full, &batch[..largest])
        .await
        .expect("save_all");
    proxy.reset();
    assert_eq!(store.list(&full).await.expect("list").len(), largest);
    count("LIST_HGETALL_MAX fields", 2, proxy.round_trips());
    // More than one HGETALL reads: HSCAN steps (about one per LIST_SCAN_COUNT fields, COUNT
    // being a hint) after the HLEN.
    let over = fresh_group("redis-round-trips-over");
    store.save_all(&over, &batch).await.expect("save_all");
    proxy.reset();
    assert_eq!(store.list(&over).await.expect("list").len(), largest + 4);
    let round_trips = proxy.round_trips();
    eprintln!("list of {}: {round_trips} round trips", largest + 4);
    assert!(round_trips > 2, "list of {}: {round_trips}", largest + 4);
}

/// save_all of 10,000 is ten script calls in one pipeline: behind a proxy that delays every
/// answer of the server by one second, it takes that second once, not once per chunk (ten
/// seconds); with `WAIT` at the end of the same pipeline, once too; after `SCRIPT FLUSH`,
/// twice (every chunk is sent again with the script's source, in a second pipeline that ends
/// with its own `WAIT`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn save_all_of_ten_chunks_waits_for_one_response_time() {
    const DELAY: Duration = Duration::from_secs(1);
    let proxy = proxy(single_addr().await).await;
    let store = RedisCheckpointStore::connect(&format!("redis://{}", proxy.local_addr()))
        .await
        .expect("connecting through the proxy")
        .with_timeout(Duration::from_secs(60))
        .expect("a valid timeout");
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
    timed("save_all of 10,000 with WAIT", 1, started.elapsed());

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
    acked
        .save_all(&group, &batch(30))
        .await
        .expect("save_all with WAIT after SCRIPT FLUSH");
    timed(
        "save_all of 10,000 with WAIT after SCRIPT FLUSH",
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

/// Round trips of every lease operation, counted on the wire after a warm-up, as the crate
/// doc's "Leases" section states: one script call each, whatever the number of leases the
/// owner holds (renew of 1 and of 100).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_trips_per_lease_operation() {
    use checkpoint_core::LeaseStore;

    let (store, proxy) = counted_store().await;
    let group = fresh_group("redis-lease-round-trips");
    let duration = Duration::from_secs(30);
    let hundred: Vec<u32> = (100..200).collect();

    // Warm-up: every script once, so the server has it cached (EVALSHA hits).
    store
        .acquire(&group, "warm", "w", &[0], duration)
        .await
        .expect("acquire");
    store
        .renew(&group, "warm", "w", duration)
        .await
        .expect("renew");
    store
        .request_handover(&group, "warm", "x", &[0])
        .await
        .expect("request_handover");
    store
        .release(&group, "warm", "w", &[0])
        .await
        .expect("release");
    store.leave(&group, "warm", "w").await.expect("leave");
    store.leases(&group, "warm").await.expect("leases");

    let mut measured = Vec::new();
    macro_rules! count {
        ($name:literal, $operation:expr) => {{
            proxy.reset();
            let result = $operation.await.expect($name);
            let round_trips = proxy.round_trips();
            measured.push(($name, round_trips));
            assert_eq!(round_trips, 1, "round trips of {}", $name);
            result
        }};
    }
    let acquired = count!(
        "acquire of 3",
        store.acquire(&group, "s", "a", &[0, 1, 2], duration)
    );
    assert_eq!(acquired.granted.len(), 3);
    count!(
        "acquire of 100",
        store.acquire(&group, "s", "b", &hundred, duration)
    );
    count!(
        "acquire, joining",
        store.acquire(&group, "s", "c", &[], duration)
    );
    store
        .release(&group, "s", "a", &[1, 2])
        .await
        .expect("release");
    let one = count!("renew of 1", store.renew(&group, "s", "a", duration));
    assert_eq!(one.len(), 1);
    let many = count!("renew of 100", store.renew(&group, "s", "b", duration));
    assert_eq!(many.len(), 100);
    count!(
        "request_handover",
        store.request_handover(&group, "s", "c", &[0, 100])
    );
    let released = count!("release", store.release(&group, "s", "b", &[100, 101, 5]));
    assert_eq!(released.released, vec![100, 101]);
    count!("leases", store.leases(&group, "s"));
    let left = count!("leave", store.leave(&group, "s", "b"));
    assert_eq!(left.len(), 98);

    eprintln!("round trips per lease operation: {measured:?}");
}

/// With a replica acknowledgement, each lease write carries its `WAIT` in the same pipeline:
/// still one round trip.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_writes_with_replica_ack_are_one_round_trip() {
    use checkpoint_core::LeaseStore;

    let (store, proxy) = counted_store().await;
    let store = store.with_replica_ack(0, Duration::from_millis(100));
    let group = fresh_group("redis-lease-round-trips-wait");
    let duration = Duration::from_secs(30);
    // Warm-up: the scripts cached.
    store
        .acquire(&group, "warm", "w", &[0], duration)
        .await
        .expect("acquire");
    store
        .renew(&group, "warm", "w", duration)
        .await
        .expect("renew");
    store
        .request_handover(&group, "warm", "x", &[0])
        .await
        .expect("request_handover");
    store
        .release(&group, "warm", "w", &[0])
        .await
        .expect("release");
    store.leave(&group, "warm", "w").await.expect("leave");
    macro_rules! count {
        ($name:literal, $operation:expr) => {{
            proxy.reset();
            $operation.await.expect($name);
            assert_eq!(proxy.round_trips(), 1, "round trips of {}", $name);
        }};
    }
    count!(
        "acquire with WAIT",
        store.acquire(&group, "s", "b", &[7], duration)
    );
    count!("renew with WAIT", store.renew(&group, "s", "b", duration));
    count!(
        "request_handover with WAIT",
        store.request_handover(&group, "s", "c", &[7])
    );
    count!("release with WAIT", store.release(&group, "s", "b", &[7]));
    count!("leave with WAIT", store.leave(&group, "s", "b"));
}

/// Round trips of every parked-entry operation, counted on the wire after a warm-up, as the
/// crate doc's "Parked entries" section states: one command or script call each (`parked` of a
/// non-empty group: `HLEN`, then `HGETALL`), and no more with a replica acknowledgement.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_trips_per_parked_operation() {
    use checkpoint_core::parked::{ParkedEntry, ParkedStore};

    let (store, proxy) = counted_store().await;
    let group = fresh_group("redis-parked-round-trips");
    let entry = ParkedEntry::new("s", 3, 41, "no such customer", 5);
    // Warm-up: the script once, so the server has it cached (an EVALSHA hit).
    store
        .retry_parked(&group, "warm", 0, 0)
        .await
        .expect("retry_parked");

    let mut measured = Vec::new();
    macro_rules! count {
        ($name:literal, $expected:expr, $operation:expr) => {{
            proxy.reset();
            let result = $operation.await.expect($name);
            let round_trips = proxy.round_trips();
            measured.push(($name, round_trips));
            assert_eq!(round_trips, $expected, "round trips of {}", $name);
            result
        }};
    }
    let empty = fresh_group("redis-parked-round-trips-empty");
    assert!(count!("parked, empty group", 1, store.parked(&empty)).is_empty());
    count!("park", 1, store.park(&group, &entry));
    assert!(count!(
        "retry_parked",
        1,
        store.retry_parked(&group, "s", 3, 41)
    ));
    let parked = count!("parked", 2, store.parked(&group));
    assert!(parked[0].retry_requested, "{parked:?}");
    assert!(count!("unpark", 1, store.unpark(&group, "s", 3, 41)));

    let acked = store
        .clone()
        .with_replica_ack(0, Duration::from_millis(100));
    count!("park with WAIT", 1, acked.park(&group, &entry));
    assert!(count!(
        "retry_parked with WAIT",
        1,
        acked.retry_parked(&group, "s", 3, 41)
    ));
    assert!(count!(
        "unpark with WAIT",
        1,
        acked.unpark(&group, "s", 3, 41)
    ));
    assert!(!count!(
        "unpark with WAIT, not parked",
        1,
        acked.unpark(&group, "s", 3, 41)
    ));
    eprintln!("round trips per parked operation: {measured:?}");
}
