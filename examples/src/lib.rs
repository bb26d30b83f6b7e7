//! Shared by the examples: opening a checkpoint store from a URL-like string, and the log they
//! read ([`log`]).
//!
//! | store | meaning | feature |
//! | --- | --- | --- |
//! | `sqlite:<path>` | the embedded SQLite store on a file (created if missing) | always built |
//! | `memory` | in process memory (lost when the process exits) | always built |
//! | `postgres://…` | PostgreSQL | `postgres` |
//! | `redis://…` | Redis | `redis` |
//! | `dynamodb+http://host:port/table` | a local DynamoDB-compatible server with test credentials | `dynamodb` |
//!
//! A real DynamoDB deployment builds its `aws_sdk_dynamodb::Client` with `aws-config` and
//! passes it to `DynamoDbCheckpointStore::new`; the `dynamodb+http` form is for emulators.
//!
//! # Features
//!
//! A plain build has SQLite and the in-memory store only, so the README's first command
//! (`cargo run -p checkpoint-examples --bin quickstart`) compiles no other client library.
//! Every other backend is one feature away: `postgres`, `redis`, `dynamodb`; the quick start's
//! log ([`log`]) in PostgreSQL or NATS JetStream instead of SQLite is `source-postgres` or
//! `source-nats` (`--source postgres://…`, `--source nats://…`); `kit` adds the conformance kit
//! (for `custom_backend`), and `all` turns on all of them:
//!
//! ```text
//! cargo run -p checkpoint-examples --features redis --bin quickstart -- --store redis://127.0.0.1:6379
//! cargo run -p checkpoint-examples --features source-nats --bin quickstart -- --source nats://127.0.0.1:4222
//! cargo run -p checkpoint-examples --features postgres --bin exactly_once_projection
//! cargo run -p checkpoint-examples --features kit --bin custom_backend
//! cargo run -p checkpoint-examples --features all --bin lease_handover -- --store dynamodb+http://127.0.0.1:8765/checkpoints
//! cargo run -p checkpoint-examples --features redis,source-nats --bin subscription_fleet -- --store redis://127.0.0.1:6379 --source nats://127.0.0.1:4222
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

use checkpoint_core::{
    Argument, CheckpointStore, Error, InMemoryCheckpointStore, InvalidInput, InvalidReason,
    LeaseStore,
};
use checkpoint_sqlite::SqliteCheckpointStore;

pub mod log;

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
    /// The store failed to open, or the string names no store.
    #[error(transparent)]
    Store(#[from] Error),
}

/// A backend's feature of this package, and whether this build has it.
type Feature = (&'static str, bool);
const POSTGRES: Feature = ("postgres", cfg!(feature = "postgres"));
const REDIS: Feature = ("redis", cfg!(feature = "redis"));
const DYNAMODB: Feature = ("dynamodb", cfg!(feature = "dynamodb"));

/// How each store's string starts, and the feature that builds its backend (`None`: always
/// built).
const STORES: &[(&str, Option<Feature>)] = &[
    ("sqlite:", None),
    ("postgres://", Some(POSTGRES)),
    ("postgresql://", Some(POSTGRES)),
    ("redis://", Some(REDIS)),
    ("rediss://", Some(REDIS)),
    ("dynamodb+http://", Some(DYNAMODB)),
];

/// Checks, before anything runs, that `spec` names a store (see the crate doc) whose backend
/// this build has.
///
/// # Errors
///
/// [`OpenStoreError::NotBuilt`] naming the feature to add, or invalid input for a string that
/// names no store.
pub fn check_store(spec: &str) -> Result<(), OpenStoreError> {
    if spec == "memory" {
        return Ok(());
    }
    match STORES.iter().find(|(start, _)| spec.starts_with(start)) {
        None => Err(unknown_store()),
        Some((_, None | Some((_, true)))) => Ok(()),
        Some((scheme, Some((feature, false)))) => Err(OpenStoreError::NotBuilt {
            scheme,
            feature,
            example: example_name(),
        }),
    }
}

/// What every store of the examples offers: checkpoints and leases.
pub trait ExampleStore: CheckpointStore + LeaseStore {}

impl<S: CheckpointStore + LeaseStore + ?Sized> ExampleStore for S {}

/// Opens the store `spec` names (see the crate doc), creating its table where it has one.
///
/// # Errors
///
/// [`OpenStoreError::NotBuilt`] for a backend this build left out; the store's own error when
/// it cannot be opened or `spec` names no store.
pub async fn open_store(spec: &str) -> Result<Arc<dyn ExampleStore>, OpenStoreError> {
    check_store(spec)?;
    if spec == "memory" {
        return Ok(Arc::new(InMemoryCheckpointStore::new()));
    }
    if let Some(path) = spec.strip_prefix("sqlite:") {
        let store = SqliteCheckpointStore::open(path).await?;
        store.migrate().await?;
        return Ok(Arc::new(store));
    }
    #[cfg(feature = "postgres")]
    if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
        let store = checkpoint_postgres::PostgresCheckpointStore::connect(spec).await?;
        store.migrate().await?;
        return Ok(Arc::new(store));
    }
    #[cfg(feature = "redis")]
    if spec.starts_with("redis://") || spec.starts_with("rediss://") {
        let store = checkpoint_redis::RedisCheckpointStore::connect(spec).await?;
        return Ok(Arc::new(store));
    }
    #[cfg(feature = "dynamodb")]
    if let Some(rest) = spec.strip_prefix("dynamodb+http://") {
        return Ok(Arc::new(open_dynamodb(rest).await?));
    }
    // `check_store` has refused every other string already.
    Err(unknown_store())
}

