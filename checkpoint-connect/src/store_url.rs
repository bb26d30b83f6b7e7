//! Which store a URL names: one format per backend.
//!
//! | URL | store |
//! | --- | --- |
//! | `postgres://…`, `postgresql://…` | PostgreSQL |
//! | `mysql://…`, `mariadb://…` | MySQL or MariaDB |
//! | `redis://…`, `rediss://…` | one Redis server |
//! | several `redis://` URLs (`--url` repeated, or comma-separated) | a Redis Cluster, through any of its nodes |
//! | `dynamodb://TABLE` | DynamoDB, endpoint, region and credentials from the AWS environment |
//! | `sqlite:PATH` (also `sqlite://PATH`) | a SQLite database file, which must exist |

use std::path::PathBuf;

use crate::error::UrlError;
use crate::redact;

/// A store, as its URLs name it (see the crate doc): parsed and checked, not yet opened.
///
/// Parsing does not depend on the features this build has, so a URL of a backend left out is
/// recognised and [`open`](crate::open) names the feature to add.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreUrl {
    /// PostgreSQL at this URL.
    Postgres(String),
    /// MySQL or MariaDB at this URL (`mysql://` or `mariadb://`).
    Mysql(String),
    /// One Redis server at this URL.
    Redis(String),
    /// A Redis Cluster through these node URLs.
    RedisCluster(Vec<String>),
    /// The DynamoDB table of this name.
    DynamoDb(String),
    /// The SQLite database file at this path.
    Sqlite(PathBuf),
}

impl StoreUrl {
    /// The store `values` name, each one URL or several Redis URLs. A value may hold several Redis URLs separated by
    /// commas (`redis://a:7000,redis://b:7000`): a comma counts as a separator only right
    /// before `redis://` or `rediss://`, so a password with a comma stays whole.
    ///
    /// # Errors
    ///
    /// [`UrlError`] for no URL, an unknown scheme, a malformed URL (which it never shows), or
    /// several URLs that are not all Redis.
    pub fn parse<S: AsRef<str>>(values: &[S]) -> Result<Self, UrlError> {
        let urls: Vec<&str> = values
            .iter()
            .flat_map(|value| split_redis_urls(value.as_ref()))
            .map(|url| url.trim_matches(|c: char| c == ',' || c.is_whitespace()))
            .filter(|url| !url.is_empty())
            .collect();
        match urls.as_slice() {
            [] => Err(UrlError::Missing),
            [url] => Self::parse_one(url),
            several => {
                if let Some(other) = several.iter().find(|url| !is_redis(url)) {
                    return Err(UrlError::NotAllRedis {
                        scheme: scheme_for_message(other),
                    });
                }
                for url in several {
                    check_parses(url)?;
                }
                Ok(StoreUrl::RedisCluster(
                    several.iter().map(|url| (*url).to_owned()).collect(),
                ))
            }
        }
    }

    fn parse_one(url: &str) -> Result<Self, UrlError> {
        if let Some(path) = url.strip_prefix("sqlite:") {
            return sqlite_path(path).map(StoreUrl::Sqlite);
        }
        if let Some(table) = url.strip_prefix("dynamodb://") {
            let table = table.trim_end_matches('/');
            if table.is_empty() || table.contains(['/', '?', '@', ':']) {
                return Err(UrlError::DynamoDbTableOnly);
            }
            return Ok(StoreUrl::DynamoDb(table.to_owned()));
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            check_parses(url)?;
            return Ok(StoreUrl::Postgres(url.to_owned()));
        }
        if url.starts_with("mysql://") || url.starts_with("mariadb://") {
            check_parses(url)?;
            return Ok(StoreUrl::Mysql(url.to_owned()));
        }
        if is_redis(url) {
            check_parses(url)?;
            return Ok(StoreUrl::Redis(url.to_owned()));
        }
        Err(UrlError::UnknownScheme {
            scheme: scheme_for_message(url),
        })
    }

