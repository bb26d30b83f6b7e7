//! Faults injected while the store works, and how they are reported: server-side connections
//! killed (`KILL CONNECTION`) between calls and in the middle of concurrent histories and
//! advances; a row lock held by another transaction, met by the store's timeout and by the
//! server's own `innodb_lock_wait_timeout` (on the shared server); and a clean stop and a crash
//! with the store's pool made before them.
//!
//! The kills, stops and crashes happen on MariaDB servers of the tests' own
//! (`support::own_server`), never on the shared server, which every other test uses (and which
//! once crashed, SIGSEGV in a killed `advance`'s temporary table, while these tests ran). The
//! store's sessions are the processlist's rows in the database `test`; the admin's connection
//! is in `mysql`.
//!
//! Each test shows that the fault hit (sessions killed, calls failed, server stopped), that
//! every failure was retryable (a retryable backend error or a timeout: never a panic, never a
//! wrong success), that nothing acknowledged is lost and nothing moves back, and that the store
//! works again afterwards. The store does not run a call again on a lost connection (only a
//! deadlock's victim), and its pool pings a connection only after 5 s idle: so each killed
//! connection still in the pool costs one call a retryable failure, after which sqlx's ping on
//! its return closes it. The figures are printed (run with `--nocapture`), not asserted as
//! speeds.

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use checkpoint_conformance::history::{HistoryConfig, run_histories_with_faults};
use checkpoint_conformance::recovery::{Recovery, save_until_recovered};
use checkpoint_conformance::sql_family::faults::{self, KilledSessions};
use checkpoint_conformance::{ErrorTally, audited, error_chain, fresh_group};
use checkpoint_core::{
    Acquired, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint, LeaseStore, Operation,
};
use checkpoint_mysql::{MysqlCheckpointStore, MysqlEngine};
use sqlx::mysql::MySqlPoolOptions;
use sqlx::{Executor, MySqlConnection};

use crate::support;
use crate::support::own_server::OwnMariadb;

/// The ids of the sessions in `database`, the admin's own left out.
async fn sessions(admin: &mut MySqlConnection, database: &str) -> BTreeSet<i64> {
    sqlx::query_scalar(
        "SELECT ID FROM information_schema.PROCESSLIST WHERE DB = ? AND ID <> CONNECTION_ID()",
    )
    .bind(database)
    .fetch_all(admin)
    .await
    .unwrap()
    .into_iter()
    .collect()
}

/// `KILL CONNECTION` of every session in `database`; returns the ids it killed (a session may
/// end between the listing and its kill: MariaDB's 1094, unknown thread, is skipped).
async fn kill(admin: &mut MySqlConnection, database: &str) -> Vec<i64> {
    let mut killed = Vec::new();
    for id in sessions(admin, database).await {
        let statement = format!("KILL CONNECTION {id}");
        match sqlx::raw_sql(sqlx::AssertSqlSafe(statement))
            .execute(&mut *admin)
            .await
        {
            Ok(_) => killed.push(id),
            Err(sqlx::Error::Database(error)) if error.code().as_deref() == Some("HY000") => {
                assert!(
                    error.message().contains("Unknown thread"),
                    "KILL {id}: {error}"
                );
            }
            Err(error) => panic!("KILL {id}: {error}"),
        }
    }
    killed
}

