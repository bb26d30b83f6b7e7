//! The log `status --source` reads each partition's head from, for lag: which log a URL names
//! ([`SourceTarget`]), the log with its settings checked before any request ([`SourceSpec`]),
//! opening it ([`SourceSpec::open`], in `open`) and reading the heads ([`read_heads`]).
//!
//! | URL | log | build |
//! | --- | --- | --- |
//! | `sqlite:PATH` (also `sqlite://PATH`) | the event table of `checkpoint-source-sqlite` in that file, which must exist | always |
//! | `postgres://…`, `postgresql://…` | the event table of `checkpoint-source-postgres` | always |
//! | `nats://…` | the JetStream stream of `checkpoint-source-nats` (`--source-stream`) | feature `source-nats` |
//! | `kafka://HOST:PORT[,HOST:PORT…]/TOPIC` | the topic of `checkpoint-source-kafka` | feature `source-kafka` |
//!
//! The command reads a log, never creates or changes one.

mod heads;
#[cfg(feature = "source-kafka")]
mod kafka;
#[cfg(feature = "source-nats")]
mod nats;
mod open;

use std::path::PathBuf;
use std::time::Duration;

pub use heads::{fallback_partitions, read_heads};
pub use open::SourceSpec;

use crate::error::CliError;
use crate::redact;
use crate::target::{check_parses, scheme_for_message, sqlite_path};

/// The log a `--source` URL names.
#[derive(Clone, PartialEq, Eq)]
pub enum SourceTarget {
    /// The SQLite database file at this path.
    Sqlite(PathBuf),
    /// PostgreSQL at this URL.
    Postgres(String),
    /// A NATS server at this URL.
    Nats(String),
    /// A Kafka topic: `kafka://HOST:PORT[,HOST:PORT…]/TOPIC`, without user information.
    Kafka(String),
}

/// What `--source` accepts, for messages.
const EXPECTED: &str = "sqlite:PATH, postgres://…, postgresql://…, nats://… or kafka://…";

/// What a build without the `source-nats` feature says of a `nats://` URL.
const NATS_NOT_BUILT: &str = "a nats:// source needs the command's `source-nats` feature, which \
     this build leaves out: install with `cargo install --path checkpoint-store-cli --features \
     source-nats`";

/// What a build without the `source-kafka` feature says of a `kafka://` URL.
const KAFKA_NOT_BUILT: &str = "a kafka:// source needs the command's `source-kafka` feature, \
     which this build leaves out: install with `cargo install --path checkpoint-store-cli \
     --features source-kafka`";

impl SourceTarget {
    /// The log `url` names.
    ///
    /// # Errors
    ///
    /// A usage error for an unknown scheme, a malformed URL (which it never shows), or
    /// `nats://` or `kafka://` in a build without its feature (naming the feature).
    pub fn parse(url: &str) -> Result<Self, CliError> {
        let url = url.trim();
        if let Some(path) = url.strip_prefix("sqlite:") {
            return Ok(SourceTarget::Sqlite(sqlite_path(path)?));
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            check_parses(url)?;
            return Ok(SourceTarget::Postgres(url.to_owned()));
        }
        if url.starts_with("nats://") {
            if !cfg!(feature = "source-nats") {
                return Err(CliError::usage(NATS_NOT_BUILT));
            }
            check_parses(url)?;
            return Ok(SourceTarget::Nats(url.to_owned()));
        }
        if let Some(rest) = url.strip_prefix("kafka://") {
            if !cfg!(feature = "source-kafka") {
                return Err(CliError::usage(KAFKA_NOT_BUILT));
            }
            // The source connects without authentication: a user name or password here would
            // only end up in messages (and several brokers are no URL `check_parses` takes).
            if rest
                .split(['/', '?'])
                .next()
                .is_some_and(|a| a.contains('@'))
            {
                return Err(CliError::usage(
                    "a kafka:// source has no user information: \
                     kafka://HOST:PORT[,HOST:PORT]/TOPIC (the source connects without SASL)",
                ));
            }
            return Ok(SourceTarget::Kafka(url.to_owned()));
        }
        Err(CliError::usage(format!(
            "unsupported source URL {}: expected {EXPECTED}",
            scheme_for_message(url)
        )))
    }

