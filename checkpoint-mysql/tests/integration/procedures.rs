//! The store's stored procedures as only MySQL and MariaDB can get them wrong: created by a
//! user with exactly the privileges the crate doc gives `migrate`, on a server that writes a
//! binary log; and a deadlock inside one, whose victim the store runs again as it runs any
//! other (the procedure rolls back and `RESIGNAL`s InnoDB's error 1213). The round trips of
//! their `CALL`s are counted in `round_trips`, `schema_sql`'s `DELIMITER` script in `admin`.

use std::time::{Duration, Instant};

use checkpoint_conformance::{error_chain, fresh_group};
use checkpoint_core::LeaseStore;
use checkpoint_mysql::MysqlCheckpointStore;
use sqlx::{Connection, MySqlConnection};

use crate::security::{PROCEDURES, RUNTIME_GRANTS, RUNTIME_PROCEDURES, user_with};
use crate::support;
use crate::support::own_server::OwnMariadb;

/// The privileges the crate doc gives `migrate` (`CREATE` and `CREATE ROUTINE` on the
/// database, nothing else) create every table and procedure, and again (idempotent), on a
/// server of the test's own that writes a statement-based binary log: there a stored
/// *function* or a trigger would also need `SUPER` or `log_bin_trust_function_creators`, a
/// procedure does not. The procedures run with the caller's privileges (`SQL SECURITY
/// INVOKER`), defined by the migrating user; a run-time user granted as the crate doc says
/// then leases through them, their statements written to that binary log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_migrator_privileges_create_the_procedures_on_a_server_with_a_binary_log() {
    let server = OwnMariadb::start_with(&[
        "--log-bin=binlog".to_owned(),
        "--binlog-format=STATEMENT".to_owned(),
    ])
    .await;
    let mut admin = MySqlConnection::connect_with(&server.options())
        .await
        .unwrap();
    let (log_bin, trusted): (i64, i64) =
        sqlx::query_as("SELECT @@log_bin, @@log_bin_trust_function_creators")
            .fetch_one(&mut admin)
            .await
            .unwrap();
    assert_eq!((log_bin, trusted), (1, 0));
    let mut setup = user_with("migrator", "migrator-pw", "checkpoints", (&[], &[]));
    setup.push("GRANT CREATE, CREATE ROUTINE ON test.* TO 'migrator'@'%'".to_owned());
    for statement in setup {
        sqlx::raw_sql(sqlx::AssertSqlSafe(statement))
            .execute(&mut admin)
            .await
            .unwrap();
    }
    let options = server
        .options()
        .username("migrator")
        .password("migrator-pw");
    let migrator = MysqlCheckpointStore::connect_with(options).await.unwrap();
    for run in ["first", "second"] {
        migrator
            .migrate()
            .await
            .unwrap_or_else(|error| panic!("{run} migrate: {}", error_chain(&error)));
    }
    let routines: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT CAST(ROUTINE_NAME AS CHAR), CAST(SECURITY_TYPE AS CHAR), CAST(DEFINER AS CHAR) \
         FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = 'test' ORDER BY ROUTINE_NAME",
    )
    .fetch_all(&mut admin)
    .await
    .unwrap();
    let mut want: Vec<String> = PROCEDURES
        .iter()
        .map(|operation| format!("checkpoints_{operation}_v1"))
        .collect();
    want.sort();
    let names: Vec<&str> = routines.iter().map(|(name, _, _)| name.as_str()).collect();
    assert_eq!(names, want);
    for (name, security, definer) in &routines {
        assert_eq!(
            (security.as_str(), definer.as_str()),
            ("INVOKER", "migrator@%"),
            "{name}"
        );
    }
    leases_as_a_runtime_user(&server, &mut admin).await;
}

/// A run-time user of `server`, granted as the crate doc says, acquires, renews and leaves.
async fn leases_as_a_runtime_user(server: &OwnMariadb, admin: &mut MySqlConnection) {
    let grants = user_with(
        "runtime",
        "runtime-pw",
        "checkpoints",
        (&RUNTIME_GRANTS, RUNTIME_PROCEDURES),
    );
    for statement in grants {
        sqlx::raw_sql(sqlx::AssertSqlSafe(statement))
            .execute(&mut *admin)
            .await
            .unwrap();
    }
    let options = server.options().username("runtime").password("runtime-pw");
    let store = MysqlCheckpointStore::connect_with(options).await.unwrap();
    let lease = Duration::from_secs(5);
    let acquired = store.acquire("g", "s", "w", &[0, 1], lease).await.unwrap();
    assert_eq!(acquired.granted.len(), 2, "{acquired:?}");
    assert_eq!(store.renew("g", "s", "w", lease).await.unwrap().len(), 2);
    assert_eq!(store.leave("g", "s", "w").await.unwrap(), [0, 1]);
    store.pool().close().await;
}

