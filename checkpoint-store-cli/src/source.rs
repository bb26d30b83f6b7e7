//! The log `status --source` reads each partition's head from, for lag: which log a URL names
//! ([`SourceTarget`]), the log with its settings checked before any request ([`SourceSpec`]),
//! opening it ([`SourceSpec::open`], in `open`) and reading the heads ([`read_heads`]).
//!
//! | URL | log | build |
//! | --- | --- | --- |
//! | `sqlite:PATH` (also `sqlite://PATH`) | the event table of `checkpoint-source-sqlite` in that file, which must exist | always |
//! | `postgres://…`, `postgresql://…` | the event table of `checkpoint-source-postgres` | always |
//! | `nats://…` | the JetStream stream of `checkpoint-source-nats` (`--source-stream`) | feature `source-nats` |
//!
//! The command reads a log, never creates or changes one.

mod heads;
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
}

/// What `--source` accepts, for messages.
const EXPECTED: &str = "sqlite:PATH, postgres://…, postgresql://… or nats://…";

/// What a build without the `source-nats` feature says of a `nats://` URL.
const NATS_NOT_BUILT: &str = "a nats:// source needs the command's `source-nats` feature, which \
     this build leaves out: install with `cargo install --path checkpoint-store-cli --features \
     source-nats`";

impl SourceTarget {
    /// The log `url` names.
    ///
    /// # Errors
    ///
    /// A usage error for an unknown scheme, a malformed URL (which it never shows), or
    /// `nats://` in a build without the `source-nats` feature (naming the feature).
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
        }
    }

    /// Every credential in the URL, to remove from anything printed.
    pub fn secrets(&self) -> Vec<String> {
        match self {
            SourceTarget::Sqlite(_) => Vec::new(),
            SourceTarget::Postgres(url) => redact::secrets_of(url),
            SourceTarget::Nats(url) => redact::secrets_with_token(url),
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
/// source crate's default when not given) for SQLite and PostgreSQL, the stream's for NATS.
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
        let error = SourceTarget::parse("kafka://h:9092").unwrap_err();
        assert_eq!(
            error.message(),
            "unsupported source URL kafka://: expected sqlite:PATH, postgres://…, \
             postgresql://… or nats://…"
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
        for (target, table, stream) in [
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
