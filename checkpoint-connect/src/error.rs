//! Why a URL names no store, and why a store could not be opened: never showing the URL.

use std::time::Duration;

/// The store URLs [`StoreUrl::parse`](crate::StoreUrl::parse) accepts, in words: for a
/// program's own messages.
pub const ACCEPTED_URLS: &str = "postgres://…, postgresql://…, mysql://…, mariadb://…, redis://…, \
                        rediss://…, several redis:// URLs for a cluster, dynamodb://TABLE or \
                        sqlite:PATH";

/// A URL that names no store (see the crate doc). The message shows the URL's scheme at most:
/// the rest may hold a password.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UrlError {
    /// No URL was given.
    #[error("no store URL: expected {ACCEPTED_URLS}")]
    Missing,
    /// The scheme is none of the accepted ones.
    #[error("unsupported store URL {scheme}: expected {ACCEPTED_URLS}")]
    UnknownScheme {
        /// How the URL starts (`oracle://`), or `without a scheme`.
        scheme: String,
    },
    /// The URL does not parse.
    #[error("malformed {scheme} URL ({reason}); the URL is not shown, it may hold a password")]
    Malformed {
        /// How the URL starts.
        scheme: String,
        /// The parser's reason, which holds no part of the URL.
        reason: String,
    },
    /// Several URLs (a Redis Cluster's nodes) where one is not Redis.
    #[error(
        "several URLs name a Redis Cluster, and every one must be redis:// or rediss://, not \
         {scheme}"
    )]
    NotAllRedis {
        /// How the first URL that is not Redis starts.
        scheme: String,
    },
    /// `dynamodb://` with more than a table name.
    #[error(
        "dynamodb:// takes the table name only (dynamodb://TABLE); the endpoint, region and \
         credentials come from the AWS environment"
    )]
    DynamoDbTableOnly,
    /// `sqlite:` without a path.
    #[error("sqlite: needs the path of the database file: sqlite:PATH")]
    SqlitePathMissing,
}

/// Why [`open`](crate::open) could not open a store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The URL names no store.
    #[error(transparent)]
    Url(#[from] UrlError),
    /// This build of the crate lacks the feature the store needs.
    #[error(
        "{scheme}… needs checkpoint-connect's `{feature}` feature, which this build leaves out"
    )]
    NotBuilt {
        /// How the URL starts, never more of it.
        scheme: &'static str,
        /// The feature to turn on: the backend's name, or `tls`.
        feature: &'static str,
    },
    /// A setting of [`Options`](crate::Options) that the store's backend does not have.
    #[error("{setting} is for {backends}, not {backend}")]
    Setting {
        /// The setting (`table`, `key_prefix`).
        setting: &'static str,
        /// The backends that have it.
        backends: &'static str,
        /// The backend of the URL.
        backend: &'static str,
    },
    /// The store did not open within [`Options::timeout`](crate::Options::timeout).
    #[error("no answer within {}s", .0.as_secs_f64())]
    Timeout(Duration),
    /// The store's own error: the server refused, a setting's value is invalid, the schema
    /// could not be created.
    #[error(transparent)]
    Store(#[from] checkpoint_core::Error),
}