/// Kills every session in `database` and waits until the server has ended them.
async fn kill_and_wait(admin: &mut MySqlConnection, database: &str) -> Vec<i64> {
    let killed = kill(admin, database).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while !sessions(admin, database)
        .await
        .is_disjoint(&killed.iter().copied().collect())
    {
        assert!(Instant::now() < deadline, "killed sessions still listed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    killed
}

/// Makes the pool hold `count` open connections, all idle.
async fn fill_pool(store: &MysqlCheckpointStore, count: usize) {
    let mut held = Vec::new();
    for _ in 0..count {
        held.push(store.pool().acquire().await.unwrap());
    }
    drop(held);
    // Back in the pool (sqlx pings each on its way back).
    let deadline = Instant::now() + Duration::from_secs(5);
    while store.pool().num_idle() < count {
        assert!(
            Instant::now() < deadline,
            "connections not back in the pool"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Calls `call` until it succeeds, at most `attempts` times; every failure must be retryable.
/// The value, and the failures' texts.
async fn until_ok<T, F, Fut>(what: &str, attempts: usize, mut call: F) -> (T, Vec<String>)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    let mut failures = Vec::new();
    for _ in 0..attempts {
        match call().await {
            Ok(value) => return (value, failures),
            Err(error) => {
                assert!(
                    error.is_retryable(),
                    "{what} failed with an error that is not retryable: {}",
                    error_chain(&error)
                );
                failures.push(error_chain(&error));
            }
        }
    }
    panic!("{what} still failing after {attempts} attempts: {failures:#?}");
}

/// Idle connections killed: each call meets one dead connection (sqlx's ping on its return
/// closes it) and fails with a retryable error, so exactly as many calls fail as connections
/// were killed, and the next one succeeds; every kind of call (save, load, list,
/// claim, advance, acquire, renew, leases, release) works after it, and no checkpoint moves
/// back. After 5 s idle the pool pings first, so a kill then costs no call at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_idle_connections_cost_one_retryable_failure_each() {
    let server = OwnMariadb::start().await;
    let (database, options) = ("test".to_owned(), server.options());
    let store = MysqlCheckpointStore::connect_with(options).await.unwrap();
    store.migrate().await.unwrap();
    let mut admin = server.admin().await;
    let mut rounds = IdleRounds::set_up(&store).await;

    let mut report = Vec::new();
    // Each round: the pool holds IDLE idle connections, all killed; then one kind of call
    // until it succeeds.
    for round in [
        "save", "load", "list", "claim", "advance", "acquire", "renew", "leases", "release",
    ] {
        fill_pool(&store, IDLE).await;
        let killed = kill_and_wait(&mut admin, &database).await;
        assert!(killed.len() >= IDLE, "{round}: killed only {killed:?}");
        let attempts = killed.len() + 1;
        let failures = rounds.call_until_ok(&store, round, attempts).await;
        assert_one_retryable_failure_per_kill(round, &killed, &failures);
        report.push((round, killed.len(), failures.len()));
        if round == "save" {
            eprintln!(
                "a call on a killed connection fails with: {:?}",
                failures.first()
            );
        }
    }
    let failed: usize = report.iter().map(|(_, _, failures)| failures).sum();
    eprintln!(
        "KILL of idle pooled connections, per round (call, killed, failed calls): {report:?}"
    );
    assert!(
        failed > 0,
        "no call met a killed connection: the fault never hit"
    );
    let (group, position) = (&rounds.group, rounds.position);
    assert_eq!(store.load(group, "s", 0).await.unwrap(), Some(position));
    assert_eq!(
        store.load(group, "x", 0).await.unwrap(),
        Some(rounds.exclusive)
    );

    assert_a_kill_after_5_s_idle_costs_no_call(&store, &mut admin, &database, group, position)
        .await;
    assert_eq!(server.crashes(), Vec::<String>::new(), "the server crashed");
}

/// The idle connections the pool holds before each round of
/// `killed_idle_connections_cost_one_retryable_failure_each`, all killed.
const IDLE: usize = 3;

/// The state the rounds of `killed_idle_connections_cost_one_retryable_failure_each` work on
/// and expect: a checkpoint `s`/0, an exclusive one `x`/0, and `a`'s leases on `s`.
struct IdleRounds {
    group: String,
    fingerprint: Fingerprint,
    lease: Duration,
    acquired: Acquired,
    /// The position of `s`/0.
    position: u64,
    /// The position of the exclusive `x`/0.
    exclusive: u64,
}

impl IdleRounds {
    /// Saves `s`/0 at 1, claims `x`/0 from 0, and acquires partitions 0 and 1 of `s` for `a`.
    async fn set_up(store: &MysqlCheckpointStore) -> Self {
        let group = fresh_group("kill-idle");
        let fingerprint = Fingerprint::from_bytes([4; 32]);
        store.save(&group, "s", 0, 1).await.unwrap();
        assert_eq!(
            store.claim(&group, "x", 0, fingerprint, 0).await.unwrap(),
            0
        );
        let lease = Duration::from_secs(60);
        let acquired = store
            .acquire(&group, "s", "a", &[0, 1], lease)
            .await
            .unwrap();
        assert_eq!(acquired.granted.len(), 2);
        Self {
            group,
            fingerprint,
            lease,
            acquired,
            position: 1,
            exclusive: 0,
        }
    }

    /// The `round`'s kind of call until it succeeds, at most `attempts` times, and the checks
    /// of what it answered; the failures' texts.
    async fn call_until_ok(
        &mut self,
        store: &MysqlCheckpointStore,
        round: &str,
        attempts: usize,
    ) -> Vec<String> {
        match round {
            "save" | "load" | "list" | "claim" | "advance" => {
                self.checkpoint_call_until_ok(store, round, attempts).await
            }
            _ => self.lease_call_until_ok(store, round, attempts).await,
        }
    }

    /// `call_until_ok` for save, load, list, claim and advance.
    async fn checkpoint_call_until_ok(
        &mut self,
        store: &MysqlCheckpointStore,
        round: &str,
        attempts: usize,
    ) -> Vec<String> {
        let (group, fingerprint) = (&self.group, self.fingerprint);
        match round {
            "save" => {
                self.position += 1;
                let position = self.position;
                until_ok(round, attempts, || store.save(group, "s", 0, position))
                    .await
                    .1
            }
            "load" => {
                let (loaded, failures) =
                    until_ok(round, attempts, || store.load(group, "s", 0)).await;
                assert_eq!(loaded, Some(self.position));
                failures
            }
            "list" => {
                let (listed, failures) = until_ok(round, attempts, || store.list(group)).await;
                assert_eq!(listed.len(), 2);
                failures
            }
            "claim" => {
                let (from, failures) = until_ok(round, attempts, || {
                    store.claim(group, "x", 0, fingerprint, 0)
                })
                .await;
                assert_eq!(from, self.exclusive);
                failures
            }
            _ => {
                // A failed advance never reached a live session: it changed nothing, and the
                // same step is taken again.
                let exclusive = self.exclusive;
                let failures = until_ok(round, attempts, || {
                    store.advance(group, "x", 0, exclusive, exclusive + 5)
                })
                .await
                .1;
                self.exclusive += 5;
                failures
            }
        }
    }

    /// `call_until_ok` for acquire, renew, leases and release.
    async fn lease_call_until_ok(
        &self,
        store: &MysqlCheckpointStore,
        round: &str,
        attempts: usize,
    ) -> Vec<String> {
        let (group, lease, acquired) = (&self.group, self.lease, &self.acquired);
        match round {
            "acquire" => {
                let (again, failures) = until_ok(round, attempts, || {
                    store.acquire(group, "s", "a", &[0], lease)
                })
                .await;
                assert_eq!(again.granted, acquired.granted, "same leases, same epochs");
                failures
            }
            "renew" => {
                let (renewed, failures) =
                    until_ok(round, attempts, || store.renew(group, "s", "a", lease)).await;
                assert_eq!(renewed, acquired.granted);
                failures
            }
            "leases" => {
                let (table, failures) =
                    until_ok(round, attempts, || store.leases(group, "s")).await;
                let held: Vec<(u32, &str, u64)> = table
                    .leases
                    .iter()
                    .map(|l| (l.partition, l.owner.as_str(), l.epoch))
                    .collect();
                let expected: Vec<(u32, &str, u64)> = acquired
                    .granted
                    .iter()
                    .map(|l| (l.partition, "a", l.epoch))
                    .collect();
                assert_eq!(held, expected);
                failures
            }
            _ => {
                let (released, failures) =
                    until_ok(round, attempts, || store.release(group, "s", "a", &[0])).await;
                // The failed attempts never ran: the one that succeeded released it.
                assert_eq!(released.released, [0]);
                failures
            }
        }
    }
}

/// The failures of one round of `killed_idle_connections_cost_one_retryable_failure_each`:
/// one per connection killed, each a backend error, not a timeout.
fn assert_one_retryable_failure_per_kill(round: &str, killed: &[i64], failures: &[String]) {
    // Each killed connection was handed to one call, which failed; sqlx's ping on its
    // return closed it; the next call opened a new one.
    assert_eq!(failures.len(), killed.len(), "{round}: {failures:#?}");
    for failure in failures {
        assert!(
            failure.contains("mysql") && !failure.contains("timed out"),
            "{round}: {failure}"
        );
    }
}

/// Kills the pool's idle connections after they sat idle for 5.3 s: the next save, at
/// `position + 1`, succeeds at once.
async fn assert_a_kill_after_5_s_idle_costs_no_call(
    store: &MysqlCheckpointStore,
    admin: &mut MySqlConnection,
    database: &str,
    group: &str,
    position: u64,
) {
    // Idle for longer than 5 s: the pool pings before handing a connection out, finds it dead
    // and opens another; the call does not fail.
    fill_pool(store, IDLE).await;
    let killed = kill_and_wait(admin, database).await;
    tokio::time::sleep(Duration::from_millis(5_300)).await;
    let started = Instant::now();
    store.save(group, "s", 0, position + 1).await.unwrap();
    eprintln!(
        "KILL of {} connections idle for 5.3 s: the next save succeeded at once, in {:?}",
        killed.len(),
        started.elapsed()
    );
    assert_eq!(store.load(group, "s", 0).await.unwrap(), Some(position + 1));
}

/// In each history, after 0 to 2.1 ms, every session of the store is killed (whatever calls
/// they have in flight). The kit's checker finds nothing acknowledged lost and nothing moved
/// back; every error is retryable; the store's sessions afterwards are new ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_connections_in_the_middle_of_histories() {
    let server = OwnMariadb::start().await;
    let (database, options) = ("test".to_owned(), server.options());
    let store = audited(MysqlCheckpointStore::connect_with(options).await.unwrap());
    store.inner().migrate().await.unwrap();
    let admin = tokio::sync::Mutex::new(server.admin().await);
    let killed = Mutex::new(BTreeSet::new());
    let config = HistoryConfig::for_faults(32);
    let started = Instant::now();
    let failed_calls =
        run_histories_with_faults(&store, &config, Duration::from_secs(10), |case| {
            let (admin, killed, database) = (&admin, &killed, &database);
            async move {
                tokio::time::sleep(Duration::from_micros(300 * u64::from(case % 8))).await;
                let ended = kill(&mut *admin.lock().await, database).await;
                killed.lock().unwrap().extend(ended);
            }
        })
        .await
        .unwrap_or_else(|failure| panic!("{failure}\nserver crashes: {:?}", server.crashes()));
    let ErrorTally {
        count: errors,
        first: sample,
    } = store
        .around()
        .take_errors()
        .unwrap_or_else(|failure| panic!("{failure}"));
    let killed = std::mem::take(&mut *killed.lock().unwrap());
    let now = sessions(&mut *admin.lock().await, &database).await;
    eprintln!(
        "KILL in {} histories (seed {}): {} sessions killed, {failed_calls} calls failed \
         ({errors} errors, e.g. {sample:?}), {} sessions open now, {:?}",
        config.cases,
        config.seed,
        killed.len(),
        now.len(),
        started.elapsed()
    );
    assert!(
        !killed.is_empty(),
        "no session was killed: the fault never hit"
    );
    assert!(
        failed_calls > 0,
        "no call failed: the fault never hit a call"
    );
    assert!(
        now.is_disjoint(&killed),
        "the store's sessions {now:?} should all be new after killing {killed:?}"
    );
    // The audit also sees the runner's reads of the final state, so it may count more.
    assert!(
        errors as u64 >= failed_calls,
        "the audit saw {errors} errors, the history runner {failed_calls} failed calls"
    );

    // Once more with the connections idle: a save works again within one failure per killed
    // connection.
    let group = fresh_group("kill-recovery");
    store.inner().save(&group, "probe", 0, 1).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let ended = kill_and_wait(&mut *admin.lock().await, &database).await;
    assert!(!ended.is_empty());
    let Recovery { took, failures } =
        save_until_recovered(store.inner(), &group, "probe", 0, 2, Duration::from_secs(5))
            .await
            .unwrap_or_else(|failure| panic!("{failure}"));
    eprintln!(
        "after KILL of {} idle sessions: saved again after {took:?}, {failures} failed attempts",
        ended.len()
    );
    assert!(failures as usize <= ended.len(), "{failures} failures");
    assert_eq!(
        store.inner().load(&group, "probe", 0).await.unwrap(),
        Some(2)
    );
    assert_eq!(server.crashes(), Vec::<String>::new(), "the server crashed");
}

/// On a server of the test's own: one owner advances a checkpoint step by step while the
/// store's sessions are killed every 50 ms; after each failed advance the position is where it
/// was or one step on, and the server never crashes (the kit's SQL family; a session the
/// killer's last round ended may still sit idle in the pool, so the last load takes up to 20
/// attempts: MySQL's requests are not run again on a lost connection).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn advances_under_killed_connections() {
    let server = Killed {
        server: OwnMariadb::start().await,
        database: "test",
    };
    faults::advances_under_killed_sessions(&server, 20).await;
}

/// The store's sessions on a server of the test's own, ended by `KILL CONNECTION`.
struct Killed {
    server: OwnMariadb,
    database: &'static str,
}

impl KilledSessions<MysqlEngine> for Killed {
    type Killer = MySqlConnection;

    async fn store(&self) -> MysqlCheckpointStore {
        let store = MysqlCheckpointStore::connect_with(self.server.options())
            .await
            .unwrap();
        store.migrate().await.unwrap();
        store
    }

    async fn killer(&self) -> MySqlConnection {
        self.server.admin().await
    }

    async fn kill_sessions(&self, admin: &mut MySqlConnection) -> usize {
        kill(admin, self.database).await.len()
    }

    fn crashes(&self) -> Vec<String> {
        self.server.crashes()
    }
}

/// Takes row locks on `(group, subscription, 0)` of every subscription in `subscriptions` of
/// the shared server's `checkpoints`, in a transaction left open on `holder`.
async fn lock_rows(holder: &mut MySqlConnection, group: &str, subscriptions: &[&str]) {
    sqlx::raw_sql("BEGIN").execute(&mut *holder).await.unwrap();
    for subscription in subscriptions {
        let position: i64 = sqlx::query_scalar(
            "SELECT position FROM checkpoints WHERE group_name = ? AND subscription = ? \
             AND partition_id = 0 FOR UPDATE",
        )
        .bind(group)
        .bind(subscription)
        .fetch_one(&mut *holder)
        .await
        .unwrap();
        assert!(position >= 0);
    }
}

/// A save and an advance that wait on rows another transaction holds (`SELECT .. FOR UPDATE`)
/// end in `Error::Timeout` (retryable) after about the store's timeout; once the lock is gone
/// they work. The statement the timeout gave up on is not interrupted on the server: it runs
/// when the lock goes, which the test shows rather than hides.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_lock_times_out_save_and_advance_then_they_work() {
    const TIMEOUT: Duration = Duration::from_millis(300);
    // A correctness bound, not a speed: the call must come back on its own.
    const BOUND: Duration = Duration::from_secs(2);
    let store = support::store().await;
    let group = fresh_group("row-lock");
    store.save(&group, "s", 0, 1).await.unwrap();
    let fingerprint = Fingerprint::from_bytes([6; 32]);
    store.claim(&group, "x", 0, fingerprint, 10).await.unwrap();

    let mut holder = support::admin_connection().await;
    lock_rows(&mut holder, &group, &["s", "x"]).await;
    let impatient = store.clone().with_timeout(TIMEOUT).unwrap();
    let mut took = Vec::new();
    for call in [Operation::Save, Operation::Advance] {
        let started = Instant::now();
        let result = if call == Operation::Save {
            impatient.save(&group, "s", 0, 2).await
        } else {
            impatient.advance(&group, "x", 0, 10, 11).await
        };
        let elapsed = started.elapsed();
        match result {
            Err(
                ref error @ Error::Timeout {
                    operation, after, ..
                },
            ) => {
                assert_eq!((operation, after), (call, TIMEOUT));
                assert!(error.is_retryable());
            }
            other => panic!("{call:?} on a locked row: expected a timeout, got {other:?}"),
        }
        assert!(
            elapsed >= TIMEOUT && elapsed < TIMEOUT + BOUND,
            "{call:?} took {elapsed:?} to time out"
        );
        took.push((call, elapsed));
    }
    // Still locked: nothing has changed yet.
    let mut reader = support::admin_connection().await;
    let read = |subscription: &'static str| {
        sqlx::query_scalar::<_, i64>(
            "SELECT position FROM checkpoints WHERE group_name = ? AND subscription = ? \
             AND partition_id = 0",
        )
        .bind(group.clone())
        .bind(subscription)
    };
    assert_eq!(read("s").fetch_one(&mut reader).await.unwrap(), 1);
    assert_eq!(read("x").fetch_one(&mut reader).await.unwrap(), 10);

    sqlx::raw_sql("ROLLBACK")
        .execute(&mut holder)
        .await
        .unwrap();
    let released = Instant::now();
    impatient.save(&group, "s", 0, 3).await.unwrap();
    assert_eq!(store.load(&group, "s", 0).await.unwrap(), Some(3));
    // The advance the timeout gave up on ran once the lock was gone (its statement had been
    // sent) or not at all: the checkpoint is at 10 or 11, and the owner goes on from there.
    let (at, _) = until_ok("load", 5, || store.load(&group, "x", 0)).await;
    let at = at.unwrap();
    assert!(at == 10 || at == 11, "the exclusive checkpoint is at {at}");
    impatient.advance(&group, "x", 0, at, 12).await.unwrap();
    assert_eq!(store.load(&group, "x", 0).await.unwrap(), Some(12));
    eprintln!(
        "row lock with a {TIMEOUT:?} timeout: timed out after {took:?}; after the rollback the \
         abandoned advance had {} and the next save and advance worked within {:?}",
        if at == 11 { "run" } else { "not run" },
        released.elapsed()
    );
}

