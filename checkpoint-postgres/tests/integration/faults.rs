//! Faults injected while the store works, and how they are reported: server-side connections
//! terminated in the middle of concurrent histories and between calls (on the shared server,
//! only the store's own sessions); on a server of the test's own, clean restarts, crashes and a
//! paused server; a blocked operation that times out, a missing table, a refused connection;
//! and a black hole between the pool and the server (the kit's `BlackHoleProxy`), where every
//! call times out and the store works again soon after the network does.
//!
//! Leases survive the same faults: held by the same owner under the same epoch after lost
//! connections, a clean restart and a crash, and renewed afterwards; a holder behind a black
//! hole stops before another owner is granted its leases.
//!
//! Each test shows that the fault hit (sessions terminated, calls failed, processes
//! restarted), that every failure was a retryable backend error or a timeout (never a panic,
//! never a wrong success), that the history checker finds nothing acknowledged lost and
//! nothing moved back, and that the store works again afterwards. The figures are printed
//! (run with `--nocapture`), not asserted as speeds.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use checkpoint_conformance::harness::{BlackHoleBounds, BlackHoleProxy, black_hole_and_back};
use checkpoint_conformance::history::{HistoryConfig, run_histories_with_faults};
use checkpoint_conformance::recovery::{Recovery, save_until_recovered};
use checkpoint_conformance::sql_family::faults::{self, KilledSessions};
use checkpoint_conformance::{AuditedStore, ErrorTally, audited};
use checkpoint_conformance::{error_chain, fresh_group};
use checkpoint_core::{
    CheckpointStore, Error, ExclusiveCheckpointStore, LeaseStore, LeaseTable, Operation,
};
use checkpoint_postgres::{PostgresCheckpointStore, PostgresEngine};
use sqlx::postgres::PgSslMode;
use sqlx::{Connection, PgConnection};

use crate::support;
use crate::support::own_server::OwnPostgres;

const SECRET: &str = "Distinct-Secret-Pw-8e1f";

/// The pids of the sessions named `name`.
async fn sessions(admin: &mut PgConnection, name: &str) -> BTreeSet<i32> {
    sqlx::query_scalar("SELECT pid FROM pg_stat_activity WHERE application_name = $1")
        .bind(name)
        .fetch_all(admin)
        .await
        .unwrap()
        .into_iter()
        .collect()
}

/// `pg_terminate_backend` on every session named `name`; returns the pids it ended.
async fn terminate(admin: &mut PgConnection, name: &str) -> Vec<i32> {
    // The sessions are chosen first, in a materialized CTE: with the filter and the call in one
    // WHERE, the planner may call pg_terminate_backend on rows before filtering them.
    sqlx::query_scalar(
        "WITH chosen AS MATERIALIZED (SELECT pid FROM pg_stat_activity \
         WHERE application_name = $1 AND pid <> pg_backend_pid()) \
         SELECT pid FROM chosen WHERE pg_terminate_backend(pid)",
    )
    .bind(name)
    .fetch_all(admin)
    .await
    .unwrap()
}

