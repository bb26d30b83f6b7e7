//! Security: passwords never shown by the store's Debug output or by its errors, TLS, and the
//! least privilege the store needs at run time.
//!
//! The run-time privileges (the crate doc's "Privileges") are tested here with every operation,
//! and the whole conformance kit runs under such a user in `kit::runtime_role` (the lease
//! kit's retires and purges by an operator beside it).
//!
//! The machine's MariaDB has TLS turned off (`have_ssl` is `DISABLED`): there, a URL that
//! requires TLS fails to connect rather than connecting in plain text. TLS itself is tested on
//! a server of the test's own with a certificate of its own, and needs the crate's
//! `tls-rustls` feature (sqlx's TLS is chosen at compile time; turned on for the workspace run,
//! it would put every MySQL session of the suite on TLS):
//!
//! ```text
//! cargo test -p checkpoint-mysql --features tls-rustls --test integration -- security
//! ```
//!
//! Without the feature, that test is not compiled; the refusal of plain text runs either way.

#[cfg(feature = "tls-rustls")]
use std::time::Duration;

use checkpoint_conformance::error_chain;
#[cfg(feature = "tls-rustls")]
use checkpoint_conformance::fresh_group;
use checkpoint_conformance::harness::RuntimeWorker;
use checkpoint_conformance::sql_family::security::{self, Grants, LeastPrivilege};
#[cfg(feature = "tls-rustls")]
use checkpoint_core::CheckpointStore;
#[cfg(feature = "tls-rustls")]
use checkpoint_core::LeaseStore;
use checkpoint_core::{Error, Operation};
use checkpoint_mysql::{MysqlCheckpointStore, MysqlEngine};
use sqlx::mysql::MySqlPoolOptions;
use tokio::sync::OnceCell;

use crate::support;

const SECRET: &str = "s3cr3t-Pw-0c4d9e";

/// The user [`runtime_role_store`] connects as.
const RUNTIME_USER: &str = "checkpoint_runtime";

/// The run-time privileges on each of the store's tables, as the crate doc states them.
pub const RUNTIME_GRANTS: [(&str, &str); 5] = [
    ("", "SELECT, INSERT, UPDATE"),
    ("_retired", "SELECT"),
    ("_leases", "SELECT, INSERT, UPDATE"),
    ("_lease_owners", "SELECT, INSERT, UPDATE, DELETE"),
    ("_parked", "SELECT, INSERT, UPDATE, DELETE"),
];

/// Every procedure `migrate` creates, as `<table>_<operation>_v1`: the operator may run
/// (`EXECUTE`) all of them, as the crate doc states.
pub const PROCEDURES: [&str; 7] = [
    "acquire", "renew", "release", "leave", "handover", "leases", "groups",
];

/// The procedures the run-time user may run: the lease operations' (all but `groups`).
pub const RUNTIME_PROCEDURES: &[&str] = PROCEDURES.split_at(6).0;

/// The operator's privileges (the operations API) beyond the run-time ones.
const OPERATOR_GRANTS: [(&str, &str); 5] = [
    ("", "SELECT, INSERT, UPDATE, DELETE"),
    ("_retired", "SELECT, INSERT, UPDATE, DELETE"),
    ("_leases", "SELECT, INSERT, UPDATE, DELETE"),
    ("_lease_owners", "SELECT, INSERT, UPDATE, DELETE"),
    ("_parked", "SELECT, INSERT, UPDATE, DELETE"),
];

/// The statements that create `user` with exactly `grants` on the tables of `table` and
/// `EXECUTE` on its `procedures`.
pub fn user_with(
    user: &str,
    password: &str,
    table: &str,
    (grants, procedures): (&[(&str, &str)], &[&str]),
) -> Vec<String> {
    let mut statements = vec![
        format!("DROP USER IF EXISTS '{user}'@'%'"),
        format!("CREATE USER '{user}'@'%' IDENTIFIED BY '{password}'"),
    ];
    for (suffix, privileges) in grants {
        statements.push(format!(
            "GRANT {privileges} ON `{table}{suffix}` TO '{user}'@'%'"
        ));
    }
    for operation in procedures {
        statements.push(format!(
            "GRANT EXECUTE ON PROCEDURE `{table}_{operation}_v1` TO '{user}'@'%'"
        ));
    }
    statements
}

