//! A Redis checkpoint store: exact 64-bit positions, one server-side Lua script per write,
//! on a single server or a Redis Cluster.
//!
//! [`RedisCheckpointStore`] implements [`CheckpointStore`](checkpoint_core::CheckpointStore)
//! and [`ExclusiveCheckpointStore`](checkpoint_core::ExclusiveCheckpointStore) on redis-rs
//! (async, tokio) over the connection you already have: a
//! [`ConnectionManager`](redis::aio::ConnectionManager) for one server, a
//! [`ClusterConnection`](redis::cluster_async::ClusterConnection) for a cluster
//! ([`RedisClusterCheckpointStore`]), or any clonable async connection.
//!
//! ```no_run
//! # async fn example() -> Result<(), checkpoint_core::Error> {
//! use std::time::Duration;
//! use checkpoint_core::{CheckpointStore, ExclusiveCheckpointStore, Fingerprint};
//! use checkpoint_redis::{RedisCheckpointStore, RedisClusterCheckpointStore};
//!
//! let store = RedisCheckpointStore::connect("redis://127.0.0.1:6379")
//!     .await?
//!     .with_key_prefix("billing-service")?
//!     .with_timeout(Duration::from_secs(2));
//! store.save("billing", "invoices", 0, 42).await?;
//! store.save("billing", "invoices", 0, 17).await?; // a zombie's late save: ignored
//! assert_eq!(store.load("billing", "invoices", 0).await?, Some(42));
//!
//! // The same store on a cluster, or over a connection of your own:
//! let cluster = RedisClusterCheckpointStore::connect_cluster([
//!     "redis://127.0.0.1:7101",
//!     "redis://127.0.0.1:7102",
//! ])
//! .await?;
//! let fingerprint = Fingerprint::from_bytes([0; 32]);
//! let position = cluster.claim("billing", "ledger", 0, fingerprint, 0).await?;
//! cluster.advance("billing", "ledger", 0, position, position + 100).await?;
//! # Ok(()) }
//! ```
//!
//! # Key layout
//!
//! **One hash per group**, so that a group lives in one cluster slot and `list` reads one key:
//!
//! | what | form | example |
//! | --- | --- | --- |
//! | key | `<prefix>:{<group, with % → %25 and } → %7D>}` | `checkpoint:{billing}` |
//! | field | `<partition>:<subscription>` | `3:invoices` |
//! | value, monotonic | `<position>` | `9007199254740993` |
//! | value, claimed | `<position>\|<fingerprint, 64 lowercase hex>` | `42\|9f86d0…` |
//!
//! - The key's hash tag (what Redis Cluster hashes: the text between the first `{` and the
//!   next `}`) is exactly the escaped group. The prefix may not hold braces (see
//!   [`with_key_prefix`](RedisCheckpointStore::with_key_prefix)), so the first `{` is the
//!   store's; the escaped group holds no `}`, so the next `}` is the store's closing one. A
//!   group may contain `{`, `}`, `:` or anything else: the tag stays deterministic and never
//!   empty, and percent-escaping (of `%` too) is injective, so two groups never share a key.
//!   The escape keeps keys readable in `redis-cli`, which a digest of the group would not.
//! - The field starts with the partition in decimal, which holds no `:`, so the first `:`
//!   always ends it: no two (subscription, partition) pairs share a field whatever the
//!   subscription contains.
//! - Exclusive checkpoints live in the same fields, so `list` and `load` see them; a monotonic
//!   `save` keeps their fingerprint.
//! - Everything else in a group's hash is an error ([`UnexpectedData`]): give each application
//!   its own prefix.
//!
//! # Exact positions
//!
//! Lua numbers are doubles, exact only up to 2^53, and positions go up to `i64::MAX`. The
//! scripts therefore never turn a position into a number: the client sends decimal strings
//! without leading zeros, a save compares them by length and then byte by byte (which is
//! numeric order for such strings), and an advance compares the stored string with `from`
//! exactly.
//!
//! # Operations and round trips
//!
//! | operation | on the server | round trips |
//! | --- | --- | --- |
//! | `save` | `save.lua`: `HGET`, then `HSET` if ahead | 1 |
//! | `save_all` | `save_all.lua`, one call per [`SAVE_ALL_CHUNK`] (1,000) distinct keys | ⌈distinct keys / 1,000⌉ |
//! | `load` | `HGET` | 1 |
//! | `list` | `HSCAN … COUNT` [`LIST_SCAN_COUNT`], following the cursor to 0 | 1 for a small group, about one per 1,000 checkpoints for a large one |
//! | `claim` | `claim.lua` | 1 |
//! | `advance`, [`advance_with`](RedisCheckpointStore::advance_with) | `advance.lua` | 1 |
//!
//! Scripts run with `EVALSHA`; when the server has lost its script cache (a restart, a
//! failover, `SCRIPT FLUSH`) the first call after it sends `EVAL` with the source: one more
//! round trip, once. [`with_replica_ack`](RedisCheckpointStore::with_replica_ack) adds one
//! `WAIT` round trip per write. `save_all` first collapses repeated keys to the highest
//! position, then splits the batch so that one script never holds the single-threaded server
//! for long (a 1,000-entry call measured 1.5 to 8 ms of server time on a busy 2-core test
//! machine; [`with_save_all_chunk`](RedisCheckpointStore::with_save_all_chunk) trades round
//! trips for shorter pauses). Within a chunk the script reads every field with one `HMGET` and
//! writes the moved ones with one `HSET`. A failure between chunks leaves earlier chunks
//! saved, which the contract allows. `list` uses `HSCAN` rather than `HGETALL`
//! for the same reason: a group of a million checkpoints is read in steps, never in one long
//! command, and the duplicates `HSCAN` may return are merged.
//!
//! Every script declares every key it touches in `KEYS`, as Redis Cluster (and
//! Redis-compatible servers) require.
//!
//! # Exclusive checkpoints and "the projection's transaction"
//!
//! `claim` and `advance` are one script each, so each is atomic on the server. Redis has no
//! transaction that spans the caller's own logic, so instead of running `advance` inside the
//! caller's transaction, [`advance_with`](RedisCheckpointStore::advance_with) takes the
//! caller's writes (`HSET key field value`, see [`HashWrite`]) and applies them in the same
//! script, only when the compare-and-set succeeds: the read model and the position commit
//! together or not at all. The writes are decided before the call; on a cluster their keys
//! must be in the group's slot (put [`RedisCheckpointStore::hash_tag`] in them), or the server
//! refuses the call with `CROSSSLOT`.
//!
//! ```no_run
//! # async fn example(store: checkpoint_redis::RedisClusterCheckpointStore)
//! # -> Result<(), checkpoint_core::Error> {
//! use checkpoint_core::ExclusiveCheckpointStore;
//! use checkpoint_redis::HashWrite;
//!
//! let fingerprint = checkpoint_core::Fingerprint::from_bytes([7; 32]);
//! let from = store.claim("billing", "totals", 0, fingerprint, 0).await?;
//! // Same hash tag as the group's checkpoints, so the same cluster slot.
//! let totals = format!("billing-totals:{}", store.hash_tag("billing")?);
//! store
//!     .advance_with("billing", "totals", 0, from, from + 50, &[
//!         HashWrite::new(&totals, "invoices", "1250"),
//!     ])
//!     .await?; // Err(Error::Moved { .. }) if another owner got there first: nothing written
//! # Ok(()) }
//! ```
//!
//! # Durability
//!
//! A checkpoint is as durable as the server makes it; this crate cannot add to that.
//!
//! - **Persistence.** With neither RDB snapshots nor AOF, a restart loses every checkpoint.
//!   With RDB only (`save` rules), a crash loses what was saved since the last snapshot. With
//!   AOF (`appendonly yes`), `appendfsync always` loses nothing acknowledged, `everysec` (the
//!   default) up to about a second of writes, `no` whatever the OS had not flushed. A lost
//!   save moves a checkpoint back, to where it was saved before: the subscription replays
//!   from there (at-least-once), which is safe but repeats work.
//! - **Replication is asynchronous.** A save is acknowledged once the primary has applied it;
//!   a failover to a replica that had not received it loses it, even with AOF on the primary.
//!   [`with_replica_ack`](RedisCheckpointStore::with_replica_ack) (`WAIT`) makes the save
//!   wait until that many replicas have it, which narrows the window but does not close it:
//!   `WAIT` does not make Redis strongly consistent, and a replica that acknowledged may still
//!   lose the write if it fails over before persisting it. On a cluster the same holds per
//!   shard.
//! - For an exclusive checkpoint, a lost advance lets a second owner, or the same one after a
//!   restart, project a batch again: make the read-model writes idempotent, or keep them in
//!   the same script with `advance_with` so that they are lost together with the position.
//!
//! # Errors, timeouts, tracing and secrets
//!
//! Client errors become [`checkpoint_core::Error::Backend`] with the redis-rs error as the
//! source, retryable for I/O errors, dropped connections, `LOADING`, `TRYAGAIN`, `READONLY`
//! and redirects, and not for script errors, wrong types or failed authentication.
//! [`with_timeout`](RedisCheckpointStore::with_timeout) bounds every operation and returns
//! [`checkpoint_core::Error::Timeout`]. Each operation runs in a `debug` span (`redis.save`,
//! `redis.list`, ...) with the group, subscription, partition and batch size. The store's
//! `Debug` shows host and port only, never the connection (whose own `Debug` may show a
//! password), and no error of this crate carries the URL.
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod error;
mod keys;
mod script;
mod store;
#[cfg(feature = "tls-rustls")]
mod tls;

pub use error::{BACKEND, ReplicaAckError, UnexpectedData};
pub use keys::{DEFAULT_KEY_PREFIX, MAX_KEY_PREFIX_BYTES};
pub use store::{
    CONNECTION_TIMEOUT, DEFAULT_TIMEOUT, HashWrite, LIST_SCAN_COUNT, MAX_SAVE_ALL_CHUNK,
    RedisCheckpointStore, RedisClusterCheckpointStore, SAVE_ALL_CHUNK,
};
