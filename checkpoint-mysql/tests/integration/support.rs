//! Where the tests find a server, and small helpers they share.
//!
//! `MYSQL_URL` (read at run time) names the server, for example
//! `mysql://root@127.0.0.1:3306/test`. Without it, a MariaDB container is started with
//! testcontainers when a Docker engine is reachable (through the kit's `harness::server_url`).
//! With neither, every test that needs a server fails and says how to provide one.

use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use checkpoint_conformance::error_chain;
use checkpoint_conformance::sql_family::SqlServer;
use checkpoint_mysql::{MysqlCheckpointStore, MysqlEngine};
use sqlx::AssertSqlSafe;
use sqlx::mysql::MySqlConnectOptions;
use sqlx::{Connection, MySqlConnection};

/// The environment variable with the server's URL.
pub const URL_VAR: &str = "MYSQL_URL";

/// The URL of the server under test: `MYSQL_URL`, or a container started once per test
/// binary. Panics with instructions when there is neither.
pub fn database_url() -> String {
    checkpoint_conformance::harness::server_url(URL_VAR, start_container)
}

/// Starts `mariadb` in Docker; its URL, and the container to keep alive.
async fn start_container() -> Result<(String, impl Sized), String> {
    use testcontainers::runners::AsyncRunner;
    use testcontainers_modules::mariadb::Mariadb;

    let container = Mariadb::default()
        .start()
        .await
        .map_err(|error| error.to_string())?;
    let host = container.get_host().await.map_err(|e| e.to_string())?;
    let port = container
        .get_host_port_ipv4(3306)
        .await
        .map_err(|e| e.to_string())?;
    Ok((format!("mysql://root@{host}:{port}/test"), container))
}

/// The connect options of the server under test.
pub fn connect_options() -> MySqlConnectOptions {
    MySqlConnectOptions::from_str(&database_url())
        .unwrap_or_else(|error| panic!("{URL_VAR} is not a valid MySQL URL: {error}"))
}

/// A store on the default table, migrated: the factory of the conformance tests. Every call
/// migrates, so running the tests in parallel also exercises concurrent migrations.
pub async fn store() -> MysqlCheckpointStore {
    let store = MysqlCheckpointStore::connect_with(connect_options())
        .await
        .unwrap_or_else(|error| {
            panic!(
                "cannot connect to the server in {URL_VAR}: {}",
                error_chain(&error)
            )
        });
    store
        .migrate()
        .await
        .unwrap_or_else(|error| panic!("migrate failed: {}", error_chain(&error)));
    store
}

/// A plain connection to the server under test, as an administrator's test harness uses.
pub async fn admin_connection() -> MySqlConnection {
    MySqlConnection::connect_with(&connect_options())
        .await
        .unwrap_or_else(|error| panic!("cannot connect to the server in {URL_VAR}: {error}"))
}

/// Runs each of `statements` as the administrator.
pub async fn admin_sql(statements: &[String]) {
    let mut admin = admin_connection().await;
    for statement in statements {
        sqlx::raw_sql(sqlx::AssertSqlSafe(statement.clone()))
            .execute(&mut admin)
            .await
            .unwrap_or_else(|error| panic!("{statement}: {error}"));
    }
}

/// An identifier no other test (or run) uses: `prefix_<pid>_<nanos>_<counter>`, at most 40
/// bytes for a prefix of up to 8 (table names may have 48).
pub fn unique_ident(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.subsec_nanos())
        .unwrap_or(0);
    format!(
        "{prefix}_{}_{nanos}_{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// A MariaDB server of a test's own (the KILL and restart tests in `faults`, the TLS test in
/// `security`).
pub mod own_server;

/// How many rows `store`'s table holds for `group`, counted on an admin connection.
pub async fn rows_of(store: &MysqlCheckpointStore, group: &str) -> i64 {
    let mut admin = admin_connection().await;
    sqlx::query_scalar(AssertSqlSafe(format!(
        "SELECT COUNT(*) FROM `{}` WHERE group_name = ?",
        store.table()
    )))
    .bind(group)
    .fetch_one(&mut admin)
    .await
    .unwrap()
}

/// The server under test, for the kit's SQL-family cases (`checkpoint_conformance::sql_family`).
pub struct Server;

impl SqlServer<MysqlEngine> for Server {
    async fn store(&self) -> MysqlCheckpointStore {
        store().await
    }

    async fn rows_of(&self, store: &MysqlCheckpointStore, group: &str) -> i64 {
        rows_of(store, group).await
    }
}
