//! Checkpoint stores, logs and subscriptions in one dependency: the contract
//! ([`CheckpointStore`] and the rest of `checkpoint-core`, at this crate's root), the runtime
//! that reads a log from its checkpoints ([`Subscription`], and the [`worker`] and
//! [`committer`] underneath it), one store per backend and one log per source, each behind a
//! feature.
//!
//! A subscription owns its share of a log's partitions through leases in the store, reads each
//! from its checkpoint and hands every entry to your handler; the handler is all you write.
//! With the default features (the SQLite store and the SQLite log) this runs as it is, with
//! nothing to install:
//!
#![cfg_attr(all(feature = "sqlite", feature = "source-sqlite"), doc = "```")]
#![cfg_attr(
    not(all(feature = "sqlite", feature = "source-sqlite")),
    doc = "```ignore"
)]
//! use std::sync::Arc;
//! use std::time::Duration;
//! use checkpoint::source::Entry;
//! use checkpoint::source::sqlite::SqliteSource;
//! use checkpoint::sqlite::SqliteCheckpointStore;
//! use checkpoint::{CheckpointStore, HandlerResult, OnPoison, Retry, Subscription};
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let path = std::env::temp_dir().join(format!("checkpoint-facade-{}.db", std::process::id()));
//! // The log: an event table of 4 partitions.
//! let source = SqliteSource::open(&path, 4).await?;
//! source.migrate().await?;
//! for n in 0..100 {
//!     source.append(n % 4, Some(&format!("invoice-{n}")), b"issued").await?; // 25 per partition
//! }
//!
//! // The store: checkpoints, leases and parked entries, in the same SQLite file.
//! let store = Arc::new(SqliteCheckpointStore::open(&path).await?);
//! store.migrate().await?;
//!
//! // The subscription: leases the 4 partitions, reads each from its checkpoint, retries a
//! // failed entry and parks it after the fifth run, writes gap-free checkpoints.
//! let subscription = Subscription::builder(Arc::clone(&store), Arc::new(source), "billing", "invoices")
//!     .handler(|entry: Arc<Entry>| async move {
//!         let invoice = entry.key.as_deref().unwrap_or("?");
//!         println!("{invoice}: {}", String::from_utf8_lossy(&entry.payload)); // your effect here
//!         HandlerResult::Ok(())
//!     })
//!     .retry(Retry::exponential(Duration::from_millis(100), Duration::from_secs(10)).attempts(5))
//!     .on_poison(OnPoison::park(Arc::clone(&store)))
//!     .start()?;
//! # while subscription.stats().handled < 100 {
//! #     tokio::time::sleep(Duration::from_millis(5)).await;
//! # }
//!
//! subscription.shutdown().await?; // hands every partition over, then leaves
//! assert_eq!(store.load("billing", "invoices", 3).await?, Some(26)); // where the next owner resumes
//! # for suffix in ["", "-wal", "-shm"] {
//! #     let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
//! # }
//! # Ok(()) }
//! ```
//!
//! A program adds `tokio` itself, for its runtime (`#[tokio::main]`): this crate does not
//! choose one for it.
//!
//! # What is where
//!
//! | path | what | crate |
//! | --- | --- | --- |
//! | the root: [`CheckpointStore`], [`ExclusiveCheckpointStore`], [`LeaseStore`], [`CheckpointAdmin`], [`Checkpoint`], [`Error`], [`InMemoryCheckpointStore`], …; the modules [`door`], [`lease`], [`parked`], [`transactional`], … | the contract every store keeps, the one error type, the in-memory store, the door a backend of your own implements | `checkpoint-core` |
//! | [`source`]: [`Source`](source::Source), [`Entry`](source::Entry), [`InMemorySource`](source::InMemorySource); `source::sqlite`, … | the contract of logs, and one module per log turned on | `checkpoint-core`, `checkpoint-source-*` |
//! | [`Subscription`], [`HandlerResult`], [`HandlerError`], [`OnPoison`], [`Retry`], [`SubscriptionError`]; the rest in [`subscription`] | a handler is all you write: reads, retries, poison entries, lag, handovers | `checkpoint-subscription` |
//! | [`worker`] | partitions owned through leases, balanced, handed over: for a read loop of your own | `checkpoint-worker` |
//! | [`committer`] | out-of-order completions in, gap-free checkpoints out | `checkpoint-committer` |
//! | `sqlite`, `postgres`, `mysql`, `redis`, `dynamodb` | the stores, one module per backend turned on | `checkpoint-<backend>` |
//! | `connect` | any store turned on from one URL (`sqlite:PATH`, `postgres://…`, …) | `checkpoint-connect` |
//!
//! # Features
//!
//! | feature | brings | default |
//! | --- | --- | --- |
//! | `sqlite` | `checkpoint::sqlite`: the embedded store on a file (sqlx, SQLite compiled in) | yes |
//! | `source-sqlite` | `checkpoint::source::sqlite`: a log in an SQLite event table | yes |
//! | `postgres` | `checkpoint::postgres`: PostgreSQL (sqlx's driver) | |
//! | `mysql` | `checkpoint::mysql`: MySQL 8 and MariaDB 10.6+ (sqlx's driver) | |
//! | `redis` | `checkpoint::redis`: Redis and Redis Cluster (redis-rs) | |
//! | `dynamodb` | `checkpoint::dynamodb`: DynamoDB (the AWS SDK) | |
//! | `source-postgres` | `checkpoint::source::postgres`: your PostgreSQL event table | |
//! | `source-nats` | `checkpoint::source::nats`: a NATS JetStream stream (async-nats) | |
//! | `source-kafka` | `checkpoint::source::kafka`: a Kafka topic, with every compression Kafka has (lz4 and zstd compile C code) | |
//! | `connect` | `checkpoint::connect`: opens from its URL each store turned on above, and only those | |
//! | `tls` | TLS (rustls) for the PostgreSQL, MySQL and Redis stores turned on, and for `connect` | |
//! | `metrics` | the subscription's, worker's and committer's figures through the `metrics` facade | |
//!
//! **Why SQLite alone by default.** The default is what the example above needs and nothing
//! else: a store and a log in one local file, so a first program runs with no server to
//! install, and its first build compiles one database library (SQLite, shared by the store and
//! the log) rather than every client of every backend. Each other backend is a client library a
//! program that does not use it should not compile: sqlx's PostgreSQL or MySQL driver,
//! redis-rs, the AWS SDK, async-nats, a Kafka protocol crate with its compression codecs. A
//! program on other backends turns the default off and names its own:
//!
//! ```toml
//! checkpoint = { version = "0.1", default-features = false, features = ["postgres", "source-kafka"] }
//! ```
//!
//! With `default-features = false` and no feature at all, the crate is the contract and the
//! runtime alone, for a store or a log of your own (see [`door`]).
//!
//! The Kafka log keeps its own crate's defaults (every compression), as a reader must
//! decompress whatever its producers chose. A program whose producers are known not to
//! compress depends on `checkpoint-source-kafka` itself, with `default-features = false`,
//! instead of this crate's `source-kafka`.
//!
//! The crates behind the modules are published on their own too (`checkpoint-core`,
//! `checkpoint-postgres`, …), each with its own documentation: the guarantees, costs and faults
//! of each store are in its crate's doc, which this crate's modules lead to.

