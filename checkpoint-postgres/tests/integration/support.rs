//! Where the tests find a server, and small helpers they share.
//!
//! `DATABASE_URL` (read at run time) names the server, for example
//! `postgres://postgres@127.0.0.1:5432/test`. Without it, a PostgreSQL container is started
//! with testcontainers when a Docker engine is reachable. With neither, every test that needs
//! a server fails and says how to provide one.

use std::str::FromStr;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use checkpoint_conformance::error_chain;
use checkpoint_postgres::PostgresCheckpointStore;
use sqlx::postgres::PgConnectOptions;
use sqlx::{Connection, PgConnection};

/// The environment variable with the server's URL.
pub const URL_VAR: &str = "DATABASE_URL";

/// The URL of the server under test: `DATABASE_URL`, or a container started once per test
/// binary. Panics with instructions when there is neither.
pub fn database_url() -> String {
    static URL: OnceLock<Result<String, String>> = OnceLock::new();
    match URL.get_or_init(resolve_url) {
        Ok(url) => url.clone(),
        Err(message) => panic!("{message}"),
    }
}

fn resolve_url() -> Result<String, String> {
    match std::env::var(URL_VAR) {
        Ok(url) if !url.trim().is_empty() => Ok(url),
        _ => start_container(),
    }
}

/// Starts `postgres` in Docker and returns its URL.
///
/// Each test runs in a runtime of its own, which ends with the test, while the container must
/// serve them all: it is started on a thread of its own, whose runtime keeps it until the
/// test binary exits.
fn start_container() -> Result<String, String> {
    use testcontainers::runners::AsyncRunner;
    use testcontainers_modules::postgres::Postgres;

    let (sender, receiver) = std::sync::mpsc::channel::<Result<String, String>>();
    std::thread::Builder::new()
        .name("postgres-container".to_owned())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(error) => {
                    let _ = sender.send(Err(format!("cannot build a runtime: {error}")));
                    return;
                }
            };
            runtime.block_on(async move {
                let started = async {
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
                    Ok::<_, String>((
                        container,
                        format!("postgres://postgres@{host}:{port}/postgres"),
                    ))
                };
                match started.await {
                    Ok((container, url)) => {
                        let _ = sender.send(Ok(url));
                        // Keep the container (and this runtime) alive until the process exits.
                        std::future::pending::<()>().await;
                        drop(container);
                    }
                    Err(error) => {
                        let _ = sender.send(Err(format!(
                            "{URL_VAR} is not set and no PostgreSQL container could be started \
                             ({error}). Set {URL_VAR}, for example \
                             `{URL_VAR}=postgres://postgres@127.0.0.1:5432/test`, or make a \
                             Docker engine available."
                        )));
                    }
                }
            });
        })
        .map_err(|error| format!("cannot spawn the container thread: {error}"))?;
    receiver
        .recv()
        .map_err(|_| "the container thread ended without an answer".to_owned())?
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
