//! Shared by the examples: opening a checkpoint store from its URL (through
//! `checkpoint-connect`, as the `checkpoint` command does), and the log they read ([`log`]).
//!
//! | store | meaning | feature |
//! | --- | --- | --- |
//! | `sqlite:<path>` | the embedded SQLite store on a file (created if missing) | always built |
//! | `memory` | in process memory (lost when the process exits) | always built |
//! | `postgres://…` | PostgreSQL | `postgres` |
//! | `mysql://…`, `mariadb://…` | MySQL or MariaDB | `mysql` |
//! | `redis://…` | Redis (`rediss://` with `tls` too) | `redis` |
//! | `dynamodb://TABLE` | DynamoDB, or an emulator: endpoint, region and credentials from the AWS environment (`AWS_ENDPOINT_URL_DYNAMODB`, `AWS_REGION`, ...) | `dynamodb` |
//!
//! Every URL is `checkpoint-connect`'s, one format per backend, the same the `checkpoint`
//! command takes, so the command an example prints for its store is that URL again.
//!
//! # Features
//!
//! A plain build has SQLite and the in-memory store only, so the README's first command
//! (`cargo run -p checkpoint-examples --bin quickstart`) compiles no other client library.
//! Every other backend is one feature away: `postgres`, `mysql`, `redis`, `dynamodb`; the quick
//! start's log ([`log`]) in PostgreSQL, NATS JetStream or Kafka instead of SQLite is
//! `source-postgres`, `source-nats` or `source-kafka` (`--source postgres://…`,
//! `--source nats://…`, `--source kafka://HOST:PORT`); `kit` adds the conformance
//! kit (for `custom_backend`), and `all` turns on all of them:
//!
//! ```text
//! cargo run -p checkpoint-examples --features redis --bin quickstart -- --store redis://127.0.0.1:6379
//! cargo run -p checkpoint-examples --features mysql --bin quickstart -- --store mysql://root@127.0.0.1:3306/test
//! cargo run -p checkpoint-examples --features source-nats --bin quickstart -- --source nats://127.0.0.1:4222
//! cargo run -p checkpoint-examples --features source-kafka --bin quickstart -- --source kafka://127.0.0.1:9092
//! cargo run -p checkpoint-examples --features postgres --bin exactly_once_projection
//! cargo run -p checkpoint-examples --features kit --bin custom_backend
//! AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:8765 AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test \
//!   cargo run -p checkpoint-examples --features all --bin lease_handover -- --store dynamodb://checkpoints
//! cargo run -p checkpoint-examples --features redis,source-nats --bin subscription_fleet -- --store redis://127.0.0.1:6379 --source nats://127.0.0.1:4222
//! cargo run -p checkpoint-examples --features postgres,source-kafka --bin subscription_fleet -- --store postgres://postgres@127.0.0.1:5432/test --source kafka://127.0.0.1:9092
//! ```
//!
//! `subscription_fleet` runs `checkpoint-subscription` end to end in processes: children each
//! running a `Subscription` (a handler that records what it handled, poison entries parked in
//! the store) over one log while writers append to it, killed, frozen past their lease,
//! stopped gracefully and joined by new ones; its verdict is that every committed entry was
//! handled, none skipped, the parked entries are exactly the poison ones, and only a kill or a
//! freeze caused an entry to be handled twice. Without `--store` and `--source` it keeps both
//! in one SQLite file.
//!
//! A store whose backend the build left out is refused with [`OpenStoreError::NotBuilt`],
//! whose message is the command to run instead. An example that cannot run at all without a
//! feature (`exactly_once_projection`: `postgres`; `custom_backend`: `kit`) is refused by
//! cargo itself, which names the feature.

use std::sync::Arc;

use checkpoint_connect::{ConnectError, Options, StoreUrl, UrlError};
use checkpoint_core::{CheckpointStore, Error, InMemoryCheckpointStore, LeaseStore};

pub mod log;
pub mod sqlite_lock;

