//! The examples' logs: an event log of a few partitions, written once and read from each
//! checkpoint through a [`Source`], on the backend a URL-like string names.
//!
//! | source | the log | feature |
//! | --- | --- | --- |
//! | `sqlite:<path>` | an SQLite event table in that file (`checkpoint-source-sqlite`) | always built |
//! | `postgres://…` | a PostgreSQL event table (`checkpoint-source-postgres`) | `source-postgres` |
//! | `nats://…` | a NATS JetStream stream, a subject per partition (`checkpoint-source-nats`) | `source-nats` |
//! | `kafka://HOST:PORT[,HOST:PORT]` | a Kafka topic, the log's name as the topic (`checkpoint-source-kafka`) | `source-kafka` |
//!
//! Each log has a name of its own (the table's, the stream's, or the topic's), so that every
//! run writes a new one beside the others; [`remove_log`] drops a table or a stream from its
//! server, and leaves a topic where it is (see there).

use std::sync::Arc;

use checkpoint_core::source::{Source, SourceError};
use checkpoint_source_sqlite::SqliteSource;

/// What the examples' log helpers fail with.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// An entry to append: its key and its payload.
pub type NewEntry = (String, Vec<u8>);

/// Why an example could not use its source.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenSourceError {
    /// The source's backend was left out of this build: the package's feature `feature` adds it.
    #[error(
        "{scheme}… needs the examples' `{feature}` feature: cargo run -p checkpoint-examples \
         --features {feature} --bin {example} -- --source {scheme}…"
    )]
    NotBuilt {
        /// How the source's URL starts (`nats://`), never more of it: it may hold a password.
        scheme: &'static str,
        /// The feature of this package that builds the backend.
        feature: &'static str,
        /// The example that was run, so that the message is the command to run instead.
        example: String,
    },
    /// The string names no source.
    #[error(transparent)]
    Source(#[from] SourceError),
}

/// A source backend's feature of this package, and whether this build has it.
type Feature = (&'static str, bool);
const POSTGRES: Feature = ("source-postgres", cfg!(feature = "source-postgres"));
const NATS: Feature = ("source-nats", cfg!(feature = "source-nats"));
const KAFKA: Feature = ("source-kafka", cfg!(feature = "source-kafka"));

/// How each source's string starts, and the feature that builds its backend (`None`: always
/// built).
const SOURCES: &[(&str, Option<Feature>)] = &[
    ("sqlite:", None),
    ("postgres://", Some(POSTGRES)),
    ("postgresql://", Some(POSTGRES)),
    ("nats://", Some(NATS)),
    ("kafka://", Some(KAFKA)),
];

/// Checks, before anything runs, that `spec` names a source (see the module doc) whose backend
/// this build has.
///
/// # Errors
///
/// [`OpenSourceError::NotBuilt`] naming the feature to add, or invalid input for a string that
/// names no source.
pub fn check_source(spec: &str) -> Result<(), OpenSourceError> {
    match SOURCES.iter().find(|(start, _)| spec.starts_with(start)) {
        None => Err(unknown_source().into()),
        Some((_, None | Some((_, true)))) => Ok(()),
        Some((scheme, Some((feature, false)))) => Err(OpenSourceError::NotBuilt {
            scheme,
            feature,
            example: crate::example_name(),
        }),
    }
}

/// `spec` as the examples print it: an SQLite path as it is, a URL without its user
/// information (a password, or a NATS token written as the user name).
pub fn display_source(spec: &str) -> String {
    let Some((scheme, rest)) = spec.split_once("://") else {
        return spec.to_owned();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
        None => spec.to_owned(),
    }
}

fn unknown_source() -> SourceError {
    SourceError::InvalidInput {
        argument: "source",
        reason: "expected sqlite:<path>, postgres://…, nats://… or kafka://…".into(),
    }
}

/// Creates the log `name` of `partitions` partitions in the source `spec` names (a table, a
/// stream, or a topic) and appends `entries[p]` to partition `p`, in order; on SQL sources each partition
/// in one transaction. Returns the position of each partition's last entry (`None`: none).
///
/// # Errors
///
/// When the source cannot be reached or refuses the log.
pub async fn create_log(
    spec: &str,
    name: &str,
    partitions: u32,
    entries: &[Vec<NewEntry>],
) -> Result<Vec<Option<u64>>, BoxError> {
    check_source(spec)?;
    if let Some(path) = spec.strip_prefix("sqlite:") {
        let source = SqliteSource::open(path, partitions)
            .await?
            .with_table(name)?;
        source.migrate().await?;
        let mut last = Vec::new();
        for (partition, entries) in (0..partitions).zip(entries) {
            let mut tx = source.pool().begin_with("BEGIN IMMEDIATE").await?;
            let mut position = None;
            for (key, payload) in entries {
                position = Some(
                    source
                        .append_in(&mut tx, partition, Some(key), payload)
                        .await?,
                );
            }
            tx.commit().await?;
            last.push(position);
        }
        source.pool().close().await;
        return Ok(last);
    }
    #[cfg(feature = "source-postgres")]
    if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
        return postgres::create(spec, name, partitions, entries).await;
    }
    #[cfg(feature = "source-nats")]
    if spec.starts_with("nats://") {
        return nats::create(spec, name, partitions, entries).await;
    }
    #[cfg(feature = "source-kafka")]
    if spec.starts_with("kafka://") {
        return kafka::create(spec, name, partitions, entries).await;
    }
    // `check_source` has refused every other string already.
    Err(unknown_source().into())
}