/// On the shared server: in each history, after 0 to 2.1 ms, the server ends every session of
/// the store (and so whatever calls they have in flight).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminated_backends_in_the_middle_of_histories() {
    let name = support::unique_ident("cp_terminate");
    let store = audited(
        PostgresCheckpointStore::connect_with(support::connect_options().application_name(&name))
            .await
            .unwrap(),
    );
    store.inner().migrate().await.unwrap();
    let admin = tokio::sync::Mutex::new(support::admin_connection().await);
    let terminated = Mutex::new(BTreeSet::new());
    let config = HistoryConfig::for_faults(48);
    let started = Instant::now();
    let failed_calls =
        run_histories_with_faults(&store, &config, Duration::from_secs(10), |case| {
            let admin = &admin;
            let terminated = &terminated;
            let name = &name;
            async move {
                tokio::time::sleep(Duration::from_micros(300 * u64::from(case % 8))).await;
                let ended = terminate(&mut *admin.lock().await, name).await;
                terminated.lock().unwrap().extend(ended);
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
    let terminated = std::mem::take(&mut *terminated.lock().unwrap());
    // The pool replaced what was terminated: the store's sessions now are new ones.
    let now = sessions(&mut *admin.lock().await, &name).await;
    eprintln!(
        "pg_terminate_backend in {} histories (seed {}): {} sessions terminated, {failed_calls} \
         calls failed ({errors} errors, e.g. {sample:?}), {} new sessions open, {:?}",
        config.cases,
        config.seed,
        terminated.len(),
        now.len(),
        started.elapsed()
    );
    assert!(
        !terminated.is_empty(),
        "no session of the store was terminated: the fault never hit"
    );
    assert!(
        !now.is_empty() && now.is_disjoint(&terminated),
        "the store's sessions {now:?} should all be new after terminating {terminated:?}"
    );
    // The audit also sees the runner's reads of the final state, so it may count more.
    assert!(
        errors as u64 >= failed_calls,
        "the audit saw {errors} errors, the history runner {failed_calls} failed calls"
    );

    // Recovery after one more termination, with the connections idle in the pool: the next
    // idempotent call succeeds at once (it is retried on a live connection).
    let group = fresh_group("terminate-recovery");
    store.inner().save(&group, "probe", 0, 1).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!terminate(&mut *admin.lock().await, &name).await.is_empty());
    let Recovery { took, failures } =
        save_until_recovered(store.inner(), &group, "probe", 0, 2, Duration::from_secs(5))
            .await
            .unwrap_or_else(|failure| panic!("{failure}"));
    eprintln!("after pg_terminate_backend: saved again after {took:?}, {failures} failed attempts");
    assert_eq!(
        failures, 0,
        "an idempotent call on a cut connection should be retried"
    );
    assert_eq!(
        store.inner().load(&group, "probe", 0).await.unwrap(),
        Some(2)
    );
}

/// On the shared server: one owner advances a checkpoint step by step while its sessions are
/// terminated every 50 ms; after each failed advance the position is where it was or one step
/// on (the kit's SQL family; PostgreSQL reruns a request on a lost connection, so the last
/// load takes one attempt).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn advances_under_terminated_backends() {
    let server = Terminated {
        name: support::unique_ident("cp_terminate_advance"),
    };
    faults::advances_under_killed_sessions(&server, 1).await;
}

/// The store's sessions, named `name`, ended by `pg_terminate_backend`.
struct Terminated {
    name: String,
}

impl KilledSessions<PostgresEngine> for Terminated {
    type Killer = PgConnection;

    async fn store(&self) -> PostgresCheckpointStore {
        let options = support::connect_options().application_name(&self.name);
        let store = PostgresCheckpointStore::connect_with(options)
            .await
            .unwrap();
        store.migrate().await.unwrap();
        store
    }

    async fn killer(&self) -> PgConnection {
        support::admin_connection().await
    }

    async fn kill_sessions(&self, admin: &mut PgConnection) -> usize {
        terminate(admin, &self.name).await.len()
    }
}

/// A server of the test's own, restarted and crashed in the middle of histories, crashed under
/// a stream of saves, then paused; one instance for all of it (`initdb` costs seconds), used
/// in turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarts_crashes_and_pauses_of_a_server_of_our_own() {
    let server = OwnPostgres::start(&[]).await;
    let name = support::unique_ident("cp_own");
    let options = server
        .options()
        .ssl_mode(PgSslMode::Disable)
        .application_name(&name);
    let store = audited(
        PostgresCheckpointStore::connect_with(options.clone())
            .await
            .unwrap(),
    );
    store.inner().migrate().await.unwrap();

    restarts_and_crashes_in_histories(&server, &store).await;
    checkpoint_conformance::sql_family::faults::acknowledged_saves_survive_a_crash(
        &server,
        store.inner(),
        1,
    )
    .await;
    leases_survive_restarts_and_crashes(&server, store.inner()).await;
    a_paused_server_times_out(&server, store.inner(), options).await;
}

/// Leases acquired before a clean restart, then before a crash (`-m immediate`), are held
/// after it by the same owner under the same epochs (an acknowledged acquire is committed);
/// another owner is refused them, and their owner renews them without a new epoch.
async fn leases_survive_restarts_and_crashes(
    server: &OwnPostgres,
    store: &PostgresCheckpointStore,
) {
    let group = fresh_group("lease-restart");
    let duration = Duration::from_secs(60);
    let acquired = store
        .acquire(&group, "s", "worker-a", &[0, 1, 2], duration)
        .await
        .unwrap();
    assert_eq!(acquired.granted.len(), 3);
    for crash in [false, true] {
        if crash {
            server.stop_server("immediate").await;
            server.start_server().await;
        } else {
            server.restart_server().await;
        }
        let table = lease_after_restart(store, &group).await;
        let held: Vec<(u32, &str, u64)> = table
            .leases
            .iter()
            .map(|lease| (lease.partition, lease.owner.as_str(), lease.epoch))
            .collect();
        let expected: Vec<(u32, &str, u64)> = acquired
            .granted
            .iter()
            .map(|lease| (lease.partition, "worker-a", lease.epoch))
            .collect();
        assert_eq!(
            held,
            expected,
            "after the {}",
            if crash { "crash" } else { "restart" }
        );
        let other = store
            .acquire(&group, "s", "worker-b", &[1], duration)
            .await
            .unwrap();
        assert_eq!(other.refused, [1]);
        let renewed = store
            .renew(&group, "s", "worker-a", duration)
            .await
            .unwrap();
        assert_eq!(renewed, acquired.granted);
    }
}