/// Why an example could not open its store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenStoreError {
    /// The store's backend was left out of this build: the package's feature `feature` adds it.
    #[error(
        "{scheme}… needs the examples' `{feature}` feature: cargo run -p checkpoint-examples \
         --features {feature} --bin {example} -- --store {scheme}…"
    )]
    NotBuilt {
        /// How the store's URL starts (`postgres://`), never more of it: it may hold a password.
        scheme: &'static str,
        /// The feature of this package that builds the backend.
        feature: &'static str,
        /// The example that was run, so that the message is the command to run instead.
        example: String,
    },
    /// The string names no store (it never shows the string: it may hold a password).
    #[error(transparent)]
    Url(#[from] UrlError),
    /// The store failed to open.
    #[error(transparent)]
    Store(#[from] Error),
    /// The store did not open in time, or refused a setting.
    #[error(transparent)]
    Connect(ConnectError),
}

impl From<ConnectError> for OpenStoreError {
    fn from(error: ConnectError) -> Self {
        match error {
            ConnectError::NotBuilt { scheme, feature } => not_built(scheme, feature),
            ConnectError::Url(error) => OpenStoreError::Url(error),
            ConnectError::Store(error) => OpenStoreError::Store(error),
            other => OpenStoreError::Connect(other),
        }
    }
}

/// Whether this package's own feature `feature` is on. The examples' feature names are
/// checkpoint-connect's (`postgres`, `mysql`, `redis`, `dynamodb`, `tls`); the examples check
/// their own, since in a workspace build another package may have turned checkpoint-connect's
/// on.
fn built_here(feature: &str) -> bool {
    const FEATURES: &[(&str, bool)] = &[
        ("postgres", cfg!(feature = "postgres")),
        ("mysql", cfg!(feature = "mysql")),
        ("redis", cfg!(feature = "redis")),
        ("dynamodb", cfg!(feature = "dynamodb")),
        ("tls", cfg!(feature = "tls")),
    ];
    FEATURES
        .iter()
        .find(|(name, _)| *name == feature)
        .is_none_or(|(_, on)| *on)
}

/// The examples' feature names are checkpoint-connect's, so its answer is the feature to add
/// here.
fn not_built(scheme: &'static str, feature: &'static str) -> OpenStoreError {
    OpenStoreError::NotBuilt {
        scheme,
        feature,
        example: example_name(),
    }
}

/// Checks, before anything runs, that `spec` names a store (see the crate doc) whose backend
/// this build has.
///
/// # Errors
///
/// [`OpenStoreError::NotBuilt`] naming the feature to add, or [`OpenStoreError::Url`] for a
/// string that names no store.
pub fn check_store(spec: &str) -> Result<(), OpenStoreError> {
    if spec == "memory" {
        return Ok(());
    }
    built_url(spec).map(drop)
}

/// The store `spec` names, if this build has its backend. Each of the examples' features
/// turns on checkpoint-connect's of the same name, so what passes here `open` can open.
fn built_url(spec: &str) -> Result<StoreUrl, OpenStoreError> {
    let url: StoreUrl = spec.parse()?;
    if !built_here(url.backend()) {
        return Err(not_built(url.scheme(), url.backend()));
    }
    if url.needs_tls() && !built_here("tls") {
        return Err(not_built(url.scheme(), "tls"));
    }
    Ok(url)
}

/// What every store of the examples offers: checkpoints and leases.
pub trait ExampleStore: CheckpointStore + LeaseStore {}

impl<S: CheckpointStore + LeaseStore + ?Sized> ExampleStore for S {}

/// Opens the store `spec` names (see the crate doc), creating its file and tables where it
/// has them.
///
/// # Errors
///
/// [`OpenStoreError::NotBuilt`] for a backend this build left out; the store's own error when
/// it cannot be opened, or [`OpenStoreError::Url`] when `spec` names no store.
pub async fn open_store(spec: &str) -> Result<Arc<dyn ExampleStore>, OpenStoreError> {
    if spec == "memory" {
        return Ok(Arc::new(InMemoryCheckpointStore::new()));
    }
    let store = open_url(spec, true).await?;
    Ok(Arc::new(store))
}

/// Opens the store `spec` names with every operation a store has (leases, parked entries,
/// ...), creating its file and tables when `create`: `checkpoint_connect::open` with the
/// examples' errors.
///
/// # Errors
///
/// As [`open_store`].
pub async fn open_url(
    spec: &str,
    create: bool,
) -> Result<Box<dyn checkpoint_connect::Store>, OpenStoreError> {
    let url = built_url(spec)?;
    Ok(checkpoint_connect::open(&url, &Options::new().create(create)).await?)
}

/// The example running (`quickstart`), from its executable's name.
pub(crate) fn example_name() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|path| Some(path.file_stem()?.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "<example>".to_owned())
}