/// Opens the log `name` of `partitions` partitions that [`create_log`] made in the source
/// `spec` names.
///
/// # Errors
///
/// When the source cannot be reached; a missing log fails at the first read.
pub async fn open_log(
    spec: &str,
    name: &str,
    partitions: u32,
) -> Result<Arc<dyn Source>, BoxError> {
    check_source(spec)?;
    if let Some(path) = spec.strip_prefix("sqlite:") {
        let source = SqliteSource::open(path, partitions)
            .await?
            .with_table(name)?;
        return Ok(Arc::new(source));
    }
    #[cfg(feature = "source-postgres")]
    if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
        return Ok(Arc::new(postgres::open(spec, name, partitions).await?));
    }
    #[cfg(feature = "source-nats")]
    if spec.starts_with("nats://") {
        let config = checkpoint_source_nats::NatsSourceConfig::new(name, partitions)?;
        let source = checkpoint_source_nats::NatsSource::connect(spec, config).await?;
        return Ok(Arc::new(source));
    }
    #[cfg(feature = "source-kafka")]
    if spec.starts_with("kafka://") {
        return Ok(Arc::new(open_kafka(spec, name, partitions).await?));
    }
    Err(unknown_source().into())
}

/// Opens the topic `name` that [`create_log`] made on the brokers `spec` names
/// (`kafka://HOST:PORT[,HOST:PORT]`), as its own type: what appends to it.
///
/// # Errors
///
/// For a URL that names more than brokers, no broker that answers, or a missing topic.
#[cfg(feature = "source-kafka")]
pub async fn open_kafka(
    spec: &str,
    name: &str,
    partitions: u32,
) -> Result<checkpoint_source_kafka::KafkaSource, BoxError> {
    let config = kafka::config(spec, name, partitions)?;
    Ok(checkpoint_source_kafka::KafkaSource::connect(config).await?)
}

/// Drops the log `name` from a server (the table, or the stream), so that runs do not pile
/// up there; an SQLite log stays in its file. Returns what it did, for the output (`None`:
/// nothing to say).
///
/// A Kafka topic is left on the brokers, and the line says so: tansu 0.6, the test broker,
/// deletes every topic of the cluster on a DeleteTopics of one, and crashes its storage
/// (every later request fails until a restart) on a fetch of a topic that no longer exists,
/// which the readers' last waits (fetches the broker holds for up to 5 s, those of killed
/// processes too) may still make when a run ends (docs/kafka-broker.md). Delete it with the
/// cluster's own tooling on a real Kafka.
///
/// # Errors
///
/// When the server cannot be reached or refuses.
pub async fn remove_log(spec: &str, name: &str) -> Result<Option<String>, BoxError> {
    check_source(spec)?;
    #[cfg(feature = "source-postgres")]
    if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
        postgres::remove(spec, name).await?;
        return Ok(Some(format!("log {name} dropped from the server")));
    }
    #[cfg(feature = "source-nats")]
    if spec.starts_with("nats://") {
        let client = async_nats::connect(spec).await?;
        async_nats::jetstream::new(client)
            .delete_stream(name)
            .await?;
        return Ok(Some(format!("log {name} dropped from the server")));
    }
    if spec.starts_with("kafka://") {
        return Ok(Some(format!(
            "topic {name} left on the brokers: a Kafka topic is not deleted after a run (see \
             checkpoint_examples::log::remove_log)"
        )));
    }
    let _ = name;
    Ok(None)
}