/// InnoDB chooses an acquire's procedure as a deadlock's victim: an administrator's
/// transaction, heavier (it wrote many rows, so InnoDB rolls the other back), holds the lease
/// row of partition 1; once the procedure holds its owner's heartbeat row (its first write)
/// and waits for partition 1's row (whichever statement of it gets there first), the
/// administrator asks for that heartbeat row. The administrator's statement gets its lock (it
/// was not the victim), so the procedure's transaction was rolled back with error 1213; the
/// acquire still succeeds, with both partitions: the store recognised the deadlock through the
/// `CALL` and ran it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadlock_inside_a_procedure_is_run_again_by_the_store() {
    let store = support::store().await;
    let group = fresh_group("proc-deadlock");
    let lease = Duration::from_secs(30);
    // The lease rows exist, free, and so does the owner's heartbeat.
    store
        .acquire(&group, "s", "setup", &[0, 1], lease)
        .await
        .unwrap();
    store.leave(&group, "s", "setup").await.unwrap();
    store.acquire(&group, "s", "w", &[], lease).await.unwrap();

    let mut admin = support::admin_connection().await;
    let deadlocks_before = innodb_deadlocks(&mut admin).await;
    let admin_trx = heavy_transaction_holding(&mut admin, &group).await;
    let acquiring = tokio::spawn({
        let (store, group) = (store.clone(), group.clone());
        async move { store.acquire(&group, "s", "w", &[0, 1], lease).await }
    });
    wait_until_blocked_by(&admin_trx, &group).await;
    // Closes the cycle: the procedure holds the heartbeat's row and waits for partition 1's.
    let locked = sqlx::query(
        "SELECT owner FROM checkpoints_lease_owners \
         WHERE group_name = ? AND subscription = 's' AND owner = 'w' FOR UPDATE",
    )
    .bind(&group)
    .fetch_all(&mut admin)
    .await;
    assert!(
        locked.is_ok(),
        "the administrator was the victim: {locked:?}"
    );
    sqlx::raw_sql("ROLLBACK").execute(&mut admin).await.unwrap();
    assert!(innodb_deadlocks(&mut admin).await > deadlocks_before);
    let acquired = acquiring
        .await
        .unwrap()
        .unwrap_or_else(|error| panic!("{}", error_chain(&error)));
    let granted: Vec<u32> = acquired
        .granted
        .iter()
        .map(|lease| lease.partition)
        .collect();
    assert_eq!(granted, [0, 1]);
    store.leave(&group, "s", "w").await.unwrap();
}

/// InnoDB's count of deadlocks since the server started (server-wide).
async fn innodb_deadlocks(admin: &mut MySqlConnection) -> u64 {
    let (_, value): (String, String) = sqlx::query_as("SHOW GLOBAL STATUS LIKE 'Innodb_deadlocks'")
        .fetch_one(admin)
        .await
        .unwrap();
    value.parse().unwrap()
}

/// Begins a transaction on `admin` that writes 500 checkpoints of `group` (so that InnoDB
/// finds it the heavier in a deadlock) and locks the lease row of partition 1 of its
/// subscription `s`; its id.
async fn heavy_transaction_holding(admin: &mut MySqlConnection, group: &str) -> String {
    sqlx::raw_sql("BEGIN").execute(&mut *admin).await.unwrap();
    for partition in 0..500_i64 {
        sqlx::query(
            "INSERT INTO checkpoints (group_name, subscription, partition_id, position) \
             VALUES (?, 'heavy', ?, 1)",
        )
        .bind(group)
        .bind(partition)
        .execute(&mut *admin)
        .await
        .unwrap();
    }
    sqlx::query(
        "SELECT partition_id FROM checkpoints_leases \
         WHERE group_name = ? AND subscription = 's' AND partition_id = 1 FOR UPDATE",
    )
    .bind(group)
    .fetch_all(&mut *admin)
    .await
    .unwrap();
    sqlx::query_scalar(
        "SELECT CAST(trx_id AS CHAR) FROM information_schema.INNODB_TRX \
         WHERE trx_mysql_thread_id = CONNECTION_ID()",
    )
    .fetch_one(&mut *admin)
    .await
    .unwrap()
}

/// Waits until a transaction waits for a lock the transaction `blocker` holds (the acquire's,
/// the only other one that touches `group`'s leases); panics after 20 s. Polled every 150 ms:
/// InnoDB refreshes what `information_schema.INNODB_LOCK_WAITS` shows only when it was last
/// read more than 100 ms before, so a faster poll would read the same stale answer forever.
async fn wait_until_blocked_by(blocker: &str, group: &str) {
    let mut observer = support::admin_connection().await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM information_schema.INNODB_LOCK_WAITS \
             WHERE blocking_trx_id = ?",
        )
        .bind(blocker)
        .fetch_one(&mut observer)
        .await
        .unwrap();
        if waiting > 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{group}: the acquire never waited for the administrator's lock"
        );
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
}