/// The leases of `group` once the server answers again (the first calls after a restart may
/// meet a server still starting).
async fn lease_after_restart(store: &PostgresCheckpointStore, group: &str) -> LeaseTable {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match store.leases(group, "s").await {
            Ok(table) => return table,
            Err(error) if error.is_retryable() && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(error) => panic!("leases after a restart: {}", error_chain(&error)),
        }
    }
}

async fn restarts_and_crashes_in_histories(
    server: &OwnPostgres,
    store: &AuditedStore<PostgresCheckpointStore>,
) {
    let config = HistoryConfig::for_faults(8);
    let postmasters = Mutex::new(BTreeSet::new());
    postmasters.lock().unwrap().insert(server.pids()[0]);
    let started = Instant::now();
    // Each history: after 0 to 2 ms, a clean restart (`-m fast`: sessions ended, a shutdown
    // checkpoint) in even histories, a crash (`-m immediate`, like kill -9) and a start with
    // crash recovery in odd ones.
    let failed_calls = run_histories_with_faults(store, &config, Duration::from_secs(30), |case| {
        let postmasters = &postmasters;
        async move {
            tokio::time::sleep(Duration::from_micros(500 * u64::from(case % 5))).await;
            if case.is_multiple_of(2) {
                server.restart_server().await;
            } else {
                server.stop_server("immediate").await;
                server.start_server().await;
            }
            postmasters.lock().unwrap().insert(server.pids()[0]);
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
    let postmasters = postmasters.lock().unwrap().len();
    eprintln!(
        "restarts and crashes in {} histories (seed {}): {} postmasters, {failed_calls} calls \
         failed ({errors} errors, e.g. {sample:?}), {:?}",
        config.cases,
        config.seed,
        postmasters,
        started.elapsed()
    );
    // Every restart started a new postmaster: the fault hit every history.
    assert_eq!(postmasters, config.cases as usize + 1);

    // The next call after a restart, with every pooled connection dead, succeeds at once.
    let group = fresh_group("restart-recovery");
    store.inner().save(&group, "probe", 0, 1).await.unwrap();
    server.restart_server().await;
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
    eprintln!("after pg_ctl restart: saved again after {took:?}, {failures} failed attempts");
    assert_eq!(
        store.inner().load(&group, "probe", 0).await.unwrap(),
        Some(2)
    );
}

/// Every process of the server stopped with SIGSTOP: calls return `Error::Timeout` in bounded
/// time; after SIGCONT the store works again.
async fn a_paused_server_times_out(
    server: &OwnPostgres,
    store: &PostgresCheckpointStore,
    options: sqlx::postgres::PgConnectOptions,
) {
    const TIMEOUT: Duration = Duration::from_millis(500);
    // A correctness bound, not a speed: the call must come back, on its own.
    const BOUND: Duration = Duration::from_secs(3);
    let group = fresh_group("pause");
    let impatient = store.clone().with_timeout(TIMEOUT).unwrap();
    impatient.save(&group, "s", 0, 1).await.unwrap();
    // A fresh store too, whose first call must open a connection to the paused server.
    let fresh = PostgresCheckpointStore::new(
        sqlx::postgres::PgPoolOptions::new().connect_lazy_with(options),
    )
    .with_timeout(TIMEOUT)
    .unwrap();

    let paused = server.signal_all("STOP");
    assert!(
        paused >= 2,
        "expected the postmaster and its children, paused {paused}"
    );
    let mut latencies = Vec::new();
    for (what, call) in [
        ("save", Operation::Save),
        ("load", Operation::Load),
        ("list", Operation::List),
        ("fresh load", Operation::Load),
    ] {
        let started = Instant::now();
        let result = match what {
            "save" => impatient.save(&group, "s", 0, 2).await.map(|_| ()),
            "load" => impatient.load(&group, "s", 0).await.map(|_| ()),
            "list" => impatient.list(&group).await.map(|_| ()),
            _ => fresh.load(&group, "s", 0).await.map(|_| ()),
        };
        let took = started.elapsed();
        match result {
            Err(
                ref error @ Error::Timeout {
                    operation, after, ..
                },
            ) => {
                assert_eq!((operation, after), (call, TIMEOUT), "{what}");
                assert!(error.is_retryable());
            }
            other => {
                server.signal_all("CONT");
                panic!("{what} on a paused server: expected a timeout, got {other:?}")
            }
        }
        assert!(took < TIMEOUT + BOUND, "{what} took {took:?} to time out");
        latencies.push((what, took));
    }
    server.signal_all("CONT");
    let resumed = Instant::now();
    // The store works again: the save that timed out may have completed once resumed (the
    // statement had been sent); a new one is acknowledged and read back.
    let Recovery { took, failures } =
        save_until_recovered(&impatient, &group, "probe", 0, 3, Duration::from_secs(10))
            .await
            .unwrap_or_else(|failure| panic!("{failure}"));
    impatient.save(&group, "s", 0, 3).await.unwrap();
    assert_eq!(impatient.load(&group, "s", 0).await.unwrap(), Some(3));
    assert_eq!(fresh.load(&group, "s", 0).await.unwrap(), Some(3));
    eprintln!(
        "SIGSTOP on {paused} server processes, timeout {TIMEOUT:?}: returned after \
         {latencies:?}; after SIGCONT a save succeeded after {took:?} ({failures} failed), \
         {:?} in all",
        resumed.elapsed()
    );
    // The admin view agrees.
    let mut admin = PgConnection::connect_with(&server.options().ssl_mode(PgSslMode::Disable))
        .await
        .unwrap();
    let stored: i64 = sqlx::query_scalar(
        "SELECT position FROM checkpoints WHERE group_name = $1 AND subscription = 's'",
    )
    .bind(&group)
    .fetch_one(&mut admin)
    .await
    .unwrap();
    assert_eq!(stored, 3);
}

/// A save that waits on a row another transaction holds ends in `Error::Timeout`, and once
/// the lock is gone the same save succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_operation_times_out() {
    let store = support::store().await;
    let group = fresh_group("timeout");
    store.save(&group, "s", 0, 1).await.unwrap();

    let mut holder = store.pool().begin().await.unwrap();
    sqlx::query(
        "SELECT position FROM checkpoints WHERE group_name = $1 AND subscription = 's' \
         AND partition_id = 0 FOR UPDATE",
    )
    .bind(&group)
    .fetch_one(&mut *holder)
    .await
    .unwrap();

    let impatient = store
        .clone()
        .with_timeout(Duration::from_millis(300))
        .unwrap();
    let result = impatient.save(&group, "s", 0, 2).await;
    match result {
        Err(
            ref error @ Error::Timeout {
                operation: Operation::Save,
                after,
                ..
            },
        ) => {
            assert_eq!(after, Duration::from_millis(300));
            assert!(error.is_retryable());
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    holder.rollback().await.unwrap();

    impatient.save(&group, "s", 0, 2).await.unwrap();
    assert_eq!(store.load(&group, "s", 0).await.unwrap(), Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_table_is_a_backend_error_not_worth_retrying() {
    let store = support::store()
        .await
        .with_table(&support::unique_ident("missing"))
        .unwrap();
    let error = store.load("g", "s", 0).await.unwrap_err();
    assert!(
        matches!(
            error,
            Error::Backend {
                operation: Operation::Load,
                retryable: false,
                ..
            }
        ),
        "{error:?}"
    );
    let chain = error_chain(&error);
    assert!(chain.contains("does not exist"), "{chain}");
}

/// No server needed: a refused connection is a retryable connect error, and neither the
/// error nor its sources show the password of the URL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_connection_is_retryable_and_hides_the_password() {
    let url = format!("postgres://app:{SECRET}@127.0.0.1:1/app");
    let error = PostgresCheckpointStore::connect(&url).await.unwrap_err();
    assert!(
        matches!(
            error,
            Error::Backend {
                operation: Operation::Connect,
                retryable: true,
                ..
            }
        ),
        "{error:?}"
    );
    let shown = format!("{} / {} / {error:?}", error, error_chain(&error));
    assert!(!shown.contains(SECRET), "{shown}");
}

/// Ends the server sessions of every connection whose `application_name` is `name`, as a
/// server restart or a proxy cutting idle connections would, and waits until they are gone.
async fn terminate_sessions(name: &str) -> i64 {
    let mut admin = support::admin_connection().await;
    let terminated: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE application_name = $1) AS t",
    )
    .bind(name)
    .fetch_one(&mut admin)
    .await
    .unwrap();
    for _ in 0..100 {
        let left: i64 =
            sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1")
                .bind(name)
                .fetch_one(&mut admin)
                .await
                .unwrap();
        if left == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    terminated
}

/// After the server has cut the pool's idle connections, the next idempotent call works (it
/// is tried once more on a fresh connection); `advance` is not retried, fails with a
/// retryable error for each dead connection left in the pool, and then works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_call_after_lost_connections_works() {
    let name = support::unique_ident("cp_cut");
    let store =
        PostgresCheckpointStore::connect_with(support::connect_options().application_name(&name))
            .await
            .unwrap();
    let group = fresh_group("cut");
    store.save(&group, "s", 0, 1).await.unwrap();
    store
        .claim(
            &group,
            "x",
            0,
            checkpoint_core::Fingerprint::from_bytes([3; 32]),
            0,
        )
        .await
        .unwrap();

    tokio::time::sleep(Duration::from_millis(100)).await; // connection back in the pool
    assert!(terminate_sessions(&name).await >= 1);
    store.save(&group, "s", 0, 2).await.unwrap();

    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(terminate_sessions(&name).await >= 1);
    assert_eq!(store.load(&group, "s", 0).await.unwrap(), Some(2));

    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(terminate_sessions(&name).await >= 1);
    assert_eq!(store.list(&group).await.unwrap().len(), 2);

    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(terminate_sessions(&name).await >= 1);
    let result = store.advance(&group, "x", 0, 0, 5).await;
    match result {
        Err(
            ref error @ Error::Backend {
                operation: Operation::Advance,
                ..
            },
        ) => {
            assert!(error.is_retryable(), "{error:?}");
        }
        other => panic!("expected the advance on a cut connection to fail, got {other:?}"),
    }
    // Each dead connection still in the pool costs one failed advance, then it works.
    let attempts = store.pool().size() + 1;
    let mut advanced = false;
    for _ in 0..attempts {
        match store.advance(&group, "x", 0, 0, 5).await {
            Ok(()) => {
                advanced = true;
                break;
            }
            Err(error) => assert!(error.is_retryable(), "{error:?}"),
        }
    }
    assert!(advanced, "advance still failing after {attempts} attempts");
    assert_eq!(store.load(&group, "x", 0).await.unwrap(), Some(5));
}

/// After the server has cut the pool's idle connections, a lease acquired before is held by
/// the same owner under the same epoch: `leases`, `renew`, `acquire` and `request_handover`
/// (idempotent) work at once, tried once more on a fresh connection; `release` is not retried
/// (a second attempt would report the partition as not held), fails with a retryable error for
/// each dead connection left in the pool, and then works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_survive_lost_connections() {
    let name = support::unique_ident("cp_lease_cut");
    let store =
        PostgresCheckpointStore::connect_with(support::connect_options().application_name(&name))
            .await
            .unwrap();
    let group = fresh_group("lease-cut");
    let duration = Duration::from_secs(60);
    let acquired = store
        .acquire(&group, "s", "a", &[0, 1], duration)
        .await
        .unwrap();
    let cut = || async {
        tokio::time::sleep(Duration::from_millis(100)).await; // back in the pool
        assert!(terminate_sessions(&name).await >= 1);
    };

    cut().await;
    let table = store.leases(&group, "s").await.unwrap();
    let held: Vec<(u32, String, u64)> = table
        .leases
        .into_iter()
        .map(|lease| (lease.partition, lease.owner, lease.epoch))
        .collect();
    let expected: Vec<(u32, String, u64)> = acquired
        .granted
        .iter()
        .map(|lease| (lease.partition, "a".to_owned(), lease.epoch))
        .collect();
    assert_eq!(held, expected);
    cut().await;
    assert_eq!(
        store.renew(&group, "s", "a", duration).await.unwrap(),
        acquired.granted
    );
    cut().await;
    let again = store
        .acquire(&group, "s", "a", &[0], duration)
        .await
        .unwrap();
    assert_eq!(again.granted, acquired.granted);
    cut().await;
    store
        .request_handover(&group, "s", "b", &[1])
        .await
        .unwrap();

    cut().await;
    let mut released = None;
    for _ in 0..=store.pool().size() + 1 {
        match store.release(&group, "s", "a", &[0]).await {
            Ok(reply) => {
                released = Some(reply);
                break;
            }
            Err(error) => assert!(error.is_retryable(), "{error:?}"),
        }
    }
    let released = released.expect("release still failing after a fresh connection");
    assert_eq!(released.released, [0]);
    let renewed = store.renew(&group, "s", "a", duration).await.unwrap();
    assert_eq!(renewed.len(), 1);
    assert_eq!(renewed[0].epoch, acquired.granted[1].epoch);
    assert_eq!(renewed[0].handover_requested_by.as_deref(), Some("b"));
}

/// A lease holder cut off from the server by a black hole (the kit's `lease_faults`): its
/// renews fail within its timeout, and another owner is granted its leases only after the
/// holder's local deadline, so the two never both treat a lease as held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_black_holed_lease_holder_stops_before_its_leases_are_taken() {
    use checkpoint_conformance::harness::lease_faults::black_holed_holder_stops_first;

    let options = support::connect_options();
    let proxy = BlackHoleProxy::start((options.get_host().to_owned(), options.get_port()))
        .await
        .expect("starting a proxy");
    let through_proxy = options
        .host(&proxy.local_addr().ip().to_string())
        .port(proxy.local_addr().port());
    let holder = PostgresCheckpointStore::connect_with(through_proxy)
        .await
        .unwrap_or_else(|error| panic!("connecting through the proxy: {}", error_chain(&error)))
        .with_timeout(Duration::from_millis(500))
        .unwrap();
    let taker = support::store().await;
    let measured = black_holed_holder_stops_first(&holder, &taker, &proxy, Duration::from_secs(2))
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    eprintln!("a black-holed lease holder: {measured:?}");
}

/// The bounds of the black-hole test (the same for every backend): a 1 s timeout; each call in
/// the black hole ends within 0.5 s of it; once the network is back, a save retried every
/// 10 ms succeeds within the timeout and 2 s more.
const BLACK_HOLE: BlackHoleBounds = BlackHoleBounds {
    timeout: Duration::from_secs(1),
    margin: Duration::from_millis(500),
    recovery: Duration::from_secs(3),
};

/// How many connections the pool holds, idle, when the network fails.
const IDLE_AT_THE_BLACK_HOLE: usize = 3;

/// The server vanishes without closing the pool's connections: every call times out, and once
/// the network is back the store works on new connections. A connection a call timed out on is
/// closed, not returned to the pool (where sqlx's ping on its return would wait for ever and
/// hold its place in the pool); each of the others is given up by the call that meets it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_black_hole_times_out_every_call_and_the_store_reconnects_after_it() {
    let options = support::connect_options();
    let proxy = BlackHoleProxy::start((options.get_host().to_owned(), options.get_port()))
        .await
        .expect("starting a proxy");
    let through_proxy = options
        .host(&proxy.local_addr().ip().to_string())
        .port(proxy.local_addr().port());
    let store = PostgresCheckpointStore::connect_with(through_proxy)
        .await
        .unwrap_or_else(|error| panic!("connecting through the proxy: {}", error_chain(&error)))
        .with_timeout(BLACK_HOLE.timeout)
        .unwrap();
    store.migrate().await.unwrap();
    // Several connections open when the network fails, all idle in the pool.
    let mut held = Vec::new();
    for _ in 0..IDLE_AT_THE_BLACK_HOLE {
        held.push(store.pool().acquire().await.unwrap());
    }
    drop(held);
    let report = black_hole_and_back(&store, &[&proxy], BLACK_HOLE)
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    // No connection is stuck on its way back to the pool (checked out by no call, idle in no
    // queue): every place in the pool is usable again.
    let deadline = Instant::now() + Duration::from_secs(2);
    while store.pool().size() > store.pool().num_idle() as u32 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        store.pool().size(),
        store.pool().num_idle() as u32,
        "connections of the pool neither in use nor idle after the black hole"
    );
    eprintln!(
        "black hole with {IDLE_AT_THE_BLACK_HOLE} idle connections: {report:?}; {} connections, \
         {} held by the black hole; pool size {} ({} idle)",
        proxy.connections(),
        proxy.held(),
        store.pool().size(),
        store.pool().num_idle()
    );
}
