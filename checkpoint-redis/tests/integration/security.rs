//! Security on servers of the tests' own: a least-privilege ACL user, TLS with certificate
//! verification, and no secret in `Debug` output or errors; on the single server, a password
//! never shown.

use std::time::Duration;

use checkpoint_conformance::{
    ADMIN_CASES, EXCLUSIVE_ADMIN_CASES, EXCLUSIVE_CASES, MONOTONIC_CASES, error_chain, fresh_group,
};
use checkpoint_core::{
    Checkpoint, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint, Operation,
};
use checkpoint_redis::{HashWrite, RedisCheckpointStore};

use crate::support::{OwnRedis, VOLATILE, free_port, single_addr, single_url};

/// `ACL SETUSER <name> on ><password> <rules>` on `server`.
async fn create_user(server: &OwnRedis, name: &str, password: &str, rules: &[String]) {
    let mut admin = server.admin().await;
    let () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg(name)
        .arg("on")
        .arg(format!(">{password}"))
        .arg(rules)
        .query_async(&mut admin)
        .await
        .unwrap_or_else(|error| panic!("ACL SETUSER {rules:?}: {error}"));
}

/// The server's ACL log, without the `CLIENT SETINFO` refusals that redis-rs provokes (and
/// ignores) on Redis 7.2 and later when the user may not run it.
async fn acl_log(server: &OwnRedis) -> Vec<String> {
    let mut admin = server.admin().await;
    let log: Vec<redis::Value> = redis::cmd("ACL")
        .arg("LOG")
        .query_async(&mut admin)
        .await
        .expect("ACL LOG");
    log.into_iter()
        .map(|entry| format!("{entry:?}"))
        .filter(|entry| !entry.to_lowercase().contains("setinfo"))
        .collect()
}

fn expect_noperm<T: std::fmt::Debug>(what: &str, result: redis::RedisResult<T>) {
    match result {
        Err(error) if error.to_string().to_lowercase().contains("noperm") => {}
        other => panic!("{what} should be refused with NOPERM, got {other:?}"),
    }
}

/// The prefix of the ACL tests: with a glob character, so that an unescaped key pattern would
/// let the user out of it.
const ACL_PREFIX: &str = "app?";

/// A server of the test's own with a user limited to exactly
/// [`RedisCheckpointStore::acl_rules`] (with `+wait`) for [`ACL_PREFIX`], its ACL log reset.
struct AclServer {
    server: OwnRedis,
    limited_url: String,
}

impl AclServer {
    async fn start() -> Self {
        let server = OwnRedis::start(VOLATILE).await;
        let (user, password) = ("checkpoint-app", "acl-test-password");
        create_user(&server, user, password, &acl_rules()).await;
        let () = redis::cmd("ACL")
            .arg("LOG")
            .arg("RESET")
            .query_async(&mut server.admin().await)
            .await
            .expect("ACL LOG RESET");
        let port = server.url().rsplit(':').next().expect("a port").to_owned();
        let limited_url = format!("redis://{user}:{password}@127.0.0.1:{port}");
        Self {
            server,
            limited_url,
        }
    }

    /// A store connected as the limited user, under `prefix`.
    async fn limited_store(&self, prefix: &str) -> RedisCheckpointStore {
        RedisCheckpointStore::connect(&self.limited_url)
            .await
            .expect("connecting as the limited user")
            .with_key_prefix(prefix)
            .expect("a valid prefix")
    }

    /// How many of `keys` exist, asked as the default user.
    async fn existing(&self, keys: &[&str]) -> i64 {
        redis::cmd("EXISTS")
            .arg(keys)
            .query_async(&mut self.server.admin().await)
            .await
            .expect("EXISTS")
    }

    /// Fails the test if the ACL log holds a refusal.
    async fn assert_nothing_refused(&self) {
        let log = acl_log(&self.server).await;
        assert!(
            log.is_empty(),
            "the server refused something the store needs: {log:?}"
        );
    }
}

/// The rules of a store under [`ACL_PREFIX`] with a replica acknowledgement.
fn acl_rules() -> Vec<String> {
    RedisCheckpointStore::new(())
        .with_key_prefix(ACL_PREFIX)
        .expect("a valid prefix")
        .with_replica_ack(0, Duration::from_millis(10))
        .acl_rules()
}

/// [`RedisCheckpointStore::acl_rules`] are the rules the crate doc shows, the prefix's glob
/// character escaped.
#[test]
fn acl_rules_are_the_documented_ones_with_the_prefix_escaped() {
    let rules = acl_rules();
    eprintln!("ACL rules: {}", rules.join(" "));
    assert_eq!(
        rules.join(" "),
        "resetkeys ~app\\?:* resetchannels -@all +evalsha +eval +hget +hmget +hset +hscan +hlen \
         +sismember +sadd +srem +hdel +smembers +scan +cluster|slots +time +hgetall +zadd +zrem \
         +zrangebylex +zremrangebylex +wait",
        "the rules the crate doc shows"
    );
}

