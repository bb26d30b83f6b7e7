//! Opening the store a [`Target`] names, through each backend crate's own constructors.
//!
//! The command never creates or changes a schema, a table or a database file: it works on
//! what the application's stores created (`migrate`, `create_table`). A SQLite path that does
//! not exist is an error, not a new empty database.

use std::io::ErrorKind;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use checkpoint_core::parked::ParkedStore;
use checkpoint_core::{CheckpointAdmin, Error, LeaseStore, Operation};
use checkpoint_dynamodb::DynamoDbCheckpointStore;
use checkpoint_postgres::{BACKEND as BACKEND_POSTGRES, PostgresCheckpointStore};
use checkpoint_redis::RedisCheckpointStore;
use checkpoint_sqlite::SqliteCheckpointStore;
use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection};

use crate::error::CliError;
use crate::target::Target;

/// The settings a store takes beside its URL.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// `--table`: PostgreSQL's and SQLite's table.
    pub table: Option<String>,
    /// `--key-prefix`: Redis's key prefix.
    pub key_prefix: Option<String>,
    /// `--timeout`: for connecting, and for each request.
    pub timeout: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            table: None,
            key_prefix: None,
            timeout: checkpoint_core::DEFAULT_TIMEOUT,
        }
    }
}

/// What the command needs of a store: the operations API, the leases and the parked entries.
/// Every store of the workspace has all three.
pub trait StoreApi: CheckpointAdmin + LeaseStore + ParkedStore {}

impl<T: CheckpointAdmin + LeaseStore + ParkedStore + ?Sized> StoreApi for T {}

/// A store of any backend, with the operations API, the leases and the parked entries.
pub type Store = Box<dyn StoreApi>;

/// Opens the store `target` names, with `settings`, within `settings.timeout`.
///
/// # Errors
///
/// A usage error for a setting the backend does not have or refuses, or an environment that
/// lacks what the backend needs (DynamoDB's region); a failure, whose message shows the target
/// without credentials, when the store cannot be reached in time.
pub async fn connect(target: &Target, settings: &Settings) -> Result<Store, CliError> {
    check_settings(target, settings)?;
    let context = format!("cannot connect to {}", target.display());
    if let Target::Sqlite(path) = target {
        check_sqlite_file(path, &context, STORE_NEVER_CREATED)?;
    }
    let connecting = open(target, settings);
    match tokio::time::timeout(settings.timeout, connecting).await {
        Ok(Ok(store)) => Ok(store),
        Ok(Err(error)) => Err(CliError::store(Some(&context), &error)),
        Err(_) => Err(CliError::failure(format!(
            "{context}: no answer within {}",
            seconds(settings.timeout)
        ))),
    }
}

/// `--table` and `--key-prefix` where the backend has them.
fn check_settings(target: &Target, settings: &Settings) -> Result<(), CliError> {
    let takes_table = matches!(target, Target::Postgres(_) | Target::Sqlite(_));
    let takes_prefix = matches!(target, Target::Redis(_) | Target::RedisCluster(_));
    if settings.table.is_some() && !takes_table {
        let hint = match target {
            Target::DynamoDb(_) => ": its table is in the URL, dynamodb://TABLE",
            _ => "",
        };
        return Err(CliError::usage(format!(
            "--table is for PostgreSQL and SQLite, not {}{hint}",
            target.backend()
        )));
    }
    let tls = match target {
        Target::Redis(url) => url.starts_with("rediss://"),
        Target::RedisCluster(urls) => urls.iter().any(|url| url.starts_with("rediss://")),
        _ => false,
    };
    if tls && !cfg!(feature = "tls") {
        return Err(CliError::usage(
            "rediss:// needs TLS, which this build leaves out: install with \
             `cargo install --path checkpoint-store-cli --features tls`",
        ));
    }
    if settings.key_prefix.is_some() && !takes_prefix {
        return Err(CliError::usage(format!(
            "--key-prefix is for Redis, not {}",
            target.backend()
        )));
    }
    Ok(())
}

/// What to do about a store's SQLite file that does not exist.
const STORE_NEVER_CREATED: &str = "the checkpoint command never creates a store: check the \
     path, or let the application create it (SqliteCheckpointStore::open, then migrate)";

/// A SQLite path that is not a database file, said plainly before connecting: SQLite itself
/// only answers that it is "unable to open database file". `never_created` says what to do
/// about a file that does not exist.
pub(crate) fn check_sqlite_file(
    path: &Path,
    context: &str,
    never_created: &str,
) -> Result<(), CliError> {
    match std::fs::metadata(path) {
        Err(error) if error.kind() == ErrorKind::NotFound => Err(CliError::failure(format!(
            "{context}: the file does not exist, and {never_created}"
        ))),
        Ok(metadata) if metadata.is_dir() => Err(CliError::failure(format!(
            "{context}: it is a directory, not a SQLite database file"
        ))),
        // Anything else (a directory on the way that cannot be read) the connection reports.
        _ => Ok(()),
    }
}