    /// The backend's name, as in its crate's `BACKEND` (`"postgres"`, `"mysql"`, `"redis"`,
    /// ...), whether or not this build has it.
    pub fn backend(&self) -> &'static str {
        match self {
            StoreUrl::Postgres(_) => "postgres",
            StoreUrl::Mysql(_) => "mysql",
            StoreUrl::Redis(_) | StoreUrl::RedisCluster(_) => "redis",
            StoreUrl::DynamoDb(_) => "dynamodb",
            StoreUrl::Sqlite(_) => "sqlite",
        }
    }

    /// The feature of this crate that this build lacks to open the store, if any: the
    /// backend's (`"postgres"`, ...), or `"tls"` for a `rediss://` URL.
    pub fn missing_feature(&self) -> Option<&'static str> {
        let backend_built = match self {
            StoreUrl::Postgres(_) => cfg!(feature = "postgres"),
            StoreUrl::Mysql(_) => cfg!(feature = "mysql"),
            StoreUrl::Redis(_) | StoreUrl::RedisCluster(_) => cfg!(feature = "redis"),
            StoreUrl::DynamoDb(_) => cfg!(feature = "dynamodb"),
            StoreUrl::Sqlite(_) => cfg!(feature = "sqlite"),
        };
        if !backend_built {
            Some(self.backend())
        } else if self.needs_tls() && !cfg!(feature = "tls") {
            Some("tls")
        } else {
            None
        }
    }

    /// Whether the store is reached over TLS that only the `tls` feature builds: a
    /// `rediss://` URL (PostgreSQL's `sslmode` and MySQL's `ssl-mode` are sqlx's to refuse).
    pub fn needs_tls(&self) -> bool {
        match self {
            StoreUrl::Redis(url) => url.starts_with("rediss://"),
            StoreUrl::RedisCluster(urls) => urls.iter().any(|url| url.starts_with("rediss://")),
            _ => false,
        }
    }

    /// How the URL starts (`"postgres://"`, `"sqlite:"`), never more of it: for messages.
    pub fn scheme(&self) -> &'static str {
        match self {
            StoreUrl::Postgres(_) => "postgres://",
            StoreUrl::Mysql(url) if url.starts_with("mariadb://") => "mariadb://",
            StoreUrl::Mysql(_) => "mysql://",
            StoreUrl::Redis(_) | StoreUrl::RedisCluster(_) if self.needs_tls() => "rediss://",
            StoreUrl::Redis(_) | StoreUrl::RedisCluster(_) => "redis://",
            StoreUrl::DynamoDb(_) => "dynamodb://",
            StoreUrl::Sqlite(_) => "sqlite:",
        }
    }

    /// Where the store is, without any credential: for every message.
    pub fn display(&self) -> String {
        let shown = |url: &String| redact::display_url(url).unwrap_or_else(|| "<url>".into());
        match self {
            StoreUrl::Postgres(url) | StoreUrl::Mysql(url) | StoreUrl::Redis(url) => shown(url),
            StoreUrl::RedisCluster(urls) => urls.iter().map(shown).collect::<Vec<_>>().join(","),
            StoreUrl::DynamoDb(table) => format!("dynamodb://{table}"),
            StoreUrl::Sqlite(path) => format!("sqlite:{}", path.display()),
        }
    }

    /// Every credential in the URLs, to remove from anything printed.
    pub fn secrets(&self) -> Vec<String> {
        match self {
            StoreUrl::Postgres(url) | StoreUrl::Mysql(url) | StoreUrl::Redis(url) => {
                redact::secrets_of(url)
            }
            StoreUrl::RedisCluster(urls) => {
                let mut secrets: Vec<String> =
                    urls.iter().flat_map(|u| redact::secrets_of(u)).collect();
                secrets.sort();
                secrets.dedup();
                secrets
            }
            StoreUrl::DynamoDb(_) | StoreUrl::Sqlite(_) => Vec::new(),
        }
    }
}

impl std::fmt::Debug for StoreUrl {
    // By hand: a URL may hold a password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StoreUrl({})", self.display())
    }
}

impl std::str::FromStr for StoreUrl {
    type Err = UrlError;