#[cfg(feature = "source-postgres")]
mod postgres {
    use checkpoint_source_postgres::PostgresSource;
    use sqlx::postgres::PgPoolOptions;

    use super::{BoxError, NewEntry};

    pub(super) async fn open(
        spec: &str,
        name: &str,
        partitions: u32,
    ) -> Result<PostgresSource, BoxError> {
        let pool = PgPoolOptions::new()
            .max_connections(4)
            .connect(spec)
            .await?;
        Ok(PostgresSource::new(pool, partitions).with_table(name)?)
    }

    /// The table, migrated, and each partition's entries appended in one transaction.
    pub(super) async fn create(
        spec: &str,
        name: &str,
        partitions: u32,
        entries: &[Vec<NewEntry>],
    ) -> Result<Vec<Option<u64>>, BoxError> {
        let source = open(spec, name, partitions).await?;
        source.migrate().await?;
        let mut last = Vec::new();
        for (partition, entries) in (0..partitions).zip(entries) {
            let mut tx = source.pool().begin().await?;
            let mut position = None;
            for (key, payload) in entries {
                position = Some(
                    source
                        .append_in(&mut tx, partition, Some(key), payload)
                        .await?,
                );
            }
            tx.commit().await?;
            last.push(position);
        }
        source.pool().close().await;
        Ok(last)
    }

    /// What `migrate` made (the crate doc's schema): the table, its partition count's table
    /// and the notifying function (the trigger goes with the table).
    pub(super) async fn remove(spec: &str, name: &str) -> Result<(), BoxError> {
        let pool = PgPoolOptions::new()
            .max_connections(1)
            .connect(spec)
            .await?;
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
            r#"DROP TABLE IF EXISTS "{name}", "{name}_source"; DROP FUNCTION IF EXISTS "{name}_notify"()"#
        )))
        .execute(&pool)
        .await?;
        pool.close().await;
        Ok(())
    }
}

#[cfg(feature = "source-nats")]
mod nats {
    use checkpoint_source_nats::{NatsSource, NatsSourceConfig};

    use super::{BoxError, NewEntry};

    /// The stream (subjects `<name>.<partition>`), and the entries published one by one, each
    /// acknowledged (stored) before the next.
    pub(super) async fn create(
        spec: &str,
        name: &str,
        partitions: u32,
        entries: &[Vec<NewEntry>],
    ) -> Result<Vec<Option<u64>>, BoxError> {
        let context = async_nats::jetstream::new(async_nats::connect(spec).await?);
        let config = NatsSourceConfig::new(name, partitions)?;
        NatsSource::create_stream(&context, &config).await?;
        let source = NatsSource::new_with_config(context, config).await?;
        let mut last = Vec::new();
        for (partition, entries) in (0..partitions).zip(entries) {
            let mut position = None;
            for (key, payload) in entries {
                position = Some(source.append(partition, Some(key), payload.clone()).await?);
            }
            last.push(position);
        }
        Ok(last)
    }
}

#[cfg(feature = "source-kafka")]
mod kafka {
    use checkpoint_core::source::SourceError;
    use checkpoint_source_kafka::{KafkaSource, KafkaSourceConfig};

    use super::{BoxError, NewEntry};