/// The server's own lock wait timeout: a pool whose sessions set `innodb_lock_wait_timeout`
/// to 1 s, under a store timeout of 10 s. A save and an advance on a locked row fail after
/// about 1 s with MariaDB's error 1205, mapped to a retryable backend error (not run again:
/// only deadlocks are); after the lock goes they work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_lock_wait_timeout_is_a_retryable_error() {
    let store = support::store().await;
    let group = fresh_group("lock-wait");
    store.save(&group, "s", 0, 1).await.unwrap();
    let fingerprint = Fingerprint::from_bytes([7; 32]);
    store.claim(&group, "x", 0, fingerprint, 10).await.unwrap();
    let pool = MySqlPoolOptions::new()
        .max_connections(2)
        .after_connect(|connection, _| {
            Box::pin(async move {
                connection
                    .execute("SET SESSION innodb_lock_wait_timeout = 1")
                    .await?;
                connection
                    .execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                    .await
                    .map(drop)
            })
        })
        .connect_with(support::connect_options().found_rows(true))
        .await
        .unwrap();
    let waiting = MysqlCheckpointStore::new(pool)
        .with_timeout(Duration::from_secs(10))
        .unwrap();

    let mut holder = support::admin_connection().await;
    lock_rows(&mut holder, &group, &["s", "x"]).await;
    let mut took = Vec::new();
    for call in [Operation::Save, Operation::Advance] {
        let started = Instant::now();
        let result = if call == Operation::Save {
            waiting.save(&group, "s", 0, 2).await
        } else {
            waiting.advance(&group, "x", 0, 10, 11).await
        };
        let elapsed = started.elapsed();
        let error = result.expect_err("a save on a locked row must fail");
        assert!(
            matches!(
                error,
                Error::Backend {
                    operation,
                    retryable: true,
                    ..
                } if operation == call
            ),
            "{call:?}: {error:?}"
        );
        let chain = error_chain(&error);
        assert!(
            chain.contains("1205") || chain.contains("Lock wait timeout"),
            "{chain}"
        );
        assert!(
            elapsed >= Duration::from_millis(900) && elapsed < Duration::from_secs(8),
            "{call:?} took {elapsed:?}"
        );
        took.push((call, elapsed));
        if call == Operation::Save {
            eprintln!("innodb_lock_wait_timeout = 1: {chain}");
        }
    }
    sqlx::raw_sql("ROLLBACK")
        .execute(&mut holder)
        .await
        .unwrap();
    // The server rolled the statements back: nothing changed, and the same calls now work.
    assert_eq!(store.load(&group, "s", 0).await.unwrap(), Some(1));
    assert_eq!(store.load(&group, "x", 0).await.unwrap(), Some(10));
    waiting.save(&group, "s", 0, 2).await.unwrap();
    waiting.advance(&group, "x", 0, 10, 11).await.unwrap();
    assert_eq!(store.load(&group, "s", 0).await.unwrap(), Some(2));
    assert_eq!(store.load(&group, "x", 0).await.unwrap(), Some(11));
    eprintln!("innodb_lock_wait_timeout = 1 under a 10 s store timeout: failed after {took:?}");
}