#[doc(inline)]
pub use checkpoint_core::*;

pub use checkpoint_committer as committer;
pub use checkpoint_subscription as subscription;
pub use checkpoint_worker as worker;

/// The subscription's types a program names most: see [`subscription`] for the rest.
pub use checkpoint_subscription::{
    HandlerError, HandlerResult, OnPoison, Retry, Subscription, SubscriptionError,
};

#[cfg(feature = "sqlite")]
pub use checkpoint_sqlite as sqlite;

#[cfg(feature = "postgres")]
pub use checkpoint_postgres as postgres;

#[cfg(feature = "mysql")]
pub use checkpoint_mysql as mysql;

#[cfg(feature = "redis")]
pub use checkpoint_redis as redis;

#[cfg(feature = "dynamodb")]
pub use checkpoint_dynamodb as dynamodb;

#[cfg(feature = "connect")]
pub use checkpoint_connect as connect;

pub mod source {
    //! Logs: the contract a log keeps ([`Source`], [`Entry`], [`InMemorySource`], from
    //! `checkpoint-core`) and one module per log turned on: `sqlite` (feature `source-sqlite`),
    //! `postgres` (`source-postgres`), `nats` (`source-nats`), `kafka` (`source-kafka`).

    pub use checkpoint_core::source::*;

    #[cfg(feature = "source-sqlite")]
    pub use checkpoint_source_sqlite as sqlite;

    #[cfg(feature = "source-postgres")]
    pub use checkpoint_source_postgres as postgres;

    #[cfg(feature = "source-nats")]
    pub use checkpoint_source_nats as nats;

    #[cfg(feature = "source-kafka")]
    pub use checkpoint_source_kafka as kafka;
}

/// The crate's README, compiled as a doc test (it needs the default features).
#[cfg(all(doctest, feature = "sqlite", feature = "source-sqlite"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