/// A DynamoDB-compatible emulator at `host:port/table`, with test credentials.
#[cfg(feature = "dynamodb")]
async fn open_dynamodb(
    host_and_table: &str,
) -> Result<checkpoint_dynamodb::DynamoDbCheckpointStore, Error> {
    use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};

    let (host, table) = host_and_table
        .split_once('/')
        .unwrap_or((host_and_table, "checkpoints"));
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .endpoint_url(format!("http://{host}"))
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "examples"))
        .build();
    let store = checkpoint_dynamodb::DynamoDbCheckpointStore::new(
        aws_sdk_dynamodb::Client::from_conf(config),
    )
    .with_table(table)?;
    store.create_table().await?;
    Ok(store)
}

fn unknown_store() -> OpenStoreError {
    let invalid = InvalidInput::new(
        Argument::Setting("store"),
        InvalidReason::Malformed {
            expected: "sqlite:<path>, postgres://…, redis://…, dynamodb+http://host:port/table or memory",
        },
    );
    OpenStoreError::Store(invalid.into())
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
    if spec == "memory" || spec.starts_with("sqlite:") || spec.starts_with("dynamodb+http://") {
        // A path, or an emulator's host and table: no password can be in them.
        return Some(spec.to_owned());
    }
    redact::display_url(spec)
}

/// The `checkpoint` command line that lists `subscription` of `group` in the store `spec`
/// names (see the crate doc), without any password; `None` for the in-memory store.
pub fn checkpoint_list_command(spec: &str, group: &str, subscription: &str) -> Option<String> {
    let list = format!("list {group} --subscription {subscription}");
    if let Some(rest) = spec.strip_prefix("dynamodb+http://") {
        let (host, table) = rest.split_once('/').unwrap_or((rest, "checkpoints"));
        return Some(format!(
            "AWS_ENDPOINT_URL_DYNAMODB=http://{host} AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=test \
             AWS_SECRET_ACCESS_KEY=test checkpoint --url dynamodb://{table} {list}"
        ));
    }
    if spec == "memory" {
        return None;
    }
    let url = display_store(spec)?;
    let note = if spec.starts_with("sqlite:") || redact::secrets_of(spec).is_empty() {
        ""
    } else {
        "   # with the password put back in the URL"
    };
    Some(format!("checkpoint --url '{url}' {list}{note}"))
}

/// Hiding the password of a `postgres://` or `redis://` URL: the `checkpoint` command's own
/// code, so that it is written once.
#[cfg(any(feature = "postgres", feature = "redis"))]
mod redact {
    pub use checkpoint_store_cli::redact::{display_url, secrets_of};
}

/// Without the `postgres` and `redis` features the examples open no store whose string can
/// hold a password, and `check_store` refuses those URLs before anything is printed.
#[cfg(not(any(feature = "postgres", feature = "redis")))]
mod redact {
    /// Shows nothing of a URL this build cannot open.
    pub fn display_url(_url: &str) -> Option<String> {
        None
    }

    /// No secret to hide: see the module doc.
    pub fn secrets_of(_url: &str) -> Vec<String> {
        Vec::new()
    }
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
                "redis://:hunter2@h",
                "redis://",
                "redis",
                cfg!(feature = "redis"),
            ),
            (
                "dynamodb+http://h:1/t",
                "dynamodb+http://",
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
        let error = check_store("mysql://h/db").unwrap_err();
        assert!(
            matches!(error, OpenStoreError::Store(Error::InvalidInput(_))),
            "{error:?}"
        );
    }

    #[cfg(any(feature = "postgres", feature = "redis"))]
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