/// A store on the default table whose user has only the run-time privileges: the factory of
/// `kit::runtime_role`. The tables and the user are made by the administrator once per test
/// binary (the tests run in parallel, and a user dropped and made again under a running test
/// would fail it).
pub async fn runtime_role_store() -> MysqlCheckpointStore {
    static READY: OnceCell<()> = OnceCell::const_new();
    READY
        .get_or_init(|| async {
            support::store().await;
            support::admin_sql(&user_with(
                RUNTIME_USER,
                SECRET,
                "checkpoints",
                (&RUNTIME_GRANTS, RUNTIME_PROCEDURES),
            ))
            .await;
        })
        .await;
    let options = support::connect_options()
        .username(RUNTIME_USER)
        .password(SECRET);
    let store = MysqlCheckpointStore::connect_with(options)
        .await
        .unwrap_or_else(|error| panic!("connecting as {RUNTIME_USER}: {}", error_chain(&error)));
    // Nothing beyond these privileges: the user's grants, as the server reports them.
    let grants: Vec<String> = sqlx::query_scalar("SHOW GRANTS")
        .fetch_all(store.pool())
        .await
        .unwrap();
    assert_eq!(
        grants.len(),
        1 + RUNTIME_GRANTS.len() + RUNTIME_PROCEDURES.len(),
        "{grants:#?}"
    );
    assert!(grants[0].starts_with("GRANT USAGE ON *.*"), "{grants:#?}");
    let tables = RUNTIME_GRANTS.iter().map(|(suffix, privileges)| {
        (
            format!("GRANT {privileges} ON "),
            format!("`checkpoints{suffix}`"),
        )
    });
    let procedures = RUNTIME_PROCEDURES.iter().map(|operation| {
        let grant = "GRANT EXECUTE ON PROCEDURE ".to_owned();
        (grant, format!("`checkpoints_{operation}_v1`"))
    });
    for (grant, object) in tables.chain(procedures) {
        assert!(
            grants
                .iter()
                .any(|shown| shown.starts_with(&grant) && shown.contains(&object)),
            "{grant}{object}: {grants:#?}"
        );
    }
    store
}

/// A worker under the run-time role beside an operator: the factory of
/// `kit::runtime_role::leases`. Every lease operation runs under the run-time role; `retire`
/// and `purge`, which the lease cases also call, are an operator's, as in a deployment (the
/// run-time role may not run them: see `the_runtime_privileges_are_all_a_subscription_needs`).
pub async fn runtime_role_worker() -> RuntimeWorker<MysqlCheckpointStore> {
    RuntimeWorker::new(runtime_role_store().await, support::store().await)
}

/// A store connected with a password in its URL: its Debug output, its pool's and its errors
/// (a wrong password's among them) never show it (the kit's SQL family).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connected_store_never_shows_its_password() {
    security::a_connected_store_never_shows_its_password(&support::Server).await;
}

/// A store over a pool of its own, made without a server: its Debug output hides the
/// password the pool's options carry.
#[tokio::test]
async fn debug_output_hides_credentials() {
    let options = support::connect_options().password(SECRET);
    let store = MysqlCheckpointStore::new(MySqlPoolOptions::new().connect_lazy_with(options))
        .with_table("app_checkpoints")
        .unwrap();
    let shown = format!("{store:?} {store:#?}");
    assert!(!shown.contains(SECRET), "{shown}");
    assert!(shown.contains("app_checkpoints"), "{shown}");
}

/// A URL that requires TLS, to a server without it: the connection is refused, never made in
/// plain text (with or without the `tls-rustls` feature).
#[tokio::test]
async fn a_url_requiring_tls_never_connects_in_plain_text() {
    let options = support::connect_options();
    let url = format!(
        "mysql://root@{}:{}/{}?ssl-mode=required",
        options.get_host(),
        options.get_port(),
        options.get_database().unwrap_or("test")
    );
    let error = MysqlCheckpointStore::connect(&url).await.unwrap_err();
    assert!(
        matches!(
            error,
            Error::Backend {
                operation: Operation::Connect,
                ..
            }
        ),
        "{error:?}"
    );
}

