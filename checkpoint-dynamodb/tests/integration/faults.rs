//! Faults and how they are reported. Injected into servers of the tests' own (never the shared
//! `DYNAMODB_ENDPOINT`): cut connections in the middle of concurrent histories, a crash and
//! restart, a paused server; each test shows that the fault hit (calls failed), that every
//! failure was the typed error it should be (never a panic, never a wrong success), and that
//! the store works again after. Beside them: an unreachable server, a missing table, a server
//! that never answers and an item this store never writes, each an error that keeps its source
//! and says honestly whether a retry may help. And a black hole between the client and a
//! server of the test's own (the kit's `BlackHoleProxy`): every call times out, and the store
//! works again soon after the network does.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::AttributeValue;

use checkpoint_conformance::harness::{BlackHoleBounds, BlackHoleProxy, black_hole_and_back};
use checkpoint_conformance::history::{HistoryConfig, run_histories_with_faults};
use checkpoint_conformance::{ErrorTally, audited};
use checkpoint_conformance::{error_chain, fresh_group};
use checkpoint_core::{
    Checkpoint, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint, Operation,
    UnexpectedValue,
};
use checkpoint_dynamodb::DynamoDbCheckpointStore;

use crate::support::own_moto::OwnMoto;
use crate::support::{TABLE, client_for, client_without_retries, endpoint, store};
use checkpoint_conformance::proxy::Proxy;

fn fingerprint(byte: u8) -> Fingerprint {
    Fingerprint::from_bytes([byte; 32])
}

