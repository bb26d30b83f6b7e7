//! Security: passwords never shown by the store's Debug output or by its errors, TLS, and the
//! least privilege the store needs at run time.
//!
//! The TLS test needs the crate's `tls-rustls` feature (sqlx's TLS is chosen at compile time,
//! and turning it on here would turn it on for every crate of the workspace under
//! `cargo test --workspace`):
//!
//! ```text
//! cargo test -p checkpoint-postgres --features tls-rustls --test integration -- security
//! ```
//!
//! Without the feature, a test shows that a URL asking for TLS fails to connect rather than
//! connecting in plain text. The run-time privileges (SELECT, INSERT, UPDATE only; SELECT only
//! on the tombstones) are tested here with every operation, and the whole conformance kit runs
//! under such a role in `kit::runtime_role` (the lease kit's retires and purges by an
//! operator beside it).

use checkpoint_conformance::error_chain;
#[cfg(feature = "tls-rustls")]
use checkpoint_conformance::fresh_group;
use checkpoint_conformance::harness::RuntimeWorker;
use checkpoint_conformance::sql_family::security::{self, Grants, LeastPrivilege};
#[cfg(feature = "tls-rustls")]
use checkpoint_core::CheckpointStore;
use checkpoint_core::{Error, Operation};
use checkpoint_postgres::{PostgresCheckpointStore, PostgresEngine};
use sqlx::postgres::PgPoolOptions;
use sqlx::{AssertSqlSafe, Connection};

use crate::support;

const SECRET: &str = "s3cr3t-Pw-0c4d9e";

/// Every way a store or its error can be printed, which must never show `secret`.
fn assert_hidden(what: &str, shown: &str, secret: &str) {
    assert!(
        !shown.contains(secret),
        "{what} shows the password: {shown}"
    );
}

/// A refused connection: a connect error that retrying cannot help.
fn assert_final_connect_error(error: &Error, why: &str) {
    assert!(
        matches!(
            error,
            Error::Backend {
                operation: Operation::Connect,
                retryable: false,
                ..
            }
        ),
        "{why}: {error:?}"
    );
}

/// The name of the role [`runtime_role_store`] connects as.
const RUNTIME_ROLE: &str = "checkpoint_runtime_role";