/// The README's code blocks, compiled as doc tests so they cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;

/// `spec` as the examples print it, without any password; `None` when it cannot be shown (a
/// URL that does not parse).
pub fn display_store(spec: &str) -> Option<String> {
    if spec == "memory" {
        return Some(spec.to_owned());
    }
    spec.parse::<StoreUrl>().ok().map(|url| url.display())
}

/// The `checkpoint` command line that lists `subscription` of `group` in the store `spec`
/// names (see the crate doc), without any password; `None` for the in-memory store. The
/// command takes the same URLs (and, for DynamoDB, the same AWS environment).
pub fn checkpoint_list_command(spec: &str, group: &str, subscription: &str) -> Option<String> {
    if spec == "memory" {
        return None;
    }
    let url: StoreUrl = spec.parse().ok()?;
    let note = match url.secrets().is_empty() {
        true => "",
        false => "   # with the password put back in the URL",
    };
    Some(format!(
        "checkpoint --url '{}' list {group} --subscription {subscription}{note}",
        url.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_and_memory_are_always_built_and_shown_as_they_are() {
        for spec in ["memory", "sqlite:/tmp/a b.db", "sqlite:rel.db"] {
            assert!(check_store(spec).is_ok(), "{spec}");
            assert_eq!(display_store(spec).as_deref(), Some(spec));
        }
        assert_eq!(
            checkpoint_list_command("sqlite:/tmp/cp.db", "g", "s").as_deref(),
            Some("checkpoint --url 'sqlite:/tmp/cp.db' list g --subscription s")
        );
        assert_eq!(checkpoint_list_command("memory", "g", "s"), None);
    }

    #[test]
    fn a_backend_left_out_names_its_feature_and_never_the_url() {
        for (spec, scheme, feature, is_built) in [
            (
                "postgres://u:hunter2@h/db",
                "postgres://",
                "postgres",
                cfg!(feature = "postgres"),
            ),
            (
                "mysql://u:hunter2@h/db",
                "mysql://",
                "mysql",
                cfg!(feature = "mysql"),
            ),
            (
                "mariadb://u:hunter2@h/db",
                "mariadb://",
                "mysql",
                cfg!(feature = "mysql"),
            ),
            (
                "redis://:hunter2@h",
                "redis://",
                "redis",
                cfg!(feature = "redis"),
            ),
            (
                "dynamodb://t",
                "dynamodb://",
                "dynamodb",
                cfg!(feature = "dynamodb"),
            ),
        ] {
            match check_store(spec) {
                Ok(()) => assert!(is_built, "{spec}"),
                Err(error) => {
                    assert!(!is_built, "{spec}");
                    let message = error.to_string();
                    assert!(
                        message.starts_with(&format!("{scheme}… needs the examples' `{feature}`")),
                        "{message}"
                    );
                    assert!(
                        message.contains(&format!("--features {feature} --bin ")),
                        "{message}"
                    );
                    assert!(!message.contains("hunter2"), "{message}");
                }
            }
        }
    }

    #[test]
    fn a_string_that_names_no_store_is_invalid_input() {
        let error = check_store("oracle://h/db").unwrap_err();
        assert!(
            matches!(error, OpenStoreError::Url(UrlError::UnknownScheme { .. })),
            "{error:?}"
        );
    }

    #[test]
    fn a_url_with_a_password_is_shown_without_it() {
        let spec = "redis://:hunter2@127.0.0.1:6379";
        assert_eq!(
            display_store(spec).as_deref(),
            Some("redis://127.0.0.1:6379")
        );
        let command = checkpoint_list_command(spec, "g", "s").unwrap_or_default();
        assert!(!command.contains("hunter2"), "{command}");
        assert!(command.ends_with("# with the password put back in the URL"));
    }
}