/// Every operation, the `EVAL` fallback after `SCRIPT FLUSH` and `WAIT` run as the limited
/// user without a single refusal in the server's ACL log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acl_user_runs_every_operation_without_a_refusal() {
    let acl = AclServer::start().await;
    let store = acl.limited_store(ACL_PREFIX).await;
    let group = fresh_group("redis-acl");
    let fingerprint = Fingerprint::from_bytes([2; 32]);
    store.save(&group, "s", 0, 5).await.expect("save");
    store
        .save_all(
            &group,
            &[Checkpoint::new("s", 1, 6), Checkpoint::new("t", 0, 7)],
        )
        .await
        .expect("save_all");
    assert_eq!(store.load(&group, "s", 0).await.expect("load"), Some(5));
    assert_eq!(store.list(&group).await.expect("list").len(), 3);
    let at = store
        .claim(&group, "e", 0, fingerprint, 10)
        .await
        .expect("claim");
    store
        .advance(&group, "e", 0, at, 11)
        .await
        .expect("advance");
    let totals = format!(
        "{ACL_PREFIX}:totals:{}",
        store.hash_tag(&group).expect("tag")
    );
    store
        .advance_in(&group, "e", 0, 11, 12, &[HashWrite::new(&totals, "n", "1")])
        .await
        .expect("advance_in into a key under the prefix");
    let () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async(&mut acl.server.admin().await)
        .await
        .expect("SCRIPT FLUSH");
    store
        .save(&group, "s", 0, 8)
        .await
        .expect("save through EVAL");
    store
        .clone()
        .with_replica_ack(0, Duration::from_millis(10))
        .save(&group, "s", 0, 9)
        .await
        .expect("save with WAIT");
    acl.assert_nothing_refused().await;
}

/// The whole conformance kit, the operations API's, the leases' and the parked entries' cases
/// included, runs as the limited user without a single refusal in the server's ACL log; but for
/// the concurrent histories, which send the same commands as the cases, many times over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acl_user_passes_the_conformance_kit_without_a_refusal() {
    let acl = AclServer::start().await;
    let store = acl.limited_store(ACL_PREFIX).await;
    for case in MONOTONIC_CASES
        .iter()
        .filter(|case| case.name != "concurrent_histories")
    {
        if let Err(failure) = (case.run)(&store).await {
            panic!("{} under the ACL user: {failure}", case.name);
        }
    }
    for case in EXCLUSIVE_CASES {
        if let Err(failure) = (case.run)(&store).await {
            panic!("{} under the ACL user: {failure}", case.name);
        }
    }
    for case in ADMIN_CASES
        .iter()
        .filter(|case| case.name != "retire_during_concurrent_histories")
    {
        if let Err(failure) = (case.run)(&store).await {
            panic!("{} under the ACL user: {failure}", case.name);
        }
    }
    for case in EXCLUSIVE_ADMIN_CASES {
        if let Err(failure) = (case.run)(&store).await {
            panic!("{} under the ACL user: {failure}", case.name);
        }
    }
    let other = acl.limited_store(ACL_PREFIX).await;
    macro_rules! lease_cases {
        ($($case:ident)*) => {$(
            if let Err(failure) = checkpoint_conformance::cases::$case(&store, &other).await {
                panic!("{} under the ACL user: {failure}", stringify!($case));
            }
        )*};
    }
    // Every lease case but the histories (the same commands, many times over).
    lease_cases!(
        acquire_grants_free_partitions
        a_live_lease_is_refused_to_another_owner
        acquire_of_an_own_live_lease_keeps_its_epoch
        epochs_increase_with_every_change_of_hands
        renew_extends_every_lease_of_the_owner
        renew_without_live_leases_is_not_held
        renew_after_a_takeover_is_refused
        release_frees_a_lease_at_once
        release_by_a_non_holder_changes_nothing
        leave_releases_everything_and_ends_the_heartbeat
        an_expired_lease_goes_to_another_owner_after_the_holders_deadline
        one_clock_decides_expiry
        leases_lists_every_holder_and_live_owner
        a_handover_request_reaches_the_holder
        a_retired_subscription_cannot_be_leased
        purge_removes_the_leases_of_a_retired_subscription
        a_lease_never_moves_a_checkpoint
        concurrent_acquirers_each_partition_goes_to_one
        a_release_racing_a_handover_request_releases
        an_expired_lease_goes_to_a_taker_racing_its_former_holder
    );
    macro_rules! parked_cases {
        ($($case:ident)*) => {$(
            if let Err(failure) = checkpoint_conformance::cases::$case(&store).await {
                panic!("{} under the ACL user: {failure}", stringify!($case));
            }
        )*};
    }
    // Every parked-entry case: they need no command beyond the documented rules.
    parked_cases!(
        parked_entries_are_listed_sorted
        parking_again_replaces_the_record
        retry_parked_marks_only_that_entry
        unpark_removes_only_that_entry
        parked_groups_are_separate
        parked_extremes_round_trip
        parked_invalid_inputs_are_rejected
    );
    acl.assert_nothing_refused().await;
}