/// Runs `openssl` with `args` (split at spaces) in `dir`; panics with its output when it fails.
#[cfg(feature = "tls-rustls")]
async fn openssl(dir: &std::path::Path, args: &str) {
    let output = tokio::process::Command::new("openssl")
        .args(args.split(' '))
        .current_dir(dir)
        .output()
        .await
        .unwrap_or_else(|error| panic!("cannot run openssl (install it): {error}"));
    assert!(
        output.status.success(),
        "openssl {args}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A folder removed on drop, whether the test passed or not.
#[cfg(feature = "tls-rustls")]
struct Folder(std::path::PathBuf);

#[cfg(feature = "tls-rustls")]
impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A MariaDB server of the test's own with a certificate for 127.0.0.1 and localhost from a CA
/// of the test's own, that refuses connections without TLS (`--require-secure-transport`).
/// With `ssl-mode=verify_identity` and `verify_ca` against that CA, the store connects, saves,
/// loads and leases, and its session is encrypted (`Ssl_cipher`); against another CA (of the
/// same name, its own key) both modes refuse the server; `verify_identity` refuses a server
/// name the certificate does not name, which `verify_ca` accepts; without TLS the server
/// refuses the client.
#[cfg(feature = "tls-rustls")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_through_rustls_on_a_server_of_our_own() {
    use crate::support::own_server::OwnMariadb;

    let tls = Folder(std::path::PathBuf::from("/tmp").join(support::unique_ident("cp_tls")));
    let dir = tls.0.as_path();
    make_certificates(dir).await;
    let ca = dir.join("ca.pem");
    let other_ca = dir.join("other-ca.pem");
    let server = OwnMariadb::start_with(&[
        format!("--ssl-ca={}", ca.display()),
        format!("--ssl-cert={}", dir.join("server.pem").display()),
        format!("--ssl-key={}", dir.join("server.key").display()),
        "--require-secure-transport=ON".to_owned(),
    ])
    .await;
    let port = server.options().get_port();
    let url = |query: &str| format!("mysql://root@127.0.0.1:{port}/test?{query}");

    for query in [
        format!("ssl-mode=verify_identity&ssl-ca={}", ca.display()),
        format!("ssl-mode=verify_ca&ssl-ca={}", ca.display()),
        // verify_ca checks the chain, not the name.
        format!(
            "ssl-mode=verify_ca&ssl-ca={}&tls-sni-servername=elsewhere.invalid",
            ca.display()
        ),
    ] {
        assert_an_encrypted_store_works(&query, &url(&query)).await;
    }

    assert_tls_refusals(url, &ca, &other_ca).await;
}

/// In `dir`: two CAs of one name, `ca` and `other-ca`, and a certificate for 127.0.0.1 and
/// localhost signed by `ca`, `server.pem` with its key `server.key`.
#[cfg(feature = "tls-rustls")]
async fn make_certificates(dir: &std::path::Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n\
         keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    // Two CAs of one name: only the first one's key signs the server's certificate.
    for ca in ["ca", "other-ca"] {
        openssl(
            dir,
            &format!(
                "req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
                 -subj /CN=checkpoint-test-ca -keyout {ca}.key -out {ca}.pem"
            ),
        )
        .await;
    }
    openssl(
        dir,
        "req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
         -subj /CN=127.0.0.1 -keyout server.key -out server.csr",
    )
    .await;
    openssl(
        dir,
        "x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
         -extfile server.ext -out server.pem",
    )
    .await;
}

/// A store connected to `url` (made of `query`) saves, loads and leases, and its session is
/// encrypted.
#[cfg(feature = "tls-rustls")]
async fn assert_an_encrypted_store_works(query: &str, url: &str) {
    let store = MysqlCheckpointStore::connect(url)
        .await
        .unwrap_or_else(|error| panic!("{query}: {}", error_chain(&error)));
    store
        .migrate()
        .await
        .unwrap_or_else(|error| panic!("{query}: migrate: {}", error_chain(&error)));
    let group = fresh_group("tls");
    store.save(&group, "s", 0, 7).await.unwrap();
    assert_eq!(
        store.load(&group, "s", 0).await.unwrap(),
        Some(7),
        "{query}"
    );
    let acquired = store
        .acquire(&group, "s", "w", &[0], Duration::from_secs(5))
        .await
        .unwrap_or_else(|error| panic!("{query}: acquire: {}", error_chain(&error)));
    assert_eq!(acquired.granted.len(), 1, "{query}: {acquired:?}");
    let status: Vec<(String, String)> =
        sqlx::query_as("SHOW SESSION STATUS WHERE Variable_name IN ('Ssl_cipher', 'Ssl_version')")
            .fetch_all(store.pool())
            .await
            .unwrap();
    let value = |name: &str| {
        status
            .iter()
            .find(|(variable, _)| variable == name)
            .map(|(_, value)| value.clone())
            .unwrap_or_default()
    };
    assert!(
        !value("Ssl_cipher").is_empty(),
        "{query}: the session is not encrypted: {status:?}"
    );
    eprintln!(
        "{query}: encrypted with {} ({})",
        value("Ssl_version"),
        value("Ssl_cipher")
    );
    store.pool().close().await;
}

/// Against `other_ca`, under a name the certificate does not name, and in plain text, the
/// server of `url` is refused, or refuses.
#[cfg(feature = "tls-rustls")]
async fn assert_tls_refusals(
    url: impl Fn(&str) -> String,
    ca: &std::path::Path,
    other_ca: &std::path::Path,
) {
    // Refusals, each a connect error that retrying cannot help: sqlx reports a certificate
    // that fails verification as an I/O error of kind `InvalidData`, which the store reads as
    // final (a retry meets the same certificate), and the server's refusal is final too.
    for (why, query, expected) in [
        (
            "verify_identity against another CA",
            format!("ssl-mode=verify_identity&ssl-ca={}", other_ca.display()),
            "invalid peer certificate",
        ),
        (
            "verify_ca against another CA",
            format!("ssl-mode=verify_ca&ssl-ca={}", other_ca.display()),
            "invalid peer certificate",
        ),
        (
            "verify_identity with a name the certificate does not name",
            format!(
                "ssl-mode=verify_identity&ssl-ca={}&tls-sni-servername=elsewhere.invalid",
                ca.display()
            ),
            "not valid for name",
        ),
        (
            "no TLS",
            "ssl-mode=disabled".to_owned(),
            // MariaDB 10.11 refuses plain text as it does a wrong password; the same user
            // connected over TLS above.
            "Access denied",
        ),
    ] {
        let error = MysqlCheckpointStore::connect(&url(&query))
            .await
            .unwrap_err();
        let chain = error_chain(&error);
        eprintln!("{why}: {chain}");
        assert!(!error.is_retryable(), "{why}: {error:?}");
        assert!(
            matches!(
                error,
                Error::Backend {
                    operation: Operation::Connect,
                    ..
                }
            ),
            "{why}: {error:?}"
        );
        assert!(chain.contains(expected), "{why}: {chain}");
    }
}

/// A user with only the run-time privileges does everything a subscription and a worker do;
/// migrate (which checks CREATE) and the operations API are refused for good (not
/// retryable), and a user without UPDATE cannot save (the kit's SQL family).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runtime_privileges_are_all_a_subscription_needs() {
    security::the_runtime_privileges_are_all_a_subscription_needs(&support::Server).await;
}

