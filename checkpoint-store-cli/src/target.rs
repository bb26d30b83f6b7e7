//! Which store a URL names.
//!
//! | URL | store |
//! | --- | --- |
//! | `postgres://…`, `postgresql://…` | PostgreSQL |
//! | `redis://…`, `rediss://…` | one Redis server |
//! | several `redis://` URLs (`--url` repeated, or comma-separated) | a Redis Cluster, through any of its nodes |
//! | `dynamodb://TABLE` | DynamoDB, endpoint, region and credentials from the AWS environment |
//! | `sqlite:PATH` (also `sqlite://PATH`) | a SQLite database file, which must exist |

use std::path::PathBuf;

use crate::error::CliError;
use crate::redact;

/// The store the command works on, as its URLs name it.
#[derive(Clone, PartialEq, Eq)]
pub enum Target {
    /// PostgreSQL at this URL.
    Postgres(String),
    /// One Redis server at this URL.
    Redis(String),
    /// A Redis Cluster through these node URLs.
    RedisCluster(Vec<String>),
    /// The DynamoDB table of this name.
    DynamoDb(String),
    /// The SQLite database file at this path.
    Sqlite(PathBuf),
}

/// What the command accepts, for messages.
const EXPECTED: &str = "postgres://…, postgresql://…, redis://…, rediss://…, several redis:// URLs \
                        for a cluster, dynamodb://TABLE or sqlite:PATH";

impl Target {
    /// The target the `--url` values name. A value may hold several Redis URLs separated by
    /// commas (`redis://a:7000,redis://b:7000`): a comma counts as a separator only right
    /// before `redis://` or `rediss://`, so a password with a comma stays whole.
    ///
    /// # Errors
    ///
    /// A usage error for no URL, an unknown scheme, a malformed URL (which it never shows), or
    /// several URLs that are not all Redis.
    pub fn parse<S: AsRef<str>>(values: &[S]) -> Result<Self, CliError> {
        let urls: Vec<&str> = values
            .iter()
            .flat_map(|value| split_redis_urls(value.as_ref()))
            .map(|url| url.trim_matches(|c: char| c == ',' || c.is_whitespace()))
            .filter(|url| !url.is_empty())
            .collect();
        match urls.as_slice() {
            [] => Err(CliError::usage(format!(
                "no store URL: give --url (or set CHECKPOINT_URL): {EXPECTED}"
            ))),
            [url] => Self::parse_one(url),
            several => {
                if let Some(other) = several.iter().find(|url| !is_redis(url)) {
                    return Err(CliError::usage(format!(
                        "several URLs name a Redis Cluster, and every one must be redis:// or \
                         rediss://, not {}",
                        scheme_for_message(other)
                    )));
                }
                for url in several {
                    check_parses(url)?;
                }
                Ok(Target::RedisCluster(
                    several.iter().map(|url| (*url).to_owned()).collect(),
                ))
            }
        }
    }

    fn parse_one(url: &str) -> Result<Self, CliError> {
        if let Some(path) = url.strip_prefix("sqlite:") {
            return sqlite_path(path).map(Target::Sqlite);
        }
        if let Some(table) = url.strip_prefix("dynamodb://") {
            let table = table.trim_end_matches('/');
            if table.is_empty() || table.contains(['/', '?', '@', ':']) {
                return Err(CliError::usage(
                    "dynamodb:// takes the table name only (dynamodb://TABLE); the endpoint, \
                     region and credentials come from the AWS environment",
                ));
            }
            return Ok(Target::DynamoDb(table.to_owned()));
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            check_parses(url)?;
            return Ok(Target::Postgres(url.to_owned()));
        }
        if is_redis(url) {
            check_parses(url)?;
            return Ok(Target::Redis(url.to_owned()));
        }
        Err(CliError::usage(format!(
            "unsupported store URL {}: expected {EXPECTED}",
            scheme_for_message(url)
        )))
    }

    /// The backend's name, as in its crate's `BACKEND`.
    pub fn backend(&self) -> &'static str {
        match self {
            Target::Postgres(_) => checkpoint_postgres::BACKEND,
            Target::Redis(_) | Target::RedisCluster(_) => checkpoint_redis::BACKEND,
            Target::DynamoDb(_) => checkpoint_dynamodb::BACKEND,
            Target::Sqlite(_) => checkpoint_sqlite::BACKEND,
        }
    }

    /// Where the store is, without any credential: for every message.
    pub fn display(&self) -> String {
        let shown = |url: &String| redact::display_url(url).unwrap_or_else(|| "<url>".into());
        match self {
            Target::Postgres(url) | Target::Redis(url) => shown(url),
            Target::RedisCluster(urls) => urls.iter().map(shown).collect::<Vec<_>>().join(","),
            Target::DynamoDb(table) => format!("dynamodb://{table}"),
            Target::Sqlite(path) => format!("sqlite:{}", path.display()),
        }
    }

    /// Every credential in the URLs, to remove from anything printed.
    pub fn secrets(&self) -> Vec<String> {
        match self {
            Target::Postgres(url) | Target::Redis(url) => redact::secrets_of(url),
            Target::RedisCluster(urls) => {
                let mut secrets: Vec<String> =
                    urls.iter().flat_map(|u| redact::secrets_of(u)).collect();
                secrets.sort();
                secrets.dedup();
                secrets
            }
            Target::DynamoDb(_) | Target::Sqlite(_) => Vec::new(),
        }
    }
}

