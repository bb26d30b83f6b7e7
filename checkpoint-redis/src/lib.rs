//! A Redis checkpoint store: exact 64-bit positions, one server-side Lua script per write,
//! on a single server or a Redis Cluster.
//!
//! [`RedisCheckpointStore`] implements [`CheckpointStore`](checkpoint_core::CheckpointStore),
//! [`ExclusiveCheckpointStore`](checkpoint_core::ExclusiveCheckpointStore), the operations
//! API [`CheckpointAdmin`](checkpoint_core::CheckpointAdmin), partition leases
//! [`LeaseStore`](checkpoint_core::LeaseStore) (see [Leases](#leases)) and parked entries
//! [`ParkedStore`](checkpoint_core::parked::ParkedStore) (see
//! [Parked entries](#parked-entries)) on redis-rs (async, tokio), over
//! a [`ConnectionManager`](redis::aio::ConnectionManager) for one server, a
//! [`ClusterConnection`](redis::cluster_async::ClusterConnection) for a cluster
//! ([`RedisClusterCheckpointStore`]), or any clonable async connection of yours.
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
//!     .with_timeout(Duration::from_secs(2))?;
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
//! | retired subscriptions, a set beside the hash | `<prefix>:{<escaped group>}:retired` | `checkpoint:{billing}:retired` |
//! | parked entries, a hash beside it ([below](#parked-entries)) | `<prefix>:{<escaped group>}:parked` | `checkpoint:{billing}:parked` |
//!
//! - The key's cluster hash tag (from the first `{` to the next `}`) is exactly the escaped
//!   group: the prefix may hold no brace
//!   ([`with_key_prefix`](RedisCheckpointStore::with_key_prefix)) and the escape leaves no `}`.
//!   The escape is injective, so two groups never share a key, and readable in `redis-cli`.
//!   `groups` reads each group back from its key and skips any other key under the prefix.
//! - The field starts with the partition in decimal, so its first `:` ends it, whatever the
//!   subscription holds. Exclusive checkpoints live in the same fields, so `list` and `load`
//!   see them, and a monotonic `save` keeps their fingerprint.
//! - The retired set has the group's hash tag: every script reaches it in the group's slot.
//!   Redis deletes an empty hash or set, so a group's keys exist exactly while it has a
//!   checkpoint or a retired subscription.
//! - Anything else in a group's hash (a foreign field, a value that is not a checkpoint, a
//!   position above `i64::MAX`) is a non-retryable
//!   [`Error::Backend`](checkpoint_core::Error::Backend) whose source is a
//!   [`checkpoint_core::UnexpectedValue`] ([`checkpoint_core::stored`]'s rules), and a script
//!   refuses to write over it. Give each application its own prefix.
//!
//! # Guarantees
//!
//! - **Atomic writes.** Every write of a checkpoint or a lease is one script of the crate's
//!   `lua/` directory (each after the shared helpers of `lua/positions.lua`, its header
//!   naming its `KEYS` and `ARGV`), which the server runs whole: a save only moves forward,
//!   `claim` and `advance` are a compare-and-set, `start_at` writes every partition or none.
//!   Every script declares every key it touches, as Redis Cluster and Redis-compatible servers
//!   require. (Parked entries are written by single commands and one script of their own:
//!   see [Parked entries](#parked-entries).)
//! - **Exact positions.** Lua numbers are doubles, exact only up to 2^53. The scripts keep
//!   positions as decimal strings without leading zeros and compare them by length first,
//!   then, for equal lengths, as numbers of at most 15 digits (one for a position below
//!   10^15, blocks of 15 digits above), each below 2^53 and so exact: positions are exact up
//!   to `i64::MAX`. Never with Lua's string `<`, which goes through the server's locale
//!   (`strcoll`: Redis sets `LC_COLLATE` from its environment).
//! - **Tombstones.** `retire` adds the name to the group's retired set and deletes the
//!   subscription's checkpoints in one script; `save`, `save_all` and `claim` check the set
//!   inside their own script (`save` only when the checkpoint does not exist: a retired name
//!   has none, and no script creates one under it, so a save that moves an existing
//!   checkpoint reads one key fewer). Scripts run one at a time, so once `retire` returns nothing
//!   under the name is visible again until `purge`: a save under it returns `Ok` and writes
//!   nothing, `save_all` drops its entries and saves the others, `claim` fails with
//!   [`Error::Retired`](checkpoint_core::Error::Retired), `advance` with
//!   `Error::Moved { current: None }`. `start_at` refuses a retired (`Error::Retired`) or
//!   live (`Error::Exists`) name; `purge` refuses a live one (`Error::NotRetired`) and is `Ok`
//!   on a name with nothing. Saves of an older version of this crate ignore the retired set:
//!   retire a subscription only once every process that may save under it runs this version.
//!
//! # Round trips
//!
//! Counted on the wire by the tests, with the scripts cached on the server:
//!
//! | operation | on the server | round trips |
//! | --- | --- | --- |
//! | `save` | `save.lua` | 1 |
//! | `load` | `HGET` | 1 |
//! | `list`, empty group | `HLEN` | 1 |
//! | `list`, at most [`LIST_HGETALL_MAX`] fields | `HLEN`, `HGETALL` | 2 |
//! | `claim` | `claim.lua` | 1 |
//! | `advance` | `advance.lua` | 1 |
//! | `start_at`, `retire`, `purge` | `start_at.lua`, `retire.lua`, `purge.lua` | 1 |
//! | `retired` | `SMEMBERS` of the retired set | 1 |
//! | `save_all` | `save_all.lua` per [`SAVE_ALL_CHUNK`] distinct keys, in one pipeline | one wait |
//! | every lease operation | its script (see [Leases](#leases)) | 1 |
//! | `park`, `unpark` | `HSET`, `HDEL` of the parked hash | 1 |
//! | `retry_parked` | `retry_parked.lua` | 1 |
//! | `parked` | `HLEN`, then `HGETALL` (`HSCAN` steps above [`LIST_HGETALL_MAX`]), as `list` | 1 empty, 2 |
//!
//! - The tombstone check adds none: a save, `save_all` or `claim` under a retired name is 1.
//!   Nor does [`with_replica_ack`](RedisCheckpointStore::with_replica_ack): each write's `WAIT`
//!   goes in the write's own pipeline, and `save`, `save_all`, `claim` and `advance` stay 1.
//! - `save_all` collapses repeated keys to the highest position and pipelines its chunk calls:
//!   the client waits once for the whole batch (behind a proxy that delays every answer by a
//!   second, ten chunks take one second), while the server runs each chunk as a short script
//!   of its own and serves other clients between them. A chunk that fails does not stop the
//!   others; the first error is returned. A proxy may count the pipeline as more than one
//!   exchange when the server starts answering before the last call has passed it.
//!   [`with_save_all_chunk`](RedisCheckpointStore::with_save_all_chunk) trades the number of
//!   calls for shorter pauses.
//! - `list` reads a group of at most [`LIST_HGETALL_MAX`] fields with one `HGETALL` after its
//!   `HLEN` (a group that grows past it between the two is still read whole, by one `HGETALL`
//!   of a few more); a larger one follows the `HSCAN` cursor, one call per step of about
//!   [`LIST_SCAN_COUNT`] fields, so that no call holds the server for long. `groups` follows
//!   `SCAN … MATCH <prefix>:{* COUNT` [`GROUPS_SCAN_COUNT`] over every key of the server (the
//!   store's and any other), on every master of a cluster. Both grow with the data.
//! - `retire` and `start_at` visit the whole group's hash (`HSCAN … MATCH *:<name>`: a
//!   subscription's fields are not adjacent) inside one script, during which the server
//!   serves nobody else: O(size of the group). Only operators call them; mind them on a group
//!   of millions.
//! - After the server lost its script cache (a restart, a failover, `SCRIPT FLUSH`) the first
//!   call sends the script's source (`EVAL`, in a second pipeline for `save_all`): one more
//!   round trip, once (behind the delaying proxy, a `save_all` then takes two answers' time).
//!
//! # Leases
//!
//! [`LeaseStore`](checkpoint_core::LeaseStore): which worker owns a partition of a
//! subscription, for how long, under which epoch. Three keys per subscription, each with the
//! group's hash tag, so in the slot of the group's retired set, which `acquire` and `renew`
//! check inside their script:
//!
//! | key | type | content |
//! | --- | --- | --- |
//! | `<prefix>:{<escaped group>}:leases:<subscription>` | hash | field `<partition>`, value `<epoch>\0<expiry>\0<owner>\0<requester>` |
//! | `<prefix>:{<escaped group>}:owners:<subscription>` | hash | field `<owner>`, value `<expiry>` (the heartbeat) |
//! | `<prefix>:{<escaped group>}:held:<subscription>` | sorted set | member `<owner>\0<partition>`, score 0: the held index |
//!
//! - Expiries are milliseconds of the **server's clock**: each script reads `TIME` when it
//!   runs and nothing else decides expiry (no client clock is sent). A duration is rounded up
//!   to whole milliseconds. Redis 7 replicates a script's effects, not the script, so `TIME`
//!   is allowed in a writing script, on a single server and on a cluster, and a replica gets
//!   the absolute expiries.
//! - Owners and requesters hold no NUL (names never do), so NUL separates the parts of a
//!   value and of an index member; an empty owner is a free lease, an empty requester none. A
//!   released or expired lease keeps its field and its epoch, so an epoch is never handed out
//!   twice; `purge` of a retired subscription removes the three keys in its own script.
//! - The held index makes `renew` cost the owner's leases, not the subscription's:
//!   `ZRANGEBYLEX [<owner>\0 (<owner>\1` reads exactly the owner's members in O(log N + M).
//!   A grant moves the member from the last owner to the new one.
//! - `leases` deletes the heartbeats that expired as it reads them, so owners that never come
//!   back do not pile up; nothing observable changes (`renew` refuses an absent heartbeat as it
//!   refuses an expired one). A group with leases and no checkpoint is not in `groups`.
//! - A stored value that is not a lease or a heartbeat is a non-retryable `Error::Backend`
//!   whose source is a [`checkpoint_core::UnexpectedValue`], and the script that found it
//!   changed nothing (every script reads before it writes).
//!
//! Each operation is **one script call, one round trip** (counted by the tests), with the
//! store's [`with_replica_ack`](RedisCheckpointStore::with_replica_ack) `WAIT` in the same
//! pipeline for the writes (all but `leases`):
//!
//! | operation | script | work on the server |
//! | --- | --- | --- |
//! | `acquire` | `acquire.lua` | O(partitions asked + leases the owner holds) |
//! | `renew` | `renew.lua` | O(leases the owner holds), 1 and 100 both one round trip |
//! | `release`, `request_handover` | `release.lua`, `request_handover.lua` | O(partitions named) |
//! | `leave` | `leave.lua` | O(leases the owner holds) |
//! | `leases` | `leases.lua` | O(leases + owners of the subscription) |
//!
//! **Failover.** Replication is asynchronous for leases as for checkpoints: a failover can
//! lose an acquisition the old master acknowledged, and the lease's next owner then gets an
//! epoch that was handed out already, so a fencing sink cannot tell the two owners apart.
//! The failover tests measured it (writers acquiring and releasing a lease in a loop, the
//! master SIGKILLed): a plain crash lost none, but with the replica cut off 50 ms before the
//! crash every writer's last acknowledged acquisition was lost, hundreds of epochs handed out
//! twice. With `with_replica_ack(1, …)` and one replica per primary an acquisition returns
//! `Ok` only once the replica has it, and the same failovers lost none (asserted). Use it
//! where the epoch fences anything that matters.
//!
//! # Parked entries
//!
//! [`ParkedStore`](checkpoint_core::parked::ParkedStore): the entries a subscription's
//! handler failed on every retry. **One hash per group**, beside the checkpoints' hash and with
//! its hash tag, so in the group's cluster slot:
//!
//! | what | form | example |
//! | --- | --- | --- |
//! | key | `<prefix>:{<escaped group>}:parked` | `checkpoint:{billing}:parked` |
//! | field | `<partition>:<position>:<subscription>` | `3:41:invoices` |
//! | value | `<retry requested, 0 or 1>\|<attempts>\|<parked at, ms since the epoch>\|<error>` | `0\|5\|1764000000123\|no such customer` |
//!
//! - Partition and position are decimal numbers without `:`, so the field's first two `:`
//!   end them whatever the subscription holds: no two entries share a field. The error comes
//!   last in the value, so it is read back whole whatever it holds; the flag first, so that the
//!   script sets it by replacing one byte.
//! - `park` is one `HSET`, which replaces an entry parked before whole (the flag written at
//!   `0`); `unpark` one `HDEL`, whose count says whether the entry was parked;
//!   `retry_parked` the script `lua/retry_parked.lua`, which sets the flag only if the field
//!   exists, in one atomic step. `parked` reads the hash as `list` reads a group's (one
//!   `HGETALL` up to [`LIST_HGETALL_MAX`] fields, `HSCAN` steps above) and sorts by
//!   subscription bytes, partition and position in the client.
//! - The writes carry the store's [`with_replica_ack`](RedisCheckpointStore::with_replica_ack)
//!   `WAIT` in the same pipeline, one round trip all the same (counted by the tests). No
//!   command beyond [`acl_rules`](RedisCheckpointStore::acl_rules)' is needed.
//! - Parked entries are independent of checkpoints: `retire` and `purge` leave the hash, and
//!   `groups` skips its key, so a group that holds only parked entries is not listed. A field
//!   or value this store does not write is a non-retryable `Error::Backend` whose source is a
//!   [`checkpoint_core::UnexpectedValue`].
//!
//! # Exclusive checkpoints and the caller's transaction
//!
//! Redis has no transaction that spans the caller's own logic, so
//! [`advance_in`](RedisCheckpointStore::advance_in) takes the caller's writes
//! (`HSET key field value`, see [`HashWrite`]) and applies them in the advance's script, only
//! when the compare-and-set succeeds: the read model and the position commit together or not
//! at all. On a cluster their keys must be in the group's slot (put
//! [`RedisCheckpointStore::hash_tag`] in them), or the server refuses the call with
//! `CROSSSLOT`.
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
//!     .advance_in("billing", "totals", 0, from, from + 50, &[
//!         HashWrite::new(&totals, "invoices", "1250"),
//!     ])
//!     .await?; // Err(Error::Moved { .. }) if another owner got there first: nothing written
//! # Ok(()) }
//! ```
//!
//! # Durability and failover
//!
//! A checkpoint is as durable as the server makes it. A lost save moves a checkpoint back to
//! where it was saved before: the subscription replays from there (at-least-once), which is
//! safe but repeats work.
//!
//! - **Persistence.** For checkpoints that must survive a crash, use AOF with
//!   `appendfsync always` (the server fsyncs each write before acknowledging it; the tests
//!   SIGKILL such a server under concurrent saves and find every acknowledged save):
//!
//!   ```text
//!   appendonly yes
//!   appendfsync always
//!   ```
//!
//!   `appendfsync everysec` (Redis's default once AOF is on) can lose about the last second of
//!   acknowledged saves to a crash of the machine, `appendfsync no` what the OS had not
//!   flushed, RDB alone everything since the last snapshot, no persistence everything.
//! - **Replication is asynchronous.** A failover to a replica that had not received a save
//!   loses it. [`with_replica_ack`](RedisCheckpointStore::with_replica_ack) sends `WAIT` in the
//!   write's pipeline, to the primary that applied it, and fails the write (retryable) when
//!   fewer replicas acknowledged: with one replica per primary and `with_replica_ack(1, …)`,
//!   the failover tests (a master SIGKILLed, with or without its replica cut off first) assert
//!   that nothing acknowledged is lost. It adds the replica's latency, no round trip; retry the
//!   writes it fails while the primary has no replica in sync. It is not strong consistency:
//!   a replica acknowledges on receipt, not on disk, and with more replicas than asked for the
//!   promoted one may not be among those that acknowledged. Use it where a replay is expensive
//!   and for exclusive checkpoints; the default suits idempotent handlers.
//! - **Exclusive checkpoints.** A lost advance lets a second owner, or the same one after a
//!   restart, project a batch again: make the read-model writes idempotent, or keep them in
//!   the advance's script with `advance_in`, so that they are lost together with the position.
//! - **A cluster failover.** A store follows the new topology without being rebuilt. Until a
//!   replica is promoted, calls wait (redis-rs retries them), fail retryably or time out; with
//!   Redis's default `cluster-node-timeout` of 15 s that outlasts the default 5 s timeout.
//!
//! # Faults, timeouts and errors
//!
//! Client errors become [`Error::Backend`](checkpoint_core::Error::Backend) with the redis-rs
//! error as the source, retryable for I/O errors, dropped connections, `LOADING`, `TRYAGAIN`,
//! `READONLY` and redirects, and not for script errors, wrong types, `NOPERM` or failed
//! authentication. A call that failed may or may not have been applied; saving again is safe.
//!
//! - **Timeouts.** One operation timeout bounds each call with its reconnects, `EVAL`
//!   fallback and `WAIT`: [`DEFAULT_TIMEOUT`](checkpoint_core::DEFAULT_TIMEOUT) (5 s) unless
//!   [`with_timeout`](RedisCheckpointStore::with_timeout) or
//!   [`without_timeout`](RedisCheckpointStore::without_timeout) says otherwise; it ends in
//!   [`Error::Timeout`](checkpoint_core::Error::Timeout) (retryable).
//!   [`connect`](RedisCheckpointStore::connect) turns off the client's own response timeout
//!   and bounds each connection attempt by [`CONNECTION_TIMEOUT`].
//! - **Dropped connections** (`CLIENT KILL`, a restart): the calls in flight fail (retryable)
//!   and the [`ConnectionManager`](redis::aio::ConnectionManager) reconnects by itself.
//! - **Connections that stop answering** (a cut network path, a frozen host): no client
//!   notices them, so a store that connected itself (the `connect*` constructors) gives up the
//!   connection a call was abandoned on in the middle of its request (its timeout, or its
//!   caller dropping it), and the next call makes a new one within its own timeout. A store made with [`new`](RedisCheckpointStore::new) keeps your connection,
//!   whose own settings decide.
//!
//! The tests inject killed connections, restarts, crashes and paused servers in the middle of
//! concurrent histories, and a black hole in front of the server and of every cluster node:
//! the calls that failed failed retryably, nothing acknowledged was lost or moved back, and the
//! store worked again afterwards (after a black hole, within its timeout and 2 s more).
//!
//! # Tracing
//!
//! Every operation is one `tracing` span at DEBUG level named `checkpoint.<operation>`
//! (`checkpoint.save`, `checkpoint.advance_in`, `checkpoint.connect`, ...) with the field
//! `backend = "redis"` and only these others, where the operation has them: the names
//! `group`, `subscription`, `partition`; the sizes `batch_size` (`save_all`), `partitions`
//! (`start_at`, and the lease operations that take partitions), `writes` (`advance_in`);
//! what the call found (`found`, `moved`, `chunks`, `deleted`, and for leases `granted`,
//! `refused`, `released`, `marked`, `owners`; for `parked`, `retry_parked` and `unpark`,
//! `found`); and for `connect` the `endpoint`, host and
//! port only. No position, fingerprint, owner, requester, URL or password is ever a field.
//!
//! # Security
//!
//! - **Secrets.** The store's `Debug` shows host and port only, and no error or span of this
//!   crate carries the URL or its password (tested, for plain, TLS and failed connections).
//! - **TLS** (feature `tls-rustls`): `rediss://[user:password@]host:port` URLs connect through
//!   rustls, verifying the server against the platform's root certificates. For a private
//!   certificate authority or a client certificate, build the client with
//!   `redis::Client::build_with_tls` and pass it to
//!   [`connect_client`](RedisCheckpointStore::connect_client). If the application installed no
//!   rustls crypto provider, connecting installs aws-lc-rs's.
//!
//!   ```no_run
//!   # #[cfg(feature = "tls-rustls")]
//!   # async fn example(ca_pem: Vec<u8>) -> Result<(), checkpoint_core::Error> {
//!   use checkpoint_redis::RedisCheckpointStore;
//!
//!   // The platform's roots:
//!   let store = RedisCheckpointStore::connect("rediss://app:secret@redis.internal:6380").await?;
//!   // A private CA:
//!   let client = redis::Client::build_with_tls(
//!       "rediss://app:secret@redis.internal:6380",
//!       redis::TlsCertificates { client_tls: None, root_cert: Some(ca_pem) },
//!   )
//!   .map_err(|e| checkpoint_core::Error::backend("redis", checkpoint_core::Operation::Connect, false, e))?;
//!   let store = RedisCheckpointStore::connect_client(client).await?;
//!   # Ok(()) }
//!   ```
//! - **A least-privilege ACL user.** [`acl_rules`](RedisCheckpointStore::acl_rules) returns
//!   the rules of a user limited to the store's prefix and commands; for the default prefix:
//!
//!   ```text
//!   ACL SETUSER checkpoints on >password resetkeys ~checkpoint:* resetchannels -@all +evalsha +eval +hget +hmget +hset +hscan +hlen +sismember +sadd +srem +hdel +smembers +scan +cluster|slots +time +hgetall +zadd +zrem +zrangebylex +zremrangebylex
//!   ```
//!
//!   A user made for an earlier version of this crate lacks `+hlen`, which `list` sends
//!   since it reads a small group with one `HGETALL`: add it.
//!   Add `+wait` for `with_replica_ack`, a key pattern for the keys `advance_in` writes
//!   outside the prefix, and on Redis 7.2 and later `+client|setinfo` (redis-rs sends it on
//!   connecting). Redis refuses a script whose declared keys fall outside the user's
//!   patterns before it runs, so a refused `advance_in` changes nothing. The tests run the
//!   conformance kit through such a user with no refusal in the ACL log, and show that other
//!   keys and commands are refused (`NOPERM`).
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