/// The limited user reads the store's own keys, and is refused (`NOPERM`) keys outside the
/// prefix (one that only the prefix's unescaped glob would match among them) and commands the
/// store does not send; the refusals are in the ACL log and leave no key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acl_user_is_refused_other_keys_and_commands() {
    let acl = AclServer::start().await;
    let store = acl.limited_store(ACL_PREFIX).await;
    let mut limited = redis::Client::open(acl.limited_url.as_str())
        .expect("the limited user's URL")
        .get_multiplexed_async_connection()
        .await
        .expect("connecting as the limited user");
    let own_key = store.group_key(&fresh_group("redis-acl")).expect("a key");
    let _: Option<String> = redis::cmd("HGET")
        .arg(&own_key)
        .arg("0:s")
        .query_async(&mut limited)
        .await
        .expect("HGET of the store's own key");
    let outside = ["appX:{g}", "other:{g}", "app:{g}"];
    for key in outside {
        expect_noperm(
            key,
            redis::cmd("HSET")
                .arg(key)
                .arg("f")
                .arg("v")
                .query_async::<i64>(&mut limited)
                .await,
        );
    }
    expect_noperm(
        "FLUSHALL",
        redis::cmd("FLUSHALL").query_async::<()>(&mut limited).await,
    );
    expect_noperm(
        "KEYS",
        redis::cmd("KEYS")
            .arg("*")
            .query_async::<Vec<String>>(&mut limited)
            .await,
    );
    expect_noperm(
        "DEL",
        redis::cmd("DEL")
            .arg(&own_key)
            .query_async::<i64>(&mut limited)
            .await,
    );
    assert_eq!(
        acl.existing(&outside).await,
        0,
        "a refused write left a key"
    );
    assert!(
        !acl_log(&acl.server).await.is_empty(),
        "the refusals are in the ACL log"
    );
}

/// A store under another prefix, through the limited user: a non-retryable backend error
/// whose chain says `NOPERM`, and nothing written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_outside_the_users_prefix_fails_without_retry() {
    let acl = AclServer::start().await;
    let elsewhere = acl.limited_store("appX").await;
    let group = fresh_group("redis-acl");
    let error = elsewhere
        .save(&group, "s", 0, 1)
        .await
        .expect_err("outside the prefix");
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
    assert!(
        error_chain(&error).to_lowercase().contains("noperm"),
        "{}",
        error_chain(&error)
    );
    let key = elsewhere.group_key(&group).expect("a key");
    assert_eq!(
        acl.existing(&[key.as_str()]).await,
        0,
        "a refused save left a key"
    );
}

/// `advance_in` with a write outside the user's keys is refused before the script runs: the
/// position does not move, and the write's key is not created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_advance_in_moves_nothing() {
    let acl = AclServer::start().await;
    let store = acl.limited_store(ACL_PREFIX).await;
    let group = fresh_group("redis-acl");
    let fingerprint = Fingerprint::from_bytes([2; 32]);
    let at = store
        .claim(&group, "e", 0, fingerprint, 12)
        .await
        .expect("claim");
    let error = store
        .advance_in(
            &group,
            "e",
            0,
            at,
            at + 1,
            &[HashWrite::new("other:{g}", "n", "1")],
        )
        .await
        .expect_err("a write outside the user's keys");
    assert!(
        error_chain(&error).to_lowercase().contains("noperm"),
        "{}",
        error_chain(&error)
    );
    assert_eq!(store.load(&group, "e", 0).await.expect("load"), Some(at));
    assert_eq!(
        acl.existing(&["other:{g}"]).await,
        0,
        "a refused write left a key"
    );
}

