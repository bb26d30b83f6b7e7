//! Running the built `checkpoint` binary, and the stores the tests prepare for it.
//!
//! Each backend's server comes from its environment variable, read at run time:
//! `DATABASE_URL`, `MYSQL_URL`, `REDIS_URL`, `REDIS_CLUSTER_URLS` (comma-separated) and
//! `DYNAMODB_ENDPOINT`, as `scripts/test.sh` sets them; SQLite uses a file in a temporary
//! directory. A test whose variable is not set fails and names it: it never passes without its
//! server.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use checkpoint_dynamodb::DynamoDbCheckpointStore;
use checkpoint_mysql::MysqlCheckpointStore;
use checkpoint_postgres::PostgresCheckpointStore;
use checkpoint_sqlite::SqliteCheckpointStore;
use checkpoint_store_cli::connect::{Settings, Store, connect};
use checkpoint_store_cli::target::Target;

pub use checkpoint_conformance::fresh_group;

/// The DynamoDB secret key the tests give the command, to check it is never printed.
pub const AWS_SECRET: &str = "aws-secret-never-printed";

/// What a run of the command left.
#[derive(Debug)]
pub struct Output {
    /// The exit code (`None` if killed by a signal).
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// How long it ran.
    pub elapsed: Duration,
}

impl Output {
    /// Asserts exit code 0 and an empty standard error; returns standard output.
    #[track_caller]
    pub fn ok(&self) -> &str {
        assert_eq!(self.code, Some(0), "{self:#?}");
        assert_eq!(self.stderr, "", "{self:#?}");
        &self.stdout
    }

    /// Asserts exit code `code` and exactly one `error: ` line on standard error; returns it
    /// (without its newline).
    #[track_caller]
    pub fn error(&self, code: i32) -> &str {
        assert_eq!(self.code, Some(code), "{self:#?}");
        assert!(
            self.stderr.starts_with("error: ") && self.stderr.ends_with('\n'),
            "{self:#?}"
        );
        assert_eq!(self.stderr.lines().count(), 1, "{self:#?}");
        self.stderr.trim_end()
    }

    /// Standard output parsed as JSON.
    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|error| panic!("not JSON ({error}): {self:#?}"))
    }

    /// Whether `text` appears anywhere in what the command printed.
    pub fn printed(&self, text: &str) -> bool {
        self.stdout.contains(text) || self.stderr.contains(text)
    }
}

/// Runs `checkpoint` with `args` and the environment `env` (on top of this process's, less
/// `CHECKPOINT_URL` and the AWS variables), standard input closed.
pub fn cli(args: &[&str], env: &[(String, String)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_checkpoint"));
    command
        .args(args)
        .env_remove("CHECKPOINT_URL")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (name, _) in std::env::vars() {
        if name.starts_with("AWS_") {
            command.env_remove(name);
        }
    }
    for (name, value) in env {
        command.env(name, value);
    }
    let started = Instant::now();
    let output = command.output().expect("the checkpoint binary runs");
    Output {
        code: output.status.code(),
        stdout: String::from_utf8(output.stdout).expect("UTF-8 output"),
        stderr: String::from_utf8(output.stderr).expect("UTF-8 errors"),
        elapsed: started.elapsed(),
    }
}

/// The value of `var`; panics naming it when it is not set.
pub fn required(var: &str) -> String {
    match std::env::var(var) {
        Ok(value) if !value.trim().is_empty() => value.trim().to_owned(),
        _ => panic!(
            "{var} is not set: these tests run the command against a real server (scripts/test.sh \
             starts every server and sets {var})"
        ),
    }
}

/// The backends of the workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// `DATABASE_URL`.
    Postgres,
    /// `MYSQL_URL`.
    Mysql,
    /// A file in a temporary directory.
    Sqlite,
    /// `REDIS_URL`.
    Redis,
    /// `REDIS_CLUSTER_URLS`.
    RedisCluster,
    /// `DYNAMODB_ENDPOINT`, a table of the test's own.
    DynamoDb,
}