use std::time::Duration;

mod admin;
mod connect;
mod connection;
mod error;
mod layout;
mod lease;
mod parked;
mod requests;
mod store;
mod transaction;

pub use error::ReplicaAckError;
pub use store::{RedisCheckpointStore, RedisClusterCheckpointStore};
pub use transaction::HashWrite;

/// The Lua script [`save`](checkpoint_core::CheckpointStore::save) runs (the shared helpers of
/// `lua/positions.lua`, then `lua/save.lua`; its header names its `KEYS` and `ARGV`): to review
/// what runs, or to time the same script on a client of your own, as the workspace's bench
/// does.
pub const SAVE_SCRIPT: &str = requests::SAVE_SCRIPT;

/// The backend name in [`Error::Backend`](checkpoint_core::Error::Backend),
/// [`Error::Timeout`](checkpoint_core::Error::Timeout) and the `backend` field of every span:
/// `"redis"`.
pub const BACKEND: &str = "redis";

/// The key prefix a store uses unless
/// [`with_key_prefix`](RedisCheckpointStore::with_key_prefix) sets another.
pub const DEFAULT_KEY_PREFIX: &str = "checkpoint";

/// The longest key prefix [`with_key_prefix`](RedisCheckpointStore::with_key_prefix) accepts,
/// in bytes.
pub const MAX_KEY_PREFIX_BYTES: usize = 128;