    /// The source of `spec`, `kafka://HOST:PORT[,HOST:PORT…]`, over the topic `name`: a log's
    /// name is its topic, so the URL names the brokers only (unlike the crate's own URL,
    /// `kafka://HOST:PORT/TOPIC?partitions=N`, which names one topic).
    pub(super) fn config(
        spec: &str,
        name: &str,
        partitions: u32,
    ) -> Result<KafkaSourceConfig, SourceError> {
        let hosts = spec.strip_prefix("kafka://").unwrap_or(spec);
        let hosts = hosts.strip_suffix('/').unwrap_or(hosts);
        if hosts.contains(['/', '?']) {
            return Err(SourceError::InvalidInput {
                argument: "source",
                reason: "kafka://HOST:PORT[,HOST:PORT]: the brokers only, each log is a topic                          of its own, named after the log"
                    .into(),
            });
        }
        KafkaSourceConfig::new(hosts.split(','), name, partitions)
    }

    /// The topic (one replica: a test broker), and the entries produced one by one, each
    /// acknowledged before the next.
    pub(super) async fn create(
        spec: &str,
        name: &str,
        partitions: u32,
        entries: &[Vec<NewEntry>],
    ) -> Result<Vec<Option<u64>>, BoxError> {
        let config = config(spec, name, partitions)?;
        KafkaSource::create_topic(&config, 1).await?;
        let source = KafkaSource::connect(config).await?;
        let mut last = Vec::new();
        for (partition, entries) in (0..partitions).zip(entries) {
            let mut position = None;
            for (key, payload) in entries {
                position = Some(source.append(partition, Some(key), payload.clone()).await?);
            }
            last.push(position);
        }
        Ok(last)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn the_url_names_the_brokers_and_the_log_the_topic() {
            for spec in ["kafka://a:9092,b:9093", "kafka://a:9092,b:9093/"] {
                let config = config(spec, "quickstart_1", 4).expect(spec);
                assert_eq!(config.bootstrap(), ["a:9092", "b:9093"]);
                assert_eq!(config.topic(), "quickstart_1");
                assert_eq!(config.partitions(), 4);
            }
            for (spec, says) in [
                ("kafka://a:9092/orders", "the brokers only"),
                ("kafka://a:9092?partitions=2", "the brokers only"),
                ("kafka://a", "not host:port"),
            ] {
                let error = config(spec, "log", 1).expect_err(spec).to_string();
                assert!(error.contains(says), "{spec}: {error}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_is_shown_without_its_user_information() {
        for (spec, shown) in [
            ("sqlite:/tmp/a@b.db", "sqlite:/tmp/a@b.db"),
            ("nats://s3cret@127.0.0.1:4222", "nats://127.0.0.1:4222"),
            (
                "postgres://u:p%40ss@h:5432/db?x=1",
                "postgres://h:5432/db?x=1",
            ),
            ("nats://127.0.0.1:4222", "nats://127.0.0.1:4222"),
            ("kafka://a:9092,b:9093", "kafka://a:9092,b:9093"),
            ("postgres://h/db@x", "postgres://h/db@x"),
        ] {
            assert_eq!(display_source(spec), shown);
        }
    }

    #[test]
    fn a_backend_left_out_names_its_feature_and_never_the_url() {
        for (spec, feature, is_built) in [
            (
                "postgres://u:hunter2@h/db",
                "source-postgres",
                cfg!(feature = "source-postgres"),
            ),
            (
                "nats://u:hunter2@h:4222",
                "source-nats",
                cfg!(feature = "source-nats"),
            ),
            (
                "kafka://u:hunter2@h:9092",
                "source-kafka",
                cfg!(feature = "source-kafka"),
            ),
        ] {
            match check_source(spec) {
                Ok(()) => assert!(is_built, "{spec}"),
                Err(error) => {
                    assert!(!is_built, "{spec}");
                    let message = error.to_string();
                    assert!(
                        message.contains(&format!("--features {feature} --bin ")),
                        "{message}"
                    );
                    assert!(!message.contains("hunter2"), "{message}");
                }
            }
        }
        assert!(check_source("sqlite:/tmp/log.db").is_ok());
        assert!(matches!(
            check_source("redis://h"),
            Err(OpenSourceError::Source(SourceError::InvalidInput { .. }))
        ));
    }
}