async fn open(target: &Target, settings: &Settings) -> Result<Store, Error> {
    let timeout = settings.timeout;
    let table = settings.table.as_deref();
    match target {
        Target::Postgres(url) => {
            let options = PgConnectOptions::from_str(url).map_err(|error| {
                Error::backend(BACKEND_POSTGRES, Operation::Connect, false, error)
            })?;
            probe_postgres(&options).await?;
            let mut store = PostgresCheckpointStore::connect_with(options)
                .await?
                .with_timeout(timeout)?;
            if let Some(table) = table {
                store = store.with_table(table)?;
            }
            Ok(Box::new(store))
        }
        Target::Sqlite(path) => {
            // An operator's typo must not create an empty database.
            let options = SqliteCheckpointStore::connect_options(path).create_if_missing(false);
            let mut store = SqliteCheckpointStore::open_with(options)
                .await?
                .with_timeout(timeout)?;
            if let Some(table) = table {
                store = store.with_table(table)?;
            }
            Ok(Box::new(store))
        }
        Target::Redis(url) => {
            let mut store = RedisCheckpointStore::connect(url)
                .await?
                .with_timeout(timeout)?;
            if let Some(prefix) = &settings.key_prefix {
                store = store.with_key_prefix(prefix.as_str())?;
            }
            Ok(Box::new(store))
        }
        Target::RedisCluster(urls) => {
            let mut store = RedisCheckpointStore::connect_cluster(urls)
                .await?
                .with_timeout(timeout)?;
            if let Some(prefix) = &settings.key_prefix {
                store = store.with_key_prefix(prefix.as_str())?;
            }
            Ok(Box::new(store))
        }
        Target::DynamoDb(table) => {
            let client = crate::aws::client().await?;
            let store = DynamoDbCheckpointStore::new(client)
                .with_table(table)?
                .with_timeout(timeout)?;
            Ok(Box::new(store))
        }
    }
}

/// One plain connection to PostgreSQL, closed at once, before a pool is used: the pool
/// retries a refused connection until its acquire timeout and then reports only that it timed
/// out; this one says why.
pub(crate) async fn probe_postgres(options: &PgConnectOptions) -> Result<(), Error> {
    let probe_failed = |error: sqlx::Error| {
        let retryable = matches!(error, sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut);
        Error::backend(BACKEND_POSTGRES, Operation::Connect, retryable, error)
    };
    PgConnection::connect_with(options)
        .await
        .map_err(probe_failed)?
        .close()
        .await
        .map_err(probe_failed)
}

/// `5s`, `0.5s`.
pub fn seconds(duration: Duration) -> String {
    format!("{}s", duration.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(table: Option<&str>, key_prefix: Option<&str>) -> Settings {
        Settings {
            table: table.map(str::to_owned),
            key_prefix: key_prefix.map(str::to_owned),
            ..Settings::default()
        }
    }

    #[test]
    fn each_setting_belongs_to_its_backends() {
        let postgres = Target::Postgres("postgres://h/db".into());
        let redis = Target::Redis("redis://h".into());
        let dynamodb = Target::DynamoDb("t".into());
        assert!(check_settings(&postgres, &settings(Some("app.cp"), None)).is_ok());
        assert!(check_settings(&redis, &settings(None, Some("cp"))).is_ok());
        for (target, settings) in [
            (&redis, settings(Some("t"), None)),
            (&dynamodb, settings(Some("t"), None)),
            (&postgres, settings(None, Some("cp"))),
        ] {
            let error = check_settings(target, &settings).unwrap_err();
            assert_eq!(error.exit().code(), 2, "{}", error.message());
        }
    }

    #[tokio::test]
    async fn a_missing_sqlite_file_is_an_error_not_a_new_database() {
        let path = std::env::temp_dir().join(format!(
            "checkpoint-store-cli-missing-{}.db",
            std::process::id()
        ));
        let target = Target::Sqlite(path.clone());
        let error = connect(&target, &Settings::default()).await.err().unwrap();
        assert_eq!(error.exit().code(), 1, "{}", error.message());
        assert!(
            error.message().starts_with("cannot connect to sqlite:"),
            "{}",
            error.message()
        );
        assert!(
            error
                .message()
                .contains("the file does not exist, and the checkpoint command never creates"),
            "{}",
            error.message()
        );
        assert!(!path.exists());
    }

    #[tokio::test]
    async fn a_directory_is_not_a_sqlite_database() {
        let target = Target::Sqlite(std::env::temp_dir());
        let error = connect(&target, &Settings::default()).await.err().unwrap();
        assert_eq!(error.exit().code(), 1, "{}", error.message());
        assert!(
            error
                .message()
                .ends_with("it is a directory, not a SQLite database file"),
            "{}",
            error.message()
        );
    }
}