    /// The backend's name, as in its source crate's errors.
    pub fn backend(&self) -> &'static str {
        match self {
            SourceTarget::Sqlite(_) => checkpoint_source_sqlite::BACKEND,
            SourceTarget::Postgres(_) => checkpoint_source_postgres::BACKEND,
            SourceTarget::Nats(_) => "nats",
            SourceTarget::Kafka(_) => "kafka",
        }
    }

    /// Where the log is, without any credential: for every message.
    pub fn display(&self) -> String {
        match self {
            SourceTarget::Sqlite(path) => format!("sqlite:{}", path.display()),
            SourceTarget::Postgres(url) => {
                redact::display_url(url).unwrap_or_else(|| "<url>".into())
            }
            // The user name may be a token.
            SourceTarget::Nats(url) => {
                redact::display_url_without_user(url).unwrap_or_else(|| "<url>".into())
            }
            // Refused with user information: nothing to hide.
            SourceTarget::Kafka(url) => url.clone(),
        }
    }

    /// Every credential in the URL, to remove from anything printed.
    pub fn secrets(&self) -> Vec<String> {
        match self {
            SourceTarget::Sqlite(_) => Vec::new(),
            SourceTarget::Postgres(url) => redact::secrets_of(url),
            SourceTarget::Nats(url) => redact::secrets_with_token(url),
            SourceTarget::Kafka(_) => Vec::new(),
        }
    }
}

impl std::fmt::Debug for SourceTarget {
    // By hand: a URL may hold a password or a token.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SourceTarget({})", self.display())
    }
}

/// `--source-table` and `--source-stream` as `target` takes them: the table's name (the
/// source crate's default when not given) for SQLite and PostgreSQL, the stream's for NATS; a
/// Kafka URL names its topic and takes neither.
///
/// # Errors
///
/// A usage error for a setting the log does not have, or a NATS source without its stream.
pub fn source_name(
    target: &SourceTarget,
    table: Option<&str>,
    stream: Option<&str>,
) -> Result<String, CliError> {
    match (target, table, stream) {
        (SourceTarget::Nats(_), Some(_), _) => Err(CliError::usage(
            "--source-table is for sqlite: and postgres:// sources; a nats:// source reads the \
             stream of --source-stream",
        )),
        (SourceTarget::Nats(_), None, Some(stream)) => Ok(stream.to_owned()),
        (SourceTarget::Nats(_), None, None) => Err(CliError::usage(
            "a nats:// source needs its stream: --source-stream NAME",
        )),
        (SourceTarget::Kafka(_), Some(_), _) | (SourceTarget::Kafka(_), _, Some(_)) => {
            Err(CliError::usage(
                "--source-table and --source-stream are not for kafka:// sources: the URL names \
                 the topic, kafka://HOST:PORT/TOPIC",
            ))
        }
        (SourceTarget::Kafka(url), None, None) => Ok(kafka_topic(url).to_owned()),
        (_, _, Some(_)) => Err(CliError::usage(format!(
            "--source-stream is for nats:// sources, not {}: name an event table with \
             --source-table",
            target.backend()
        ))),
        (SourceTarget::Sqlite(_), table, None) => Ok(table
            .unwrap_or(checkpoint_source_sqlite::DEFAULT_TABLE)
            .to_owned()),
        (SourceTarget::Postgres(_), table, None) => Ok(table
            .unwrap_or(checkpoint_source_postgres::DEFAULT_TABLE)
            .to_owned()),
    }
}

/// The topic of `kafka://HOSTS/TOPIC?…` as written (checked when the source is made).
fn kafka_topic(url: &str) -> &str {
    let rest = url.strip_prefix("kafka://").unwrap_or(url);
    let rest = rest.split('?').next().unwrap_or(rest);
    rest.split_once('/').map_or("", |(_, topic)| topic)
}