/// A server of the test's own, stopped cleanly and then crashed, with the store's pool made
/// before. While it is down every call fails retryably within the store's timeout; after the
/// start the store works again without being made anew, its checkpoints and leases intact
/// (same owner, same epochs, renewed without a new one). Four writers saving rising positions
/// through a crash (SIGKILL): every acknowledged save is there after InnoDB's recovery, and
/// nothing beyond what was sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_of_our_own_stopped_and_crashed() {
    const TIMEOUT: Duration = Duration::from_secs(1);
    let setup = Instant::now();
    let server = OwnMariadb::start().await;
    let store = MysqlCheckpointStore::connect_with(server.options())
        .await
        .unwrap()
        .with_timeout(TIMEOUT)
        .unwrap();
    store.migrate().await.unwrap();
    let set_up = setup.elapsed();
    let group = fresh_group("restart");
    let fingerprint = Fingerprint::from_bytes([8; 32]);
    store.save(&group, "s", 0, 7).await.unwrap();
    store.save(&group, "s", 1, 9).await.unwrap();
    store.claim(&group, "x", 0, fingerprint, 0).await.unwrap();
    store.advance(&group, "x", 0, 0, 3).await.unwrap();
    let lease = Duration::from_secs(60);
    let acquired = store
        .acquire(&group, "s", "a", &[0, 1, 2], lease)
        .await
        .unwrap();
    fill_pool(&store, 2).await;

    for crash in [false, true] {
        let what = if crash { "crash" } else { "clean stop" };
        let before = server.pid();
        let stopped = Instant::now();
        server.stop_server(crash).await;
        let stop_took = stopped.elapsed();
        // Down: every call fails, retryably, within the store's timeout and a margin.
        let down = calls_while_down(&store, &group, lease, TIMEOUT, what).await;
        let restarted = Instant::now();
        server.start_server().await;
        let start_took = restarted.elapsed();
        assert_ne!(before, server.pid(), "a new server process");
        // Back: the same store works again; its pooled connections were dead.
        let probe = fresh_group("restart-probe");
        let Recovery { took, failures } =
            save_until_recovered(&store, &probe, "probe", 0, 1, Duration::from_secs(10))
                .await
                .unwrap_or_else(|failure| panic!("{failure}"));
        assert_checkpoints_and_leases_intact(&store, &group, &acquired, lease, what).await;
        eprintln!(
            "{what} of the server of our own (set up in {set_up:?}): stopped in {stop_took:?}; \
             while down {down:?}; started again in {start_took:?}; a save succeeded after \
             {took:?} ({failures} failed attempts)"
        );
        fill_pool(&store, 2).await;
    }
    checkpoint_conformance::sql_family::faults::acknowledged_saves_survive_a_crash(
        &server, &store, 5,
    )
    .await;
}