/// Writes a certificate authority and a server certificate for 127.0.0.1 into `dir` with
/// openssl; returns the CA certificate's path.
fn make_certificates(dir: &std::path::Path) -> std::path::PathBuf {
    let run = |args: &[&str]| {
        let output = std::process::Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap_or_else(|error| {
                panic!("cannot run openssl ({error}): install it for the TLS test")
            });
        assert!(
            output.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let mut ca = vec![
        "req",
        "-x509",
        "-days",
        "1",
        "-subj",
        "/CN=checkpoint-test-ca",
    ];
    ca.extend(ec);
    ca.extend(["-keyout", "ca.key", "-out", "ca.crt"]);
    run(&ca);
    let mut request = vec!["req", "-subj", "/CN=127.0.0.1"];
    request.extend(ec);
    request.extend(["-keyout", "server.key", "-out", "server.csr"]);
    run(&request);
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n",
    )
    .expect("writing the extensions");
    run(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "1",
        "-extfile",
        "server.ext",
        "-out",
        "server.crt",
    ]);
    dir.join("ca.crt")
}

/// A Redis with only a TLS port for clients (the plain port answers the test's readiness
/// probe), through the `tls-rustls` feature: the store verifies the server against the CA it
/// is given, refuses a server it cannot verify, and never shows the password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_a_private_ca_and_no_secret_in_debug() {
    let tls_port = free_port();
    let server = OwnRedis::start_with(VOLATILE, |dir| {
        make_certificates(dir);
        [
            "--tls-port",
            &tls_port.to_string(),
            "--tls-cert-file",
            &dir.join("server.crt").display().to_string(),
            "--tls-key-file",
            &dir.join("server.key").display().to_string(),
            "--tls-ca-cert-file",
            &dir.join("ca.crt").display().to_string(),
            "--tls-auth-clients",
            "no",
        ]
        .into_iter()
        .map(str::to_owned)
        .collect()
    })
    .await;
    let password = "tls-test-secret-password";
    let rules = RedisCheckpointStore::connect(&server.url())
        .await
        .expect("connecting")
        .acl_rules();
    create_user(&server, "checkpoint-tls", password, &rules).await;
    let ca = std::fs::read(server.dir().join("ca.crt")).expect("the CA certificate");
    let url = format!("rediss://checkpoint-tls:{password}@127.0.0.1:{tls_port}");
    let client = redis::Client::build_with_tls(
        url.as_str(),
        redis::TlsCertificates {
            client_tls: None,
            root_cert: Some(ca),
        },
    )
    .expect("a TLS client");
    let store = RedisCheckpointStore::connect_client(client)
        .await
        .expect("connecting over TLS with the private CA");
    let group = fresh_group("redis-tls");
    store
        .save(&group, "s", 0, 1 << 60)
        .await
        .expect("save over TLS");
    store
        .save_all(&group, &[Checkpoint::new("s", 1, 2)])
        .await
        .expect("save_all over TLS");
    assert_eq!(
        store.load(&group, "s", 0).await.expect("load"),
        Some(1 << 60)
    );
    let at = store
        .claim(&group, "e", 0, Fingerprint::from_bytes([6; 32]), 3)
        .await
        .expect("claim over TLS");
    store
        .advance(&group, "e", 0, at, 4)
        .await
        .expect("advance over TLS");
    assert_eq!(store.list(&group).await.expect("list").len(), 3);

    let debug = format!("{store:?} {store:#?}");
    assert!(
        !debug.contains(password),
        "Debug shows the password: {debug}"
    );
    assert!(
        debug.contains(&tls_port.to_string()),
        "Debug shows the endpoint: {debug}"
    );

    // The platform's roots do not know the test CA: the handshake is refused, the error
    // does not show the password.
    let started = std::time::Instant::now();
    let error = RedisCheckpointStore::connect(&url)
        .await
        .expect_err("a server certificate no trusted root signed");
    let refused_after = started.elapsed();
    eprintln!("TLS connect without the CA refused after {refused_after:?}");
    // A correctness bound (connect gives up), not a speed target.
    assert!(refused_after < Duration::from_secs(10), "{refused_after:?}");
    let text = format!("{error} {error:?} {}", error_chain(&error));
    assert!(
        !text.contains(password),
        "the error shows the password: {text}"
    );
    assert!(
        text.to_lowercase().contains("certificate"),
        "expected a certificate error: {text}"
    );
    // Plain text against the TLS port does not get through either.
    let started = std::time::Instant::now();
    let plain = tokio::time::timeout(
        Duration::from_secs(10),
        RedisCheckpointStore::connect(&format!(
            "redis://checkpoint-tls:{password}@127.0.0.1:{tls_port}"
        )),
    )
    .await;
    eprintln!(
        "plain text to the TLS port refused after {:?}",
        started.elapsed()
    );
    match plain {
        Ok(Err(error)) => {
            let text = format!("{error:?}");
            assert!(!text.contains(password), "{text}");
        }
        Ok(Ok(_)) => panic!("a plain-text connection to the TLS port succeeded"),
        Err(_elapsed) => panic!("a plain-text connection to the TLS port did not fail in 10 s"),
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
