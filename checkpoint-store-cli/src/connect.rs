//! Opening the store a [`Target`] names, through `checkpoint-connect` (the same opening every
//! program of the workspace uses), with the command's messages.
//!
//! The command never creates or changes a schema, a table or a database file: it works on
//! what the application's stores created (`migrate`, `create_table`). A SQLite path that does
//! not exist is an error, not a new empty database.

use std::io::ErrorKind;
use std::path::Path;
use std::time::Duration;

use checkpoint_connect::{ACCEPTED_URLS, ConnectError, Options, UrlError};

use crate::error::CliError;
use crate::target::Target;

pub use checkpoint_connect::postgres::probe as probe_postgres;

/// The settings a store takes beside its URL.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// `--table`: PostgreSQL's, MySQL's and SQLite's table.
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

/// What the command needs of a store: every operation a store of the workspace has.
pub use checkpoint_connect::Store as StoreApi;

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
    let context = format!("cannot connect to {}", target.display());
    let mut options = Options::new().timeout(settings.timeout);
    options.table.clone_from(&settings.table);
    options.key_prefix.clone_from(&settings.key_prefix);
    options
        .check_for(target)
        .map_err(|error| connect_error(target, &context, error))?;
    if let Target::Sqlite(path) = target {
        check_sqlite_file(path, &context, STORE_NEVER_CREATED)?;
    }
    checkpoint_connect::open(target, &options)
        .await
        .map_err(|error| connect_error(target, &context, error))
}

/// `error` in the command's words: what the operator can change is a usage error.
fn connect_error(target: &Target, context: &str, error: ConnectError) -> CliError {
    match error {
        ConnectError::NotBuilt { feature: "tls", .. } => CliError::usage(
            "rediss:// needs TLS, which this build leaves out: install with \
             `cargo install --path checkpoint-store-cli --features tls`",
        ),
        ConnectError::Setting {
            setting, backends, ..
        } => {
            let hint = match (setting, target) {
                ("table", Target::DynamoDb(_)) => ": its table is in the URL, dynamodb://TABLE",
                _ => "",
            };
            let option = setting.replace('_', "-");
            CliError::usage(format!(
                "--{option} is for {backends}, not {}{hint}",
                target.backend()
            ))
        }
        ConnectError::Timeout(timeout) => {
            CliError::failure(format!("{context}: no answer within {}", seconds(timeout)))
        }
        ConnectError::Store(error) => CliError::store(Some(context), &error),
        ConnectError::Url(error) => CliError::from(error),
        // Every backend is built into the command.
        other => CliError::failure(format!("{context}: {other}")),
    }
}

impl From<UrlError> for CliError {
    fn from(error: UrlError) -> Self {
        match error {
            UrlError::Missing => CliError::usage(format!(
                "no store URL: give --url (or set CHECKPOINT_URL): {ACCEPTED_URLS}"
            )),
            other => CliError::usage(other.to_string()),
        }
    }
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

/// `5s`, `0.5s`.
pub fn seconds(duration: Duration) -> String {
    format!("{}s", duration.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn each_setting_belongs_to_its_backends_before_anything_is_sent() {
        let settings = |table: Option<&str>, key_prefix: Option<&str>| Settings {
            table: table.map(str::to_owned),
            key_prefix: key_prefix.map(str::to_owned),
            ..Settings::default()
        };
        let dynamodb = Target::DynamoDb("t".into());
        let redis = Target::Redis("redis://127.0.0.1:1".into());
        let postgres = Target::Postgres("postgres://127.0.0.1:1/db".into());
        let mysql = Target::Mysql("mysql://127.0.0.1:1/db".into());
        for (target, settings, message) in [
            (
                &dynamodb,
                settings(Some("t"), None),
                "--table is for PostgreSQL, MySQL and SQLite, not dynamodb: its table is in the \
                 URL, dynamodb://TABLE",
            ),
            (
                &mysql,
                settings(None, Some("cp")),
                "--key-prefix is for Redis, not mysql",
            ),
            (
                &dynamodb,
                settings(None, Some("cp")),
                "--key-prefix is for Redis, not dynamodb",
            ),
            (
                &redis,
                settings(Some("t"), None),
                "--table is for PostgreSQL, MySQL and SQLite, not redis",
            ),
            (
                &postgres,
                settings(None, Some("cp")),
                "--key-prefix is for Redis, not postgres",
            ),
        ] {
            let error = connect(target, &settings).await.err().unwrap();
            assert_eq!(error.exit().code(), 2, "{}", error.message());
            assert_eq!(error.message(), message);
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