/// The calls made while the server is down (save, load, renew, save again): each fails,
/// retryably, within `timeout` and a margin. Each call's time and error (`timeout` for the
/// store's own).
async fn calls_while_down(
    store: &MysqlCheckpointStore,
    group: &str,
    lease: Duration,
    timeout: Duration,
    what: &str,
) -> Vec<(&'static str, Duration, String)> {
    let mut down = Vec::new();
    for call in ["save", "load", "renew", "save again"] {
        let started = Instant::now();
        let result = match call {
            "load" => store.load(group, "s", 0).await.map(drop),
            "renew" => store.renew(group, "s", "a", lease).await.map(drop),
            _ => store.save(group, "s", 0, 100).await,
        };
        let took = started.elapsed();
        let error = result.expect_err("a call to a stopped server must fail");
        assert!(error.is_retryable(), "{what}, {call}: {error:?}");
        assert!(
            took < timeout + Duration::from_secs(2),
            "{call} took {took:?}"
        );
        let kind = match &error {
            Error::Timeout { .. } => "timeout".to_owned(),
            other => error_chain(other),
        };
        down.push((call, took, kind));
    }
    down
}

/// After the server's start (`what` it went through): the checkpoints are where they were
/// before it, and `a` still holds its leases, same epochs, refused to `b` and renewed as they
/// are.
async fn assert_checkpoints_and_leases_intact(
    store: &MysqlCheckpointStore,
    group: &str,
    acquired: &Acquired,
    lease: Duration,
    what: &str,
) {
    // The saves sent while the server was down never reached it.
    assert_eq!(
        until_ok("load", 5, || store.load(group, "s", 0)).await.0,
        Some(7),
        "after the {what}"
    );
    assert_eq!(store.load(group, "s", 1).await.unwrap(), Some(9));
    assert_eq!(store.load(group, "x", 0).await.unwrap(), Some(3));
    let table = until_ok("leases", 5, || store.leases(group, "s")).await.0;
    let held: Vec<(u32, &str, u64)> = table
        .leases
        .iter()
        .map(|l| (l.partition, l.owner.as_str(), l.epoch))
        .collect();
    let expected: Vec<(u32, &str, u64)> = acquired
        .granted
        .iter()
        .map(|l| (l.partition, "a", l.epoch))
        .collect();
    assert_eq!(held, expected, "after the {what}");
    let other = store.acquire(group, "s", "b", &[1], lease).await.unwrap();
    assert_eq!(other.refused, [1], "after the {what}");
    assert_eq!(
        store.renew(group, "s", "a", lease).await.unwrap(),
        acquired.granted,
        "after the {what}"
    );
}