/// A store ready for the command: the `--url` arguments and environment that reach it, and
/// the same store opened in the test.
pub struct Fixture {
    /// `--url VALUE` for the command.
    pub url: String,
    /// The environment the command needs (DynamoDB's).
    pub env: Vec<(String, String)>,
    /// The store, opened in this process: checkpoints, operations and leases.
    pub store: Store,
    /// A temporary directory removed on drop (SQLite).
    _dir: Option<TempDir>,
}

impl Fixture {
    /// Prepares `backend`: its table or file created, as an application would have done.
    pub async fn new(backend: Backend) -> Self {
        let mut dir = None;
        let mut env = Vec::new();
        let url = match backend {
            Backend::Postgres => {
                let url = required("DATABASE_URL");
                let store = PostgresCheckpointStore::connect(&url)
                    .await
                    .expect("DATABASE_URL reachable");
                store.migrate().await.expect("migrate");
                url
            }
            Backend::Mysql => {
                let url = required("MYSQL_URL");
                let store = MysqlCheckpointStore::connect(&url)
                    .await
                    .expect("MYSQL_URL reachable");
                store.migrate().await.expect("migrate");
                store.pool().close().await;
                url
            }
            Backend::Sqlite => {
                let temp = TempDir::new();
                let path = temp.0.join("checkpoints.db");
                let store = SqliteCheckpointStore::open(&path).await.expect("open");
                store.migrate().await.expect("migrate");
                store.pool().close().await;
                dir = Some(temp);
                format!("sqlite:{}", path.display())
            }
            Backend::Redis => required("REDIS_URL"),
            Backend::RedisCluster => required("REDIS_CLUSTER_URLS"),
            Backend::DynamoDb => {
                let endpoint = required("DYNAMODB_ENDPOINT");
                let table = fresh_group("cli").replace('-', "_");
                let store = DynamoDbCheckpointStore::new(dynamodb_client(&endpoint))
                    .with_table(&table)
                    .expect("table name")
                    .without_timeout();
                store.create_table().await.expect("create the table");
                env = dynamodb_env(&endpoint);
                let store: Store = Box::new(store);
                return Self {
                    url: format!("dynamodb://{table}"),
                    env,
                    store,
                    _dir: None,
                };
            }
        };
        let target = Target::parse(&[url.as_str()]).expect("a valid URL");
        let settings = Settings {
            timeout: Duration::from_secs(30),
            ..Settings::default()
        };
        let store = connect(&target, &settings)
            .await
            .unwrap_or_else(|error| panic!("{backend:?}: {}", error.message()));
        Self {
            url,
            env,
            store,
            _dir: dir,
        }
    }

    /// Runs the command on this store: `--url` first, then `args`.
    pub fn cli(&self, args: &[&str]) -> Output {
        let mut all = vec!["--url", self.url.as_str()];
        all.extend_from_slice(args);
        cli(&all, &self.env)
    }
}

/// The environment that points the command at the DynamoDB-compatible server `endpoint`.
pub fn dynamodb_env(endpoint: &str) -> Vec<(String, String)> {
    [
        ("AWS_ENDPOINT_URL_DYNAMODB", endpoint),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", AWS_SECRET),
        ("AWS_EC2_METADATA_DISABLED", "true"),
        ("AWS_CONFIG_FILE", "/nonexistent/aws-config"),
        (
            "AWS_SHARED_CREDENTIALS_FILE",
            "/nonexistent/aws-credentials",
        ),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_owned(), value.to_owned()))
    .collect()
}

fn dynamodb_client(endpoint: &str) -> aws_sdk_dynamodb::Client {
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", AWS_SECRET, None, None, "tests"))
        .build();
    aws_sdk_dynamodb::Client::from_conf(config)
}

/// A directory of the test's own, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// A new empty directory.
    pub fn new() -> Self {
        let path = std::env::temp_dir().join(fresh_group("checkpoint-store-cli"));
        std::fs::create_dir_all(&path).expect("a temporary directory");
        Self(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