/// The operator's privileges, as the crate doc states them, run every operation of
/// `CheckpointAdmin` (the kit's SQL family).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_privileges_run_every_admin_operation() {
    security::the_operator_privileges_run_every_admin_operation(&support::Server).await;
}

/// Users of the test's own for the kit's least-privilege cases: `OPERATOR_GRANTS`,
/// `RUNTIME_GRANTS`.
impl LeastPrivilege<MysqlEngine> for support::Server {
    const RUNTIME_USER_MIGRATES: bool = false;

    fn unique_ident(&self, prefix: &str) -> String {
        support::unique_ident(prefix)
    }

    async fn create_user(&self, user: &str, password: &str, table: &str, grants: Grants) {
        let grants: (&[(&str, &str)], &[&str]) = match grants {
            Grants::Operator => (&OPERATOR_GRANTS, &PROCEDURES),
            Grants::Runtime => (&RUNTIME_GRANTS, RUNTIME_PROCEDURES),
            Grants::WithoutUpdate => (&[("", "SELECT, INSERT"), ("_retired", "SELECT")], &[]),
        };
        support::admin_sql(&user_with(user, password, table, grants)).await;
    }

    async fn connect_as(
        &self,
        user: &str,
        password: &str,
        table: &str,
    ) -> Result<MysqlCheckpointStore, Error> {
        let options = support::connect_options().username(user).password(password);
        MysqlCheckpointStore::connect_with(options)
            .await?
            .with_table(table)
    }

    fn retire_refusal(&self, _table: &str) -> String {
        "command denied".to_owned()
    }

    fn save_refusal(&self, _table: &str) -> String {
        "UPDATE command denied".to_owned()
    }

    /// The run-time user of [`runtime_role_store`].
    async fn url_with_password(&self) -> (String, String) {
        runtime_role_store().await.pool().close().await;
        let options = support::connect_options();
        let url = format!(
            "mysql://{RUNTIME_USER}:{SECRET}@{}:{}/{}",
            options.get_host(),
            options.get_port(),
            options.get_database().unwrap_or("test")
        );
        (url, SECRET.to_owned())
    }

    fn wrong_password_refusal(&self) -> Option<&'static str> {
        Some("Access denied")
    }

    async fn drop_users_and_tables(&self, users: &[&str], table: &str) {
        let mut cleanup: Vec<String> = users
            .iter()
            .map(|user| format!("DROP USER '{user}'@'%'"))
            .collect();
        for suffix in ["", "_retired", "_leases", "_lease_owners", "_parked"] {
            cleanup.push(format!("DROP TABLE `{table}{suffix}`"));
        }
        let procedures = PROCEDURES.iter();
        cleanup.extend(procedures.map(|name| format!("DROP PROCEDURE `{table}_{name}_v1`")));
        support::admin_sql(&cleanup).await;
    }
}