impl std::fmt::Debug for Target {
    // By hand: a URL may hold a password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Target({})", self.display())
    }
}

fn is_redis(url: &str) -> bool {
    url.starts_with("redis://") || url.starts_with("rediss://")
}

/// Splits `value` before every `,redis://` and `,rediss://`.
fn split_redis_urls(value: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    for (index, _) in value.match_indices(',') {
        if is_redis(value[index + 1..].trim_start()) {
            parts.push(&value[start..index]);
            start = index + 1;
        }
    }
    parts.push(&value[start..]);
    parts
}

/// The path of `sqlite:PATH` (also `sqlite://PATH`) from what follows `sqlite:`.
pub(crate) fn sqlite_path(rest: &str) -> Result<PathBuf, CliError> {
    let path = rest.strip_prefix("//").unwrap_or(rest);
    if path.is_empty() {
        return Err(CliError::usage(
            "sqlite: needs the path of the database file: sqlite:PATH",
        ));
    }
    Ok(PathBuf::from(path))
}

/// A usage error, without any part of the URL, when `url` does not parse.
pub(crate) fn check_parses(url: &str) -> Result<(), CliError> {
    url::Url::parse(url).map(drop).map_err(|error| {
        CliError::usage(format!(
            "malformed {} URL ({error}); the URL is not shown, it may hold a password",
            scheme_for_message(url)
        ))
    })
}

/// The scheme of `url` for a message (`"mysql://"`), never more of it.
pub(crate) fn scheme_for_message(url: &str) -> String {
    match url.split_once(':') {
        Some((scheme, _))
            if !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) =>
        {
            let separator = if url[scheme.len()..].starts_with("://") {
                "://"
            } else {
                ":"
            };
            format!("{scheme}{separator}")
        }
        _ => "without a scheme".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(values: &[&str]) -> Result<Target, CliError> {
        Target::parse(values)
    }

    #[test]
    fn each_scheme_names_its_store() {
        assert_eq!(
            parse(&["postgres://u@h/db"]).unwrap(),
            Target::Postgres("postgres://u@h/db".into())
        );
        assert_eq!(parse(&["postgresql://h/db"]).unwrap().backend(), "postgres");
        assert_eq!(
            parse(&["redis://h:6379"]).unwrap(),
            Target::Redis("redis://h:6379".into())
        );
        assert_eq!(parse(&["rediss://h"]).unwrap().backend(), "redis");
        assert_eq!(
            parse(&["dynamodb://checkpoints"]).unwrap(),
            Target::DynamoDb("checkpoints".into())
        );
        assert_eq!(
            parse(&["sqlite:/tmp/a.db"]).unwrap(),
            Target::Sqlite("/tmp/a.db".into())
        );
        assert_eq!(
            parse(&["sqlite:///tmp/a.db"]).unwrap(),
            Target::Sqlite("/tmp/a.db".into())
        );
        assert_eq!(
            parse(&["sqlite:rel.db"]).unwrap(),
            Target::Sqlite("rel.db".into())
        );
    }

    #[test]
    fn several_redis_urls_are_a_cluster_repeated_or_comma_separated() {
        let cluster = Target::RedisCluster(vec!["redis://a:1".into(), "redis://b:2".into()]);
        assert_eq!(parse(&["redis://a:1", "redis://b:2"]).unwrap(), cluster);
        assert_eq!(parse(&["redis://a:1,redis://b:2"]).unwrap(), cluster);
        assert_eq!(parse(&["redis://a:1, redis://b:2,"]).unwrap(), cluster);
        // A comma in a password is not a separator.
        assert_eq!(
            parse(&["redis://:p,q@a:1"]).unwrap(),
            Target::Redis("redis://:p,q@a:1".into())
        );
    }

    #[test]
    fn bad_urls_are_usage_errors_that_never_show_the_url() {
        for values in [
            &["mysql://root:hunter2@h/db"][..],
            &["hunter2"],
            &["postgres://u:hunter2@h:notaport/db"],
            &["redis://a:1", "postgres://u:hunter2@h/db"],
            &["dynamodb://"],
            &["dynamodb://t?endpoint=x"],
            &["sqlite:"],
            &[],
        ] {
            let error = parse(values).unwrap_err();
            assert_eq!(error.exit().code(), 2, "{values:?}");
            assert!(!error.message().contains("hunter2"), "{}", error.message());
        }
        let error = parse(&["mysql://root:hunter2@h/db"]).unwrap_err();
        assert!(error.message().contains("mysql://"), "{}", error.message());
    }

    #[test]
    fn display_and_debug_hide_the_password() {
        let target = parse(&["redis://:hunter2@a:1,redis://:hunter2@b:2"]).unwrap();
        assert_eq!(target.display(), "redis://a:1,redis://b:2");
        assert!(!format!("{target:?}").contains("hunter2"));
        assert_eq!(target.secrets(), vec!["hunter2".to_owned()]);
    }
}