/// A store on the default table whose role may only SELECT, INSERT and UPDATE it: the factory
/// of `kit::runtime_role`. The table and the role are created by the superuser (once,
/// under an advisory lock, since the tests run in parallel).
pub async fn runtime_role_store() -> PostgresCheckpointStore {
    // The superuser creates the table, then the role and its grants.
    support::store().await;
    let mut admin = support::admin_connection().await;
    let mut transaction = admin.begin().await.unwrap();
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext('checkpoint-postgres runtime role'))")
        .execute(&mut *transaction)
        .await
        .unwrap();
    let exists: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT FROM pg_roles WHERE rolname = $1)")
            .bind(RUNTIME_ROLE)
            .fetch_one(&mut *transaction)
            .await
            .unwrap();
    if !exists {
        sqlx::raw_sql(AssertSqlSafe(format!(
            "CREATE ROLE {RUNTIME_ROLE} LOGIN PASSWORD '{SECRET}'"
        )))
        .execute(&mut *transaction)
        .await
        .unwrap();
    }
    // Every time, in case the table was created anew since: exactly these privileges.
    sqlx::raw_sql(AssertSqlSafe(format!(
        "REVOKE ALL ON checkpoints FROM {RUNTIME_ROLE}; \
         GRANT SELECT, INSERT, UPDATE ON checkpoints TO {RUNTIME_ROLE}; \
         REVOKE ALL ON checkpoints_retired FROM {RUNTIME_ROLE}; \
         GRANT SELECT ON checkpoints_retired TO {RUNTIME_ROLE}; \
         REVOKE ALL ON checkpoints_leases FROM {RUNTIME_ROLE}; \
         GRANT SELECT, INSERT, UPDATE ON checkpoints_leases TO {RUNTIME_ROLE}; \
         REVOKE ALL ON checkpoints_owners FROM {RUNTIME_ROLE}; \
         GRANT SELECT, INSERT, UPDATE ON checkpoints_owners TO {RUNTIME_ROLE}; \
         REVOKE ALL ON checkpoints_parked FROM {RUNTIME_ROLE}; \
         GRANT SELECT, INSERT, UPDATE, DELETE ON checkpoints_parked TO {RUNTIME_ROLE};"
    )))
    .execute(&mut *transaction)
    .await
    .unwrap();
    transaction.commit().await.unwrap();
    let options = support::connect_options()
        .username(RUNTIME_ROLE)
        .password(SECRET);
    let store = PostgresCheckpointStore::connect_with(options)
        .await
        .unwrap_or_else(|error| panic!("connecting as {RUNTIME_ROLE}: {}", error_chain(&error)));
    // What the role may do on each table: nothing beyond these privileges.
    for (table, expected) in [
        ("checkpoints", &["INSERT", "SELECT", "UPDATE"][..]),
        ("checkpoints_retired", &["SELECT"][..]),
        ("checkpoints_leases", &["INSERT", "SELECT", "UPDATE"][..]),
        ("checkpoints_owners", &["INSERT", "SELECT", "UPDATE"][..]),
        // A subscription removes an entry it retried with success.
        (
            "checkpoints_parked",
            &["DELETE", "INSERT", "SELECT", "UPDATE"][..],
        ),
    ] {
        let privileges: Vec<String> = sqlx::query_scalar(
            "SELECT privilege_type::text FROM information_schema.role_table_grants \
             WHERE grantee = $1 AND table_name = $2 ORDER BY 1",
        )
        .bind(RUNTIME_ROLE)
        .bind(table)
        .fetch_all(store.pool())
        .await
        .unwrap();
        assert_eq!(privileges, expected, "{table}");
    }
    let superuser: bool =
        sqlx::query_scalar("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
            .fetch_one(store.pool())
            .await
            .unwrap();
    assert!(!superuser);
    // With the table in place, migrate needs nothing more.
    store.migrate().await.unwrap();
    store
}

/// A worker under the run-time role beside an operator: the factory of
/// `kit::runtime_role::leases`. Every lease operation runs under the run-time role; `retire`
/// and `purge`, which the lease cases also call, are an operator's, as in a deployment (the
/// run-time role may not run them: see `the_runtime_privileges_are_all_a_subscription_needs`).
pub async fn runtime_role_worker() -> RuntimeWorker<PostgresCheckpointStore> {
    RuntimeWorker::new(runtime_role_store().await, support::store().await)
}

/// A store connected with a password in its URL: its Debug output, its pool's and its errors
/// never show it (the pool holds the connect options, whose own Debug does show it; the
/// kit's SQL family).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connected_store_never_shows_its_password() {
    security::a_connected_store_never_shows_its_password(&support::Server).await;
}

/// Built without TLS, a URL that asks for it (`sslmode=require`) fails to connect, saying
/// why, rather than sending the password and the checkpoints in plain text.
#[cfg(not(feature = "tls-rustls"))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_tls_feature_a_url_asking_for_tls_fails() {
    use sqlx::postgres::PgSslMode;

    let options = support::connect_options()
        .password(SECRET)
        .ssl_mode(PgSslMode::Require);
    let error = PostgresCheckpointStore::connect_with(options)
        .await
        .unwrap_err();
    let chain = error_chain(&error);
    assert_final_connect_error(&error, "asking for TLS without the feature");
    assert!(chain.contains("TLS"), "{chain}");
    assert_hidden("the TLS error", &format!("{chain} {error:?}"), SECRET);
}