/// The most entries one `save_all` script call carries unless
/// [`with_save_all_chunk`](RedisCheckpointStore::with_save_all_chunk) says otherwise. A larger
/// batch is split into calls of this size, so that one script never holds the single-threaded
/// server for long; the calls are pipelined, so the batch still waits for one round of replies.
pub const SAVE_ALL_CHUNK: usize = 1_000;

/// The largest chunk [`with_save_all_chunk`](RedisCheckpointStore::with_save_all_chunk)
/// accepts: the script passes every field of a chunk to `HMGET` and every update to `HSET`
/// through Lua's `unpack`, which Redis's Lua 5.1 limits to about 8,000 values.
pub const MAX_SAVE_ALL_CHUNK: usize = 2_000;

/// The most fields `list` reads with one `HGETALL`; a larger group is read in `HSCAN` steps
/// of [`LIST_SCAN_COUNT`].
///
/// One command holds the single-threaded server for its whole run: an `HGETALL` of 10,000
/// checkpoints took about 1.4 ms on the server (Redis 7.0 on a busy 2-core machine; 0.1 ms
/// for 1,000, 12.5 ms for 50,000), about what one [`SAVE_ALL_CHUNK`] script takes, so no
/// call of the store blocks other clients for much longer than another. Below it, `list`
/// costs one read (after `HLEN`), close to a bare `HGETALL`; above it, one call per step.
pub const LIST_HGETALL_MAX: usize = 10_000;

/// The `COUNT` hint of each `HSCAN` call of `list` on a group of more than
/// [`LIST_HGETALL_MAX`] fields: how many fields the server visits per call.
pub const LIST_SCAN_COUNT: usize = 1_000;

/// The `COUNT` hint of each `SCAN` call of
/// [`groups`](checkpoint_core::CheckpointAdmin::groups): how many keys the server visits per
/// call (per master of a cluster). Every key of the server is visited, the store's and any
/// other.
pub const GROUPS_SCAN_COUNT: usize = 1_000;

/// How long [`connect`](RedisCheckpointStore::connect)'s connection waits for each connection
/// attempt (the first one and every reconnect).
pub const CONNECTION_TIMEOUT: Duration = Duration::from_secs(1);

/// The README's example, compiled as a doc test so that it cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
