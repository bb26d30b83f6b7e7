//! Where the tests find a server, and small helpers they share.
//!
//! `DATABASE_URL` (read at run time) names the server, for example
//! `postgres://postgres@127.0.0.1:5432/test`. Without it, a PostgreSQL container is started
//! with testcontainers when a Docker engine is reachable (through the kit's
//! `harness::server_url`). With neither, every test that needs a server fails and says how to
//! provide one.

use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use checkpoint_conformance::error_chain;
use checkpoint_conformance::sql_family::SqlServer;
use checkpoint_postgres::{PostgresCheckpointStore, PostgresEngine};
use sqlx::AssertSqlSafe;
use sqlx::postgres::PgConnectOptions;
use sqlx::{Connection, PgConnection};

pub mod own_server;

/// The environment variable with the server's URL.
pub const URL_VAR: &str = "DATABASE_URL";

/// The URL of the server under test: `DATABASE_URL`, or a container started once per test
/// binary. Panics with instructions when there is neither.
pub fn database_url() -> String {
    checkpoint_conformance::harness::server_url(URL_VAR, start_container)
}

/// Starts `postgres` in Docker; its URL, and the container to keep alive.
async fn start_container() -> Result<(String, impl Sized), String> {
    use testcontainers::runners::AsyncRunner;
    use testcontainers_modules::postgres::Postgres;

    let container = Postgres::default()
        .with_host_auth()
        .start()
        .await
        .map_err(|error| error.to_string())?;
    let host = container.get_host().await.map_err(|e| e.to_string())?;
    let port = container
        .get_host_port_ipv4(5432)
        .await
        .map_err(|e| e.to_string())?;
    Ok((
        format!("postgres://postgres@{host}:{port}/postgres"),
        container,
    ))
}

/// The connect options of the server under test.
pub fn connect_options() -> PgConnectOptions {
    PgConnectOptions::from_str(&database_url())
        .unwrap_or_else(|error| panic!("{URL_VAR} is not a valid PostgreSQL URL: {error}"))
}

/// A store on the default table, migrated: the factory of the conformance tests. Every call
/// migrates, so running the tests in parallel also exercises concurrent migrations.
pub async fn store() -> PostgresCheckpointStore {
    let store = PostgresCheckpointStore::connect_with(connect_options())
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

/// A plain connection to the server under test, as a superuser test harness uses.
pub async fn admin_connection() -> PgConnection {
    PgConnection::connect_with(&connect_options())
        .await
        .unwrap_or_else(|error| panic!("cannot connect to the server in {URL_VAR}: {error}"))
}

/// Runs `sql` (one or more statements) as the superuser.
pub async fn admin_sql(sql: String) {
    let mut admin = admin_connection().await;
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
        .execute(&mut admin)
        .await
        .unwrap();
}

/// An identifier no other test (or run) uses: `prefix_<pid>_<nanos>_<counter>`.
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

/// A small deterministic generator (SplitMix64), so shuffles can be replayed from a seed.
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound
    }

    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = usize::try_from(self.below(i as u64 + 1)).unwrap_or(0);
            items.swap(i, j);
        }
    }
}

/// Connect options with `password`, for tests that must not need a server.
pub fn connect_options_without_server(password: &str) -> PgConnectOptions {
    PgConnectOptions::new()
        .host("127.0.0.1")
        .port(1)
        .username("app")
        .password(password)
        .database("app")
}

/// How many rows `store`'s table holds for `group`, counted on an admin connection.
pub async fn rows_of(store: &PostgresCheckpointStore, group: &str) -> i64 {
    let mut admin = admin_connection().await;
    sqlx::query_scalar(AssertSqlSafe(format!(
        "SELECT count(*) FROM \"{}\" WHERE group_name = $1",
        store.table()
    )))
    .bind(group)
    .fetch_one(&mut admin)
    .await
    .unwrap()
}

/// The server under test, for the kit's SQL-family cases (`checkpoint_conformance::sql_family`).
pub struct Server;

impl SqlServer<PostgresEngine> for Server {
    async fn store(&self) -> PostgresCheckpointStore {
        store().await
    }

    async fn rows_of(&self, store: &PostgresCheckpointStore, group: &str) -> i64 {
        rows_of(store, group).await
    }
}