    /// [`StoreUrl::parse`] of one value.
    fn from_str(value: &str) -> Result<Self, UrlError> {
        Self::parse(&[value])
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
///
/// # Errors
///
/// [`UrlError::SqlitePathMissing`] for an empty path.
pub fn sqlite_path(rest: &str) -> Result<PathBuf, UrlError> {
    let path = rest.strip_prefix("//").unwrap_or(rest);
    if path.is_empty() {
        return Err(UrlError::SqlitePathMissing);
    }
    Ok(PathBuf::from(path))
}

/// Checks that `url` parses as a URL.
///
/// # Errors
///
/// [`UrlError::Malformed`], which names the scheme and the parser's reason, never any part of
/// the URL.
pub fn check_parses(url: &str) -> Result<(), UrlError> {
    url::Url::parse(url)
        .map(drop)
        .map_err(|error| UrlError::Malformed {
            scheme: scheme_for_message(url),
            reason: error.to_string(),
        })
}

/// The scheme of `url` for a message (`"oracle://"`), never more of it.
pub fn scheme_for_message(url: &str) -> String {
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

    fn parse(values: &[&str]) -> Result<StoreUrl, UrlError> {
        StoreUrl::parse(values)
    }

    #[test]
    fn each_scheme_names_its_store() {
        assert_eq!(
            parse(&["postgres://u@h/db"]).unwrap(),
            StoreUrl::Postgres("postgres://u@h/db".into())
        );
        assert_eq!(parse(&["postgresql://h/db"]).unwrap().backend(), "postgres");
        assert_eq!(
            parse(&["mysql://root@h:3306/db"]).unwrap(),
            StoreUrl::Mysql("mysql://root@h:3306/db".into())
        );
        assert_eq!(parse(&["mysql://h/db"]).unwrap().backend(), "mysql");
        assert_eq!(parse(&["mysql://h/db"]).unwrap().scheme(), "mysql://");
        assert_eq!(
            parse(&["mariadb://h/db"]).unwrap(),
            StoreUrl::Mysql("mariadb://h/db".into())
        );
        assert_eq!(parse(&["mariadb://h/db"]).unwrap().backend(), "mysql");
        assert_eq!(parse(&["mariadb://h/db"]).unwrap().scheme(), "mariadb://");
        assert_eq!(
            parse(&["redis://h:6379"]).unwrap(),
            StoreUrl::Redis("redis://h:6379".into())
        );
        assert_eq!(parse(&["rediss://h"]).unwrap().backend(), "redis");
        assert_eq!(parse(&["rediss://h"]).unwrap().scheme(), "rediss://");
        assert_eq!(
            parse(&["redis://a:1,rediss://b:2"]).unwrap().scheme(),
            "rediss://",
            "a cluster with a TLS node needs TLS"
        );
        assert_eq!(
            parse(&["dynamodb://checkpoints"]).unwrap(),
            StoreUrl::DynamoDb("checkpoints".into())
        );
        assert_eq!(
            parse(&["sqlite:/tmp/a.db"]).unwrap(),
            StoreUrl::Sqlite("/tmp/a.db".into())
        );
        assert_eq!(
            parse(&["sqlite:///tmp/a.db"]).unwrap(),
            StoreUrl::Sqlite("/tmp/a.db".into())
        );
        assert_eq!(
            parse(&["sqlite:rel.db"]).unwrap(),
            StoreUrl::Sqlite("rel.db".into())
        );
    }

    #[test]
    fn several_redis_urls_are_a_cluster_repeated_or_comma_separated() {
        let cluster = StoreUrl::RedisCluster(vec!["redis://a:1".into(), "redis://b:2".into()]);
        assert_eq!(parse(&["redis://a:1", "redis://b:2"]).unwrap(), cluster);
        assert_eq!(parse(&["redis://a:1,redis://b:2"]).unwrap(), cluster);
        assert_eq!(parse(&["redis://a:1, redis://b:2,"]).unwrap(), cluster);
        // A comma in a password is not a separator.
        assert_eq!(
            parse(&["redis://:p,q@a:1"]).unwrap(),
            StoreUrl::Redis("redis://:p,q@a:1".into())
        );
    }

    #[test]
    fn bad_urls_are_usage_errors_that_never_show_the_url() {
        for values in [
            &["oracle://root:hunter2@h/db"][..],
            &["hunter2"],
            &["postgres://u:hunter2@h:notaport/db"],
            &["mysql://u:hunter2@h:notaport/db"],
            &["redis://a:1", "mysql://u:hunter2@h/db"],
            &["redis://a:1", "postgres://u:hunter2@h/db"],
            &["dynamodb://"],
            &["dynamodb://t?endpoint=x"],
            &["sqlite:"],
            &[],
        ] {
            let error = parse(values).unwrap_err().to_string();
            assert!(!error.contains("hunter2"), "{error}");
        }
        let error = parse(&["oracle://root:hunter2@h/db"]).unwrap_err();
        assert_eq!(
            error,
            UrlError::UnknownScheme {
                scheme: "oracle://".into()
            }
        );
        assert!(error.to_string().contains("oracle://"), "{error}");
    }

    #[test]
    fn display_and_debug_hide_the_password() {
        let target = parse(&["redis://:hunter2@a:1,redis://:hunter2@b:2"]).unwrap();
        assert_eq!(target.display(), "redis://a:1,redis://b:2");
        assert!(!format!("{target:?}").contains("hunter2"));
        assert_eq!(target.secrets(), vec!["hunter2".to_owned()]);
        for url in [
            "mysql://app:hunter2@db:3306/prod",
            "mariadb://app:hunter2@db:3306/prod",
        ] {
            let target = parse(&[url]).unwrap();
            assert_eq!(target.display(), url.replace(":hunter2", ""));
            assert!(!format!("{target:?}").contains("hunter2"));
            assert_eq!(target.secrets(), vec!["hunter2".to_owned()]);
        }
    }
}