/// A server of the test's own with a certificate from a CA of the test's own, that refuses
/// connections without TLS and checks passwords (SCRAM). With `sslmode=require` and
/// `verify-full` (against that CA) the store works and its sessions are encrypted; without the
/// CA, `verify-full` refuses the server; without TLS the server refuses the client; a wrong
/// password is refused; nothing shows the password.
#[cfg(feature = "tls-rustls")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_through_rustls_on_a_server_of_our_own() {
    use crate::support::own_server::OwnPostgres;
    use sqlx::PgConnection;

    let server = OwnPostgres::init().await;
    let tls = server.dir().join("tls");
    std::fs::create_dir_all(&tls).unwrap();
    let openssl = |args: &'static str| {
        let tls = tls.clone();
        async move {
            let output = tokio::process::Command::new("openssl")
                .args(args.split(' '))
                .current_dir(&tls)
                .output()
                .await
                .unwrap_or_else(|error| panic!("cannot run openssl (install it): {error}"));
            assert!(
                output.status.success(),
                "openssl {args}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
    };
    std::fs::write(
        tls.join("server.ext"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n\
         keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(
        "req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
         -subj /CN=checkpoint-test-ca -keyout ca.key -out ca.pem",
    )
    .await;
    openssl(
        "req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
         -subj /CN=127.0.0.1 -keyout server.key -out server.csr",
    )
    .await;
    openssl(
        "x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
         -extfile server.ext -out server.pem",
    )
    .await;
    server.chown(&tls).await;
    std::fs::set_permissions(
        tls.join("server.key"),
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    server.configure(
        &[
            "ssl = on",
            &format!("ssl_cert_file = '{}'", tls.join("server.pem").display()),
            &format!("ssl_key_file = '{}'", tls.join("server.key").display()),
            "password_encryption = 'scram-sha-256'",
        ],
        Some(
            "local all all trust\n\
             hostssl all all 127.0.0.1/32 scram-sha-256\n\
             hostnossl all all 127.0.0.1/32 reject\n",
        ),
    );
    server.start_server().await;
    let mut admin = PgConnection::connect_with(&server.socket_options())
        .await
        .unwrap();
    sqlx::raw_sql(AssertSqlSafe(format!(
        "ALTER ROLE postgres PASSWORD '{SECRET}'"
    )))
    .execute(&mut admin)
    .await
    .unwrap();
    let url = |password: &str, query: &str| {
        format!(
            "postgres://postgres:{password}@127.0.0.1:{}/postgres?{query}",
            server.port()
        )
    };
    let ca = tls.join("ca.pem");

    for query in [
        "sslmode=require".to_owned(),
        format!("sslmode=verify-full&sslrootcert={}", ca.display()),
    ] {
        let store = PostgresCheckpointStore::connect(&url(SECRET, &query))
            .await
            .unwrap_or_else(|error| panic!("{query}: {}", error_chain(&error)));
        store.migrate().await.unwrap();
        let group = fresh_group("tls");
        store.save(&group, "s", 0, 7).await.unwrap();
        assert_eq!(store.load(&group, "s", 0).await.unwrap(), Some(7));
        let (ssl, version): (bool, Option<String>) =
            sqlx::query_as("SELECT ssl, version FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
                .fetch_one(store.pool())
                .await
                .unwrap();
        assert!(ssl, "{query}: the session is not encrypted");
        eprintln!("{query}: encrypted with {version:?}");
        assert_hidden("the store's Debug", &format!("{store:?}"), SECRET);
    }

    // Refusals, each a connect error that is not worth retrying and hides the password.
    for (why, url, expected) in [
        (
            "verify-full without the test's CA",
            url(SECRET, "sslmode=verify-full"),
            "certificate",
        ),
        ("no TLS", url(SECRET, "sslmode=disable"), "no encryption"),
        (
            "a wrong password",
            url("wrong-Pw-77e1", "sslmode=require"),
            "password authentication failed",
        ),
    ] {
        let error = PostgresCheckpointStore::connect(&url).await.unwrap_err();
        let chain = error_chain(&error);
        assert_final_connect_error(&error, why);
        assert!(chain.contains(expected), "{why}: {chain}");
        assert_hidden(why, &format!("{chain} {error:?}"), SECRET);
        assert_hidden(why, &format!("{chain} {error:?}"), "wrong-Pw-77e1");
    }
}

/// No server needed: the store's Debug output never shows connection options.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debug_output_hides_credentials() {
    let options = support::connect_options_without_server(SECRET);
    let pool = PgPoolOptions::new().connect_lazy_with(options);
    let store = PostgresCheckpointStore::new(pool)
        .with_table("app.checkpoints")
        .unwrap();
    let shown = format!("{store:?} {store:#?}");
    assert!(!shown.contains(SECRET), "{shown}");
    assert!(shown.contains("app.checkpoints"), "{shown}");
}

/// A role with only the run-time privileges (SELECT, INSERT and UPDATE on the table, SELECT
/// on its tombstone table) does everything a subscription and a worker do, migrate() included
/// once the table exists; retire is refused for good, and a role without UPDATE cannot save
/// (the kit's SQL family).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runtime_privileges_are_all_a_subscription_needs() {
    security::the_runtime_privileges_are_all_a_subscription_needs(&support::Server).await;
}

/// The operator's privileges, as the crate doc states them: SELECT, INSERT, UPDATE, DELETE
/// on the table and SELECT, INSERT, DELETE on its tombstone table run every operation of
/// `CheckpointAdmin` (retire's LOCK TABLE is allowed by UPDATE or DELETE; the kit's SQL
/// family).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_privileges_run_every_admin_operation() {
    security::the_operator_privileges_run_every_admin_operation(&support::Server).await;
}

/// The run-time privileges on each of the store's tables, as the crate doc states them.
const RUNTIME_GRANTS: &[(&str, &str)] = &[
    ("", "SELECT, INSERT, UPDATE"),
    ("_retired", "SELECT"),
    ("_leases", "SELECT, INSERT, UPDATE"),
    ("_owners", "SELECT, INSERT, UPDATE"),
    ("_parked", "SELECT, INSERT, UPDATE, DELETE"),
];

/// The operator's privileges (the operations API and what a worker needs).
const OPERATOR_GRANTS: &[(&str, &str)] = &[
    ("", "SELECT, INSERT, UPDATE, DELETE"),
    ("_retired", "SELECT, INSERT, DELETE"),
    ("_leases", "SELECT, INSERT, UPDATE, DELETE"),
    ("_owners", "SELECT, INSERT, UPDATE, DELETE"),
];

/// Roles of the test's own for the kit's least-privilege cases.
impl LeastPrivilege<PostgresEngine> for support::Server {
    const RUNTIME_USER_MIGRATES: bool = true;

    fn unique_ident(&self, prefix: &str) -> String {
        support::unique_ident(prefix)
    }

    async fn create_user(&self, role: &str, password: &str, table: &str, grants: Grants) {
        let grants = match grants {
            Grants::Operator => OPERATOR_GRANTS,
            Grants::Runtime => RUNTIME_GRANTS,
            Grants::WithoutUpdate => &[("", "SELECT, INSERT"), ("_retired", "SELECT")],
        };
        let mut sql = format!("CREATE ROLE {role} LOGIN PASSWORD '{password}';");
        for (suffix, privileges) in grants {
            sql.push_str(&format!(
                " GRANT {privileges} ON \"{table}{suffix}\" TO {role};"
            ));
        }
        support::admin_sql(sql).await;
    }

    async fn connect_as(
        &self,
        role: &str,
        password: &str,
        table: &str,
    ) -> Result<PostgresCheckpointStore, Error> {
        let options = support::connect_options().username(role).password(password);
        PostgresCheckpointStore::connect_with(options)
            .await?
            .with_table(table)
    }

    fn retire_refusal(&self, table: &str) -> String {
        format!("permission denied for table {table}")
    }

    fn save_refusal(&self, table: &str) -> String {
        format!("permission denied for table {table}")
    }

    /// The superuser, whose password the test server does not check.
    async fn url_with_password(&self) -> (String, String) {
        let options = support::connect_options();
        let url = format!(
            "postgres://postgres:{SECRET}@{}:{}/{}",
            options.get_host(),
            options.get_port(),
            options.get_database().unwrap_or("postgres")
        );
        (url, SECRET.to_owned())
    }

    fn wrong_password_refusal(&self) -> Option<&'static str> {
        None
    }

    async fn drop_users_and_tables(&self, roles: &[&str], table: &str) {
        support::admin_sql(format!(
            "DROP TABLE \"{table}\", \"{table}_retired\", \"{table}_leases\", \"{table}_owners\", \
                 \"{table}_parked\"; \
             DROP ROLE {};",
            roles.join(", ")
        ))
        .await;
    }
}