/// `5s` for messages.
fn seconds(timeout: Duration) -> String {
    crate::connect::seconds(timeout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_scheme_names_its_log() {
        assert_eq!(
            SourceTarget::parse("sqlite:/tmp/log.db").unwrap(),
            SourceTarget::Sqlite("/tmp/log.db".into())
        );
        assert_eq!(
            SourceTarget::parse("sqlite:///tmp/log.db").unwrap(),
            SourceTarget::Sqlite("/tmp/log.db".into())
        );
        assert_eq!(
            SourceTarget::parse("postgresql://u@h/db").unwrap(),
            SourceTarget::Postgres("postgresql://u@h/db".into())
        );
        let built = cfg!(feature = "source-nats");
        match (SourceTarget::parse("nats://tok@127.0.0.1:4222"), built) {
            (Ok(target), true) => {
                assert_eq!(target.display(), "nats://127.0.0.1:4222");
                assert_eq!(target.secrets(), vec!["tok".to_owned()]);
            }
            (Err(error), false) => {
                assert_eq!(error.exit().code(), 2);
                assert!(error.message().contains("`source-nats`"), "{error}");
                assert!(!error.message().contains("tok"), "{error}");
            }
            (parsed, _) => panic!("built with source-nats: {built}, parsed: {parsed:?}"),
        }
        let built = cfg!(feature = "source-kafka");
        match (SourceTarget::parse("kafka://a:9092,b:9093/orders"), built) {
            (Ok(target), true) => {
                assert_eq!(target.display(), "kafka://a:9092,b:9093/orders");
                assert_eq!(target.backend(), "kafka");
            }
            (Err(error), false) => {
                assert_eq!(error.exit().code(), 2);
                assert!(error.message().contains("`source-kafka`"), "{error}");
            }
            (parsed, _) => panic!("built with source-kafka: {built}, parsed: {parsed:?}"),
        }
    }

    #[test]
    fn a_kafka_url_with_user_information_is_refused_without_showing_it() {
        let error = SourceTarget::parse("kafka://u:hunter2@h:9092/orders").unwrap_err();
        assert_eq!(error.exit().code(), 2);
        assert!(!error.message().contains("hunter2"), "{error}");
    }

    #[test]
    fn bad_source_urls_are_usage_errors_that_never_show_the_url() {
        for url in [
            "redis://:hunter2@h:6379",
            "hunter2",
            "postgres://u:hunter2@h:notaport/db",
            "sqlite:",
            "",
        ] {
            let error = SourceTarget::parse(url).unwrap_err();
            assert_eq!(error.exit().code(), 2, "{url}");
            assert!(!error.message().contains("hunter2"), "{error}");
        }
        let error = SourceTarget::parse("pulsar://h:6650").unwrap_err();
        assert_eq!(
            error.message(),
            "unsupported source URL pulsar://: expected sqlite:PATH, postgres://…, \
             postgresql://…, nats://… or kafka://…"
        );
    }

    #[test]
    fn the_display_hides_the_password() {
        let target = SourceTarget::parse("postgres://app:hunter2@db:5432/prod").unwrap();
        assert_eq!(target.display(), "postgres://app@db:5432/prod");
        assert!(!format!("{target:?}").contains("hunter2"));
        assert_eq!(target.secrets(), vec!["hunter2".to_owned()]);
    }

    #[test]
    fn each_setting_belongs_to_its_log() {
        let sqlite = SourceTarget::Sqlite("a.db".into());
        let postgres = SourceTarget::Postgres("postgres://h/db".into());
        let nats = SourceTarget::Nats("nats://h".into());
        assert_eq!(source_name(&sqlite, None, None).unwrap(), "events");
        assert_eq!(
            source_name(&postgres, Some("app.log"), None).unwrap(),
            "app.log"
        );
        assert_eq!(source_name(&nats, None, Some("ORDERS")).unwrap(), "ORDERS");
        let kafka = SourceTarget::Kafka("kafka://h:9092/orders.v1?partitions=8".into());
        assert_eq!(source_name(&kafka, None, None).unwrap(), "orders.v1");
        for (target, table, stream) in [
            (&kafka, Some("t"), None),
            (&kafka, None, Some("S")),
            (&nats, None, None),
            (&nats, Some("t"), Some("S")),
            (&sqlite, None, Some("S")),
            (&postgres, Some("t"), Some("S")),
        ] {
            let error = source_name(target, table, stream).unwrap_err();
            assert_eq!(error.exit().code(), 2, "{}", error.message());
        }
    }
}