/// Runs `cases` histories through a cutting proxy, cutting every open connection twice in
/// each; returns (failed calls, errors seen, connections cut).
async fn histories_under_cuts(
    server: &OwnMoto,
    retries: bool,
    cases: u32,
) -> (u64, usize, u64, Option<String>) {
    let proxy = Proxy::start(server.address())
        .await
        .expect("starting the cutting proxy");
    let endpoint = format!("http://{}", proxy.local_addr());
    let client = if retries {
        client_for(&endpoint)
    } else {
        client_without_retries(&endpoint)
    };
    let store = DynamoDbCheckpointStore::new(client)
        .with_table(&fresh_group("table"))
        .expect("a valid table name");
    store.create_table().await.expect("create_table");
    let store = audited(store);
    let config = HistoryConfig {
        cases,
        seed: HistoryConfig::from_env().seed,
        shrink_runs: 0,
    };
    // Each history takes some hundred milliseconds on moto; cut at 0 to 70 ms, and again 60 ms
    // later, so that cuts land on calls in flight at different points of the history.
    let failed_calls =
        run_histories_with_faults(&store, &config, Duration::from_secs(10), |case| {
            let proxy = &proxy;
            async move {
                tokio::time::sleep(Duration::from_millis(10 * u64::from(case % 8))).await;
                proxy.cut_all();
                tokio::time::sleep(Duration::from_millis(60)).await;
                proxy.cut_all();
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
        "cuts with retries {retries}: {cases} histories (CHECKPOINT_SEED={}), {} connections \
         accepted, {} cut, {failed_calls} calls failed, {errors} errors in all; e.g. {sample:?}",
        config.seed,
        proxy.connections(),
        proxy.cut()
    );

    // The next calls succeed on new connections.
    let group = fresh_group("after-cuts");
    store
        .inner()
        .save(&group, "s", 0, 7)
        .await
        .expect("save after the cuts");
    assert_eq!(
        store.inner().load(&group, "s", 0).await.expect("load"),
        Some(7)
    );
    (failed_calls, errors, proxy.cut(), sample)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cut_connections_in_the_middle_of_histories() {
    let server = OwnMoto::start();
    let started = Instant::now();
    // Without SDK retries every cut request is visible as a failed call.
    let (failed, errors, cut, _) = histories_under_cuts(&server, false, 20).await;
    assert!(cut > 0, "no connection was open when the proxy cut");
    assert!(
        failed > 0,
        "no call was in flight when the connections were cut"
    );
    assert!(
        errors as u64 >= failed,
        "every failed call returned an error"
    );
    // With the SDK's standard retries most cut requests are retried on a new connection; the
    // promises hold either way (the checker and the error audit run the same).
    let (failed_retrying, _, cut_retrying, _) = histories_under_cuts(&server, true, 12).await;
    assert!(
        cut_retrying > 0,
        "no connection was open when the proxy cut"
    );
    eprintln!(
        "without retries {failed} of the calls failed; with retries {failed_retrying}; {:?}",
        started.elapsed()
    );
}

/// Every operation, each once; errors collected with their operation.
async fn every_operation(
    store: &DynamoDbCheckpointStore,
    group: &str,
) -> Vec<(Operation, Result<(), Error>, Duration)> {
    let mut results = Vec::new();
    macro_rules! run {
        ($operation:expr, $call:expr) => {{
            let started = Instant::now();
            let result = $call.await.map(|_| ());
            results.push(($operation, result, started.elapsed()));
        }};
    }
    run!(Operation::Save, store.save(group, "s", 0, 20));
    run!(Operation::Load, store.load(group, "s", 0));
    run!(Operation::List, store.list(group));
    run!(
        Operation::SaveAll,
        store.save_all(
            group,
            &[Checkpoint::new("s", 0, 30), Checkpoint::new("t", 1, 5)]
        )
    );
    run!(
        Operation::Claim,
        store.claim(group, "y", 0, fingerprint(1), 0)
    );
    run!(Operation::Advance, store.advance(group, "x", 0, 100, 150));
    results
}

/// moto keeps every table in memory, so a restart of the emulator loses them all: this test
/// shows that (it is why durability across restarts is not claimed for the emulator; see the
/// crate documentation), and that calls in flight and during the outage fail with a retryable
/// backend error, and that the store works again once the table is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_of_the_emulator_fails_calls_retryably_and_loses_its_tables() {
    let mut server = OwnMoto::start();
    let store = DynamoDbCheckpointStore::new(client_without_retries(&server.endpoint()))
        .with_table(&fresh_group("table"))
        .expect("a valid table name");
    store.create_table().await.expect("create_table");
    let group = fresh_group("restart");
    store.save(&group, "s", 0, 10).await.expect("save");
    store
        .claim(&group, "x", 0, fingerprint(1), 100)
        .await
        .expect("claim");

    // A batch of 120 keys in flight (about two seconds on moto) when the server is killed.
    let batch: Vec<Checkpoint> = (0..120).map(|p| Checkpoint::new("b", p, 1)).collect();
    let in_flight = tokio::spawn({
        let (store, group) = (store.clone(), group.clone());
        async move { store.save_all(&group, &batch).await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    server.kill();
    let result = in_flight.await.expect("the batch task panicked");
    match &result {
        Err(Error::Backend {
            operation: Operation::SaveAll,
            retryable: true,
            ..
        }) => {}
        other => panic!("the batch in flight: expected a retryable backend error, got {other:?}"),
    }
    eprintln!(
        "in flight at the kill: {}",
        error_chain(result.as_ref().unwrap_err())
    );

    // During the outage: every operation fails at once (connection refused), retryably.
    for (operation, result, took) in every_operation(&store, &group).await {
        match result {
            Err(Error::Backend {
                backend: "dynamodb",
                operation: failed,
                retryable: true,
                ..
            }) if failed == operation => {}
            other => panic!("{operation:?} during the outage: {other:?}"),
        }
        assert!(
            took < Duration::from_secs(10),
            "{operation:?} took {took:?}"
        );
    }

    let restarted = Instant::now();
    server.start_again();
    // The emulator lost the table: a typed ResourceNotFoundException, a permanent error.
    let described = store
        .client()
        .describe_table()
        .table_name(store.table())
        .send()
        .await;
    assert!(
        described
            .as_ref()
            .err()
            .and_then(|e| e.as_service_error())
            .is_some_and(|e| e.is_resource_not_found_exception()),
        "moto keeps tables in memory, so the table should be gone after a restart: {described:?}"
    );
    match store.load(&group, "s", 0).await {
        Err(
            error @ Error::Backend {
                retryable: false, ..
            },
        ) => assert!(
            error_chain(&error).contains("ResourceNotFound"),
            "{error:?}"
        ),
        other => panic!("load from a lost table: {other:?}"),
    }

    // Back to work: the table re-created, every operation succeeds.
    store.create_table().await.expect("create_table again");
    assert_eq!(
        store.load(&group, "s", 0).await.expect("load"),
        None,
        "the emulator's restart lost the acknowledged save (in memory only)"
    );
    store.save(&group, "s", 0, 11).await.expect("save");
    assert_eq!(store.load(&group, "s", 0).await.expect("load"), Some(11));
    assert_eq!(store.list(&group).await.expect("list").len(), 1);
    store
        .claim(&group, "x", 0, fingerprint(1), 100)
        .await
        .expect("claim");
    store
        .advance(&group, "x", 0, 100, 150)
        .await
        .expect("advance");
    eprintln!(
        "restart: serving again and every operation succeeded {:?} after the start",
        restarted.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_server_times_out_every_operation_and_the_store_recovers() {
    const TIMEOUT: Duration = Duration::from_millis(500);
    // Far above the timeout: the bound shows the call does not hang, not how fast it is.
    const SLACK: Duration = Duration::from_secs(3);
    let server = OwnMoto::start();
    // The SDK's standard retries stay on: the store's timeout bounds each request with its
    // retries anyway.
    let store = DynamoDbCheckpointStore::new(client_for(&server.endpoint()))
        .with_table(&fresh_group("table"))
        .expect("a valid table name");
    // Before the short timeout: a fresh moto answers its first request slowly.
    store.create_table().await.expect("create_table");
    let store = store.with_timeout(TIMEOUT).expect("a valid timeout");
    let group = fresh_group("pause");
    store.save(&group, "s", 0, 10).await.expect("save");
    store
        .claim(&group, "x", 0, fingerprint(1), 100)
        .await
        .expect("claim");

    server.pause();
    let results = every_operation(&store, &group).await;
    server.resume();
    for (operation, result, took) in &results {
        match result {
            Err(Error::Timeout {
                backend: "dynamodb",
                operation: timed_out,
                after,
            }) if timed_out == operation && *after == TIMEOUT => {}
            other => panic!("{operation:?} while paused: expected a timeout, got {other:?}"),
        }
        assert!(
            *took >= TIMEOUT && *took < TIMEOUT + SLACK,
            "{operation:?} returned after {took:?}"
        );
        eprintln!("paused: {operation:?} timed out after {took:?}");
    }

    // After SIGCONT the server also works through the requests the timed-out calls had sent
    // (they may land late: every timed-out call "may or may not have taken effect").
    let resumed = Instant::now();
    let loaded = store
        .load(&group, "s", 0)
        .await
        .expect("load after SIGCONT");
    eprintln!(
        "first call after SIGCONT answered in {:?}",
        resumed.elapsed()
    );
    assert!(
        matches!(loaded, Some(10 | 20 | 30)),
        "only the saves made may be there: {loaded:?}"
    );
    store.save(&group, "s", 0, 40).await.expect("save");
    assert_eq!(store.load(&group, "s", 0).await.expect("load"), Some(40));
    // The timed-out advance 100 -> 150 may still land; advance from wherever it is.
    let mut from = store
        .load(&group, "x", 0)
        .await
        .expect("load")
        .expect("claimed");
    assert!(from == 100 || from == 150, "{from}");
    loop {
        match store.advance(&group, "x", 0, from, 1_000).await {
            Ok(()) => break,
            Err(Error::Moved {
                current: Some(current),
                ..
            }) if from == 100 && current == 150 => from = current,
            Err(error) => panic!("advance after SIGCONT: {error:?}"),
        }
    }
    assert_eq!(store.load(&group, "x", 0).await.expect("load"), Some(1_000));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_server_is_a_retryable_backend_error_with_its_source() {
    // A port nothing listens on: bind one, learn its number, close it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let store =
        DynamoDbCheckpointStore::new(client_without_retries(&format!("http://127.0.0.1:{port}")))
            .with_table(TABLE)
            .unwrap();
    let error = store.save("g", "s", 0, 1).await.unwrap_err();
    match &error {
        Error::Backend {
            backend: "dynamodb",
            operation: Operation::Save,
            retryable: true,
            ..
        } => {}
        other => panic!("expected a retryable backend error, got {other:?}"),
    }
    assert!(
        std::error::Error::source(&error).is_some(),
        "the SDK error is kept as the source"
    );
    eprintln!("unreachable: {}", error_chain(&error));
    let error = store
        .save_all("g", &[checkpoint_core::Checkpoint::new("s", 0, 1)])
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            Error::Backend {
                operation: Operation::SaveAll,
                retryable: true,
                ..
            }
        ),
        "{error:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_table_is_a_permanent_error() {
    let store = DynamoDbCheckpointStore::new(client_for(&endpoint()))
        .with_table(&format!("missing-{}", fresh_group("t")))
        .unwrap();
    for error in [
        store.load("g", "s", 0).await.unwrap_err(),
        store.list("g").await.unwrap_err(),
        store.save("g", "s", 0, 1).await.unwrap_err(),
        store
            .claim("g", "s", 0, Fingerprint::from_bytes([0; 32]), 0)
            .await
            .unwrap_err(),
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
        let chain = error_chain(&error);
        assert!(
            chain.contains("ResourceNotFound"),
            "the chain names the service error: {chain}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_times_out() {
    // Accepts connections and never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let store = DynamoDbCheckpointStore::new(client_for(&format!("http://{address}")))
        .with_table(TABLE)
        .unwrap()
        .with_timeout(Duration::from_millis(300))
        .unwrap();
    let started = std::time::Instant::now();
    let error = store.load("g", "s", 0).await.unwrap_err();
    assert!(
        matches!(
            error,
            Error::Timeout {
                backend: "dynamodb",
                operation: Operation::Load,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error.is_retryable());
    assert!(started.elapsed() < Duration::from_secs(10));
    let error = store.advance("g", "s", 0, 1, 2).await.unwrap_err();
    assert!(
        matches!(
            error,
            Error::Timeout {
                operation: Operation::Advance,
                ..
            }
        ),
        "{error:?}"
    );
    silent.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_item_the_store_did_not_write_is_a_permanent_error() {
    let store = store().await;
    let group = fresh_group("malformed");
    // A position stored as a string, under a valid key of partition 0, subscription "s", and
    // one above i64::MAX (a number no store writes; Redis refuses it too) for subscription "big".
    for (subscription, position) in [
        ("s", AttributeValue::S("12".to_owned())),
        ("big", AttributeValue::N("9223372036854775808".to_owned())),
    ] {
        store
            .client()
            .put_item()
            .table_name(store.table())
            .set_item(Some(HashMap::from([
                ("group".to_owned(), AttributeValue::S(group.clone())),
                (
                    "key".to_owned(),
                    AttributeValue::S(format!("0000000000#{subscription}")),
                ),
                ("position".to_owned(), position),
            ])))
            .send()
            .await
            .unwrap();
    }
    for error in [
        store.load(&group, "s", 0).await.unwrap_err(),
        store.load(&group, "big", 0).await.unwrap_err(),
        store.list(&group).await.unwrap_err(),
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
        let unexpected = std::error::Error::source(&error)
            .and_then(|source| source.downcast_ref::<UnexpectedValue>())
            .unwrap_or_else(|| panic!("an UnexpectedValue source: {}", error_chain(&error)));
        assert_eq!(unexpected.field, "position", "{unexpected}");
    }
}

/// The bounds of the black-hole test (the same for every backend): a 1 s timeout; each call
/// in the black hole ends within 0.5 s of it; once the network is back, a save retried every
/// 10 ms succeeds within the timeout and 2 s more.
const BLACK_HOLE: BlackHoleBounds = BlackHoleBounds {
    timeout: Duration::from_secs(1),
    margin: Duration::from_millis(500),
    recovery: Duration::from_secs(3),
};

/// How many connections the SDK's pool holds, idle, when the network fails: fewer than the
/// calls the run makes in the black hole, which give them up (see the crate doc for more).
const IDLE_AT_THE_BLACK_HOLE: u32 = 3;

/// Runs the kit's black hole between a client of the store and the server at `address`, with
/// [`IDLE_AT_THE_BLACK_HOLE`] connections opened first (where the server keeps them alive), and
/// prints what it measured as `server`'s.
async fn black_hole_in_front_of(server: &str, address: std::net::SocketAddr) {
    let direct = DynamoDbCheckpointStore::new(client_for(&format!("http://{address}")))
        .with_table(&fresh_group("table"))
        .expect("a valid table name");
    // Directly and without the short timeout: a fresh moto answers its first request slowly.
    direct.create_table().await.expect("create_table");
    let proxy = BlackHoleProxy::start(address)
        .await
        .expect("starting a proxy");
    // The SDK's standard retries stay on: the store's timeout bounds each request with them.
    let store = DynamoDbCheckpointStore::new(client_for(&format!("http://{}", proxy.local_addr())))
        .with_table(direct.table())
        .expect("a valid table name")
        .with_timeout(BLACK_HOLE.timeout)
        .expect("a valid timeout");
    let group = fresh_group("warm-up");
    // One call first: the client's first request resolves its endpoint and credentials, and
    // the concurrent ones behind it would wait for that and then share one connection.
    store
        .load(&group, "s", 0)
        .await
        .unwrap_or_else(|error| panic!("{server}: warm-up load: {}", error_chain(&error)));
    let loads = (0..IDLE_AT_THE_BLACK_HOLE).map(|partition| {
        let (store, group) = (store.clone(), group.clone());
        tokio::spawn(async move { store.load(&group, "s", partition).await })
    });
    for loaded in futures_util::future::join_all(loads).await {
        let loaded = loaded.expect("a warm-up load ran");
        loaded.unwrap_or_else(|error| panic!("{server}: warm-up load: {}", error_chain(&error)));
    }
    let warm = proxy.connections();
    let report = black_hole_and_back(&store, &[&proxy], BLACK_HOLE)
        .await
        .unwrap_or_else(|failure| panic!("{server}: {failure}"));
    eprintln!(
        "{server}, black hole: {report:?}; {warm} connections opened by the warm-up, {} \
         in all, {} held by the black hole",
        proxy.connections(),
        proxy.held()
    );
}

/// The server vanishes without closing the SDK's connections: every call times out, and once
/// the network is back the client works on new connections (it does not reuse a connection
/// whose request the store's timeout abandoned). On a moto of the test's own, so that no other
/// test's request holds moto's global lock for longer than the timeout. moto closes every
/// connection after its answer (`Connection: close`), so the SDK's pool is empty there
/// between calls: the dynalite test below is the one with idle connections.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_black_hole_times_out_every_call_and_the_store_reconnects_after_it() {
    let server = OwnMoto::start();
    black_hole_in_front_of("moto", server.address()).await;
}

/// The same on dynalite (`DYNALITE_ENDPOINT`), which keeps connections alive, so that the
/// SDK's pool holds idle connections when the network fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_black_hole_with_idle_connections_in_the_pool_on_dynalite() {
    let endpoint = crate::support::dynalite::endpoint();
    let host_port = endpoint
        .strip_prefix("http://")
        .unwrap_or_else(|| panic!("DYNALITE_ENDPOINT must be an http:// URL, got {endpoint}"))
        .trim_end_matches('/');
    let address = tokio::net::lookup_host(host_port)
        .await
        .ok()
        .and_then(|mut addresses| addresses.next())
        .unwrap_or_else(|| panic!("DYNALITE_ENDPOINT={endpoint} names no address"));
    black_hole_in_front_of("dynalite", address).await;
}

/// Leases survive what checkpoints survive: connections cut under the client and a paused
/// server (every lease call then times out, naming its operation). After each, the lease is
/// still held by the same owner under the same epoch, and renew works. (A restart of the
/// emulator loses every table, leases with checkpoints: see the restart test above.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_survive_cut_connections_and_a_paused_server() {
    use checkpoint_core::LeaseStore;
    const TIMEOUT: Duration = Duration::from_millis(500);
    const LONG: Duration = Duration::from_secs(60);
    let server = OwnMoto::start();
    let proxy = Proxy::start(server.address())
        .await
        .expect("starting the cutting proxy");
    let store = DynamoDbCheckpointStore::new(client_for(&format!("http://{}", proxy.local_addr())))
        .with_table(&fresh_group("table"))
        .expect("a valid table name");
    store.create_table().await.expect("create_table");
    let store = store.with_timeout(TIMEOUT).expect("a valid timeout");
    let group = fresh_group("lease-faults");
    let held = store
        .acquire(&group, "s", "a", &[0, 1], LONG)
        .await
        .expect("acquire")
        .granted;
    let still_held = |when: &'static str| {
        let (store, group, held) = (&store, &group, &held);
        async move {
            let renewed = store.renew(group, "s", "a", LONG).await;
            assert_eq!(
                renewed.as_ref().ok(),
                Some(held),
                "renew {when}: {renewed:?}"
            );
            let table = store.leases(group, "s").await.expect("leases");
            let listed: Vec<(u32, &str, u64)> = table
                .leases
                .iter()
                .map(|lease| (lease.partition, lease.owner.as_str(), lease.epoch))
                .collect();
            let want: Vec<(u32, &str, u64)> = held
                .iter()
                .map(|lease| (lease.partition, "a", lease.epoch))
                .collect();
            assert_eq!(listed, want, "leases {when}");
        }
    };

    proxy.cut_all();
    still_held("after the connections were cut").await;

    server.pause();
    let renewed = store.renew(&group, "s", "a", LONG).await;
    let acquired = store.acquire(&group, "s", "a", &[2], LONG).await;
    let listed = store.leases(&group, "s").await;
    server.resume();
    for (operation, result) in [
        (Operation::Renew, renewed.map(drop)),
        (Operation::Acquire, acquired.map(drop)),
        (Operation::Leases, listed.map(drop)),
    ] {
        match result {
            Err(Error::Timeout {
                operation: timed_out,
                ..
            }) if timed_out == operation => {}
            other => panic!("{operation:?} while paused: expected a timeout, got {other:?}"),
        }
    }
    // The timed-out acquire of 2 may land after the pause (or not): 0 and 1 stay as they were.
    let renewed = store
        .renew(&group, "s", "a", LONG)
        .await
        .expect("renew after the pause");
    let kept: Vec<_> = renewed
        .iter()
        .filter(|lease| lease.partition < 2)
        .cloned()
        .collect();
    assert_eq!(&kept, &held, "renew after the pause");
    store
        .release(&group, "s", "a", &[2])
        .await
        .expect("release");
    still_held("after the pause").await;
}

/// A holder cut off by a black hole stops treating its leases as held before anyone else can
/// hold them: the kit's `lease_faults` driver, the holder through a proxy to a moto of the
/// test's own and the taker direct. On DynamoDB the taker must first watch the holder's
/// heartbeat unchanged for its whole duration, on its own clock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_black_holed_lease_holder_stops_before_its_leases_are_taken() {
    use checkpoint_conformance::harness::lease_faults::black_holed_holder_stops_first;
    const DURATION: Duration = Duration::from_secs(2);
    let server = OwnMoto::start();
    let proxy = Proxy::start(server.address())
        .await
        .expect("starting the proxy");
    let table = fresh_group("table");
    let holder =
        DynamoDbCheckpointStore::new(client_for(&format!("http://{}", proxy.local_addr())))
            .with_table(&table)
            .expect("a valid table name");
    holder.create_table().await.expect("create_table");
    let holder = holder
        .with_timeout(Duration::from_millis(300))
        .expect("a valid timeout");
    let taker = DynamoDbCheckpointStore::new(client_for(&server.endpoint()))
        .with_table(&table)
        .expect("a valid table name");
    let measured = black_holed_holder_stops_first(&holder, &taker, &proxy, DURATION)
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    eprintln!("{measured:?}");
}
