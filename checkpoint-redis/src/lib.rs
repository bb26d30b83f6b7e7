//! A Redis checkpoint store: exact 64-bit positions, one server-side Lua script per write,
//! on a single server or a Redis Cluster.
//!
//! [`RedisCheckpointStore`] implements [`CheckpointStore`](checkpoint_core::CheckpointStore),
//! [`ExclusiveCheckpointStore`](checkpoint_core::ExclusiveCheckpointStore) and the operations
//! API [`CheckpointAdmin`](checkpoint_core::CheckpointAdmin) on redis-rs
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
//!
//! - The retired set (the tombstones, see [Operating checkpoints](#operating-checkpoints))
//!   has the group's hash tag too, so it is in the group's slot and every script can read it
//!   with the group's hash. Redis deletes an empty hash or set, so a group's keys exist exactly
//!   while it has a checkpoint or a retired subscription.
//! - The group can be read back from either key exactly: the prefix holds no brace, the tag
//!   runs from the first `{` to the next `}`, and unescaping it (`%25` → `%`, `%7D` → `}`)
//!   inverts the escape. `groups` relies on that, and skips any other key under the prefix
//!   (keys of yours, say `<prefix>:{billing}:view`, are never taken for a group).
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
//! - Everything else in a group's hash (a field that is not `<partition>:<subscription>`, a
//!   value that is not a checkpoint, a position above `i64::MAX`) is a non-retryable
//!   [`Error::Backend`](checkpoint_core::Error::Backend) whose source is a
//!   [`checkpoint_core::UnexpectedValue`], read with the range rules every store shares
//!   ([`checkpoint_core::stored`]); a script that meets such a value refuses to write over it
//!   (a script error). Give each application its own prefix.
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
//! | `save_all` | `save_all.lua`, one call per [`SAVE_ALL_CHUNK`] (1,000) distinct keys, all calls in one pipeline | 1 |
//! | `load` | `HGET` | 1 |
//! | `list` | `HSCAN … COUNT` [`LIST_SCAN_COUNT`], following the cursor to 0 | 1 for a small group, about one per 1,000 checkpoints for a large one |
//! | `claim` | `claim.lua` | 1 |
//! | `advance`, [`advance_in`](RedisCheckpointStore::advance_in) | `advance.lua` | 1 |
//! | `start_at` | `start_at.lua` | 1 |
//! | `retire` | `retire.lua` | 1 |
//! | `purge` | `purge.lua` | 1 |
//! | `retired` | `SMEMBERS` of the retired set | 1 |
//! | `groups` | `SCAN … MATCH <prefix>:{* COUNT` [`GROUPS_SCAN_COUNT`], on every master of a cluster | about one per 1,000 keys of the server (all keys, not only the store's), per master |
//!
//! The scripts are the files of the crate's `lua/` directory, compiled in: each runs after
//! `lua/positions.lua`, the helpers they share (the exact comparison of decimal positions,
//! splitting a stored value into its position and fingerprint), so that they are written once.
//! Each file's header names its `KEYS` and `ARGV`.
//!
//! Scripts run with `EVALSHA`; when the server has lost its script cache (a restart, a
//! failover, `SCRIPT FLUSH`) the first call after it sends `EVAL` with the source: one more
//! round trip, once. [`with_replica_ack`](RedisCheckpointStore::with_replica_ack) adds no round
//! trip: each write's `WAIT` goes in the same pipeline as its script.
//!
//! `save_all` first collapses repeated keys to the highest position, then splits the batch
//! into script calls of at most [`SAVE_ALL_CHUNK`] entries, so that one script never holds the
//! single-threaded server for long (a 1,000-entry call measured 1.5 to 8 ms of server time on
//! a busy 2-core test machine, about 2 ms on a quiet one), and sends every call in **one
//! pipeline**: the client writes them all, then waits for one round of replies however many
//! chunks there are. The server still runs each call as a script of its own, one after the
//! other, and serves other clients between them.
//! [`with_save_all_chunk`](RedisCheckpointStore::with_save_all_chunk) trades the number of calls
//! for shorter pauses; the round trips stay one. Within a chunk the script reads every field
//! with one `HMGET` and writes the moved ones with one `HSET`. On a cluster every call uses
//! the group's key, so the whole pipeline goes to the node that holds the group.
//!
//! - After a lost script cache every call of the pipeline fails with `NOSCRIPT`; those calls
//!   are sent again, in a second pipeline, as `EVAL` with the source (every chunk is
//!   idempotent: a save only moves forward): two round trips, once.
//! - A call that fails (a stored value that is not a checkpoint) does not stop the others,
//!   which are already sent: a failed `save_all` may have saved any of its other chunks, which
//!   the contract allows. The first error is returned.
//! - A proxy that counts request→response exchanges on the wire counts the pipeline as one,
//!   or as more when the server starts answering the first calls before the last ones have
//!   passed it, which depends on timing (batches of 10,000 from a debug build on the busy
//!   2-core test machine: 1 for 37 of 40, 2 for the other 3). The tests check the one wait
//!   itself: behind a proxy that delays every answer by a second, a `save_all` of ten chunks
//!   takes one second, not ten.
//!
//! `list` uses `HSCAN` rather than `HGETALL` for the same reason as the chunks: a group of a
//! million checkpoints is read in steps, never in one long command, and the duplicates `HSCAN`
//! may return are merged.
//!
//! Every script declares every key it touches in `KEYS`, as Redis Cluster (and
//! Redis-compatible servers) require.
//!
//! # Exclusive checkpoints and the caller's transaction
//!
//! `claim` and `advance` are one script each, so each is atomic on the server. Redis has no
//! transaction that spans the caller's own logic, so instead of running `advance` inside the
//! caller's transaction, [`advance_in`](RedisCheckpointStore::advance_in) takes the
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
//!     .advance_in("billing", "totals", 0, from, from + 50, &[
//!         HashWrite::new(&totals, "invoices", "1250"),
//!     ])
//!     .await?; // Err(Error::Moved { .. }) if another owner got there first: nothing written
//! # Ok(()) }
//! ```
//!
//! # Operating checkpoints
//!
//! [`CheckpointAdmin`](checkpoint_core::CheckpointAdmin) (see the contract's section of the
//! same name) is native here: each of its writes is one script, atomic on the server.
//!
//! - **The tombstone** of a retired subscription is its name in the group's retired set
//!   (`<prefix>:{<escaped group>}:retired`, the group's slot). `save.lua`, `save_all.lua` and
//!   `claim.lua` take it as `KEYS[2]` and check it (`SISMEMBER` of the subscription, which they
//!   read from the field: the text after its first `:`) before they read or write anything,
//!   **in the same script**: no extra round trip. A save under a retired name returns as a
//!   save that is behind does (`Ok`, nothing moved), for any partition, one it had or a new
//!   one; `save_all` drops a retired subscription's entries (it reads the set once per
//!   distinct subscription of a chunk) and saves the others; `claim` answers `retired`, which
//!   the store returns as [`Error::Retired`](checkpoint_core::Error::Retired). `advance`
//!   needs no check: it never creates a checkpoint, and `retire` deletes them all, so it fails
//!   with `Error::Moved { current: None }`.
//! - **`retire`** (`retire.lua`) adds the name to the set and deletes every field of the
//!   subscription, in one script. Scripts run one at a time, so a zombie's save either ran
//!   before it (and its checkpoint is deleted by it) or runs after it (and finds the
//!   tombstone): once `retire` returns, nothing under the name is ever visible again, until
//!   `purge`. The fields of a subscription are not adjacent (the field starts with the
//!   partition), so the script visits the group's hash with `HSCAN … MATCH *:<name>` and
//!   compares each field's subscription exactly (`*:b` also matches a subscription `a:b`):
//!   **O(size of the group) on the server, in one script**, during which the server serves
//!   nobody else: measured on the busy 2-core test machine, 9 to 13 ms for a group of 10,000
//!   checkpoints and 120 to 190 ms for 100,000 (about 1 ms per 1,000). Only operators call
//!   it; mind it on a group of millions.
//! - **`start_at`** (`start_at.lua`) checks the tombstone (`Error::Retired`), then whether the
//!   subscription has any field (`Error::Exists`; the same `HSCAN` visit, stopping at the
//!   first, so over the whole group for a new name: the same cost as `retire`), then writes
//!   every partition: everything is checked before the first write, so it writes all of them
//!   or none.
//! - **`purge`** (`purge.lua`) removes the name from the set and any field under it (none,
//!   unless a writer of an older version of this crate, which does not check tombstones,
//!   saved after the retire); refuses a name that is not retired but has checkpoints
//!   (`Error::NotRetired`); is `Ok` on a name with nothing.
//! - **`groups`** scans: `SCAN … MATCH <prefix>:{* COUNT` [`GROUPS_SCAN_COUNT`] to the end of
//!   the cursor, on the server, and on a cluster on **every master** (one slot of each, read
//!   from `CLUSTER SLOTS`, routed through redis-rs's slot map, so the client's address map
//!   applies); each key of the store's two kinds gives its group exactly, others are
//!   skipped; the result is sorted by bytes and deduplicated. `SCAN` visits every key of the
//!   server, not only the store's: it costs one round trip per about 1,000 keys of each
//!   master, and it returns every key present for the whole scan; a group created or deleted
//!   meanwhile may or may not be listed, and a resharding or failover during the scan can
//!   hide a group from that call (call it again). The cluster path applies to a
//!   [`RedisClusterCheckpointStore`]; over a connection of another type `groups` sees the
//!   keys of the node that connection talks to.
//! - **Replicas.** `retire`, `start_at` and `purge` wait for the replicas of
//!   [`with_replica_ack`](RedisCheckpointStore::with_replica_ack) like every write (a
//!   refusal, which writes nothing, does not wait).
//! - **What the check costs a save**: one `SISMEMBER` (on a set that usually does not
//!   exist) inside the script the save runs anyway, and no round trip. Measured (2026-12-01,
//!   Redis 7.0.15, the busy 2-core test machine, `redis-benchmark` of `save.lua` with and
//!   without the check, interleaved, medians of 10 runs; `BENCHMARKS.md` has the method and
//!   a second, busier run): the server time of a save went from 3.3 to 4.1 µs (a save that is
//!   behind) and from 4.6 to 5.4 µs (a new checkpoint), about 1 µs more, against a round trip
//!   of 40 µs or more; the throughput of one connection stayed within the noise of the
//!   machine.
//! - **Upgrading.** Saves of an older version of this crate (whose scripts take one key and
//!   know no tombstone) ignore the retired set: retire a subscription only once every process
//!   that may save under it runs this version.
//!
//! # Durability
//!
//! A checkpoint is as durable as the server makes it; this crate cannot add to that.
//!
//! - **Persistence: use AOF with `appendfsync always`** for checkpoints that must survive a
//!   crash, and no RDB snapshots unless you want them for backups:
//!
//!   ```text
//!   appendonly yes
//!   appendfsync always
//!   ```
//!
//!   The server then writes and fsyncs each write to its append-only file before it
//!   acknowledges it, so nothing acknowledged is lost even to a power failure. The tests run
//!   exactly this (`redis-server --appendonly yes --appendfsync always --save ""`), SIGKILL
//!   the server under concurrent saves and find every acknowledged save after the restart
//!   (SIGKILL cannot simulate a power failure; that part is the fsync's, i.e. Redis's, promise).
//! - With `appendfsync everysec` (Redis's default once AOF is on) the write reaches the
//!   operating system before the reply, but is fsynced about once a second: a crash of the
//!   machine or a power failure loses up to about the last second of acknowledged saves, up
//!   to two when the disk is slow (Redis then delays the write itself, so even a crash of the
//!   Redis process alone can lose them). With `appendfsync no`, whatever the OS had not
//!   flushed. With RDB only (`save` rules), a crash loses everything saved since the last
//!   snapshot; with no persistence at all, a restart loses every checkpoint (the tests show
//!   this too). A lost save moves a checkpoint back, to where it was saved before: the
//!   subscription replays from there (at-least-once), which is safe but repeats work.
//! - **Replication is asynchronous.** A save is acknowledged once the primary has applied it;
//!   a failover to a replica that had not received it loses it, even with AOF on the primary.
//!   [`with_replica_ack`](RedisCheckpointStore::with_replica_ack) (`WAIT`, sent in the same
//!   pipeline as the write, to the same primary) makes the save wait until that many replicas
//!   of the primary that applied it have it, and fail (retryable) when fewer do. A failover to
//!   one of those replicas keeps it; `WAIT` does not make Redis strongly consistent, though: a
//!   replica acknowledges on receipt, not on disk, and with more replicas than asked for, the
//!   promoted one may not be among those that acknowledged. On a cluster the same holds per
//!   shard: the `WAIT` goes to the key's own primary.
//! - **What a failover loses, measured** (2026-12-01, on 2-vCPU virtual machines with Debian
//!   12 and Redis 7.0.15, the tests in a debug build; the `failover` tests): a
//!   cluster of the test's own on 127.0.0.1, three masters with one replica each,
//!   `cluster-node-timeout 1000`, no persistence. Four writers per store save ever higher
//!   positions to keys of one master, as fast as they can, one store without the replica
//!   acknowledgement and one with `with_replica_ack(1, 1 s)`, both with a 500 ms timeout (a
//!   save in flight at the kill then ends before the promotion, instead of being retried on
//!   the promoted replica where it would hide the loss); after 300 ms the master is
//!   SIGKILLed, and once its replica is promoted every key is read back. A lost save is one
//!   acknowledged at a position above what the promoted replica holds. Over 60 failovers, with
//!   `WAIT` in the write's pipeline (on an Intel Xeon machine, other builds running beside):
//!
//!   | the master dies | without replica ack | with replica ack |
//!   | --- | --- | --- |
//!   | crash alone (30 failovers) | 0 of 36,837 acknowledged saves lost | 0 of 26,723 lost |
//!   | crash 50 ms after its replica was cut off (30 failovers) | 10,187 of 42,100 lost: in every failover, 45 to 661 (median 296, all it acknowledged in those 50 ms) | 0 of 22,937 lost |
//!
//!   No save failed with an error that is not retryable, with or without. An earlier
//!   measurement (on an AMD EPYC machine, while `WAIT` was still a command of its own, which
//!   redis-rs fans out to every master and which skipped the dead one) lost 2 of 21,915 saves
//!   acknowledged with it in 30 plain crashes, and 0 of 60,316 and 16,053 of 75,179 without.
//!   The tests now assert that nothing acknowledged with the replica acknowledgement is lost
//!   after either fault, and the kit's concurrent histories, each across a failover, with it.
//!
//!   With a healthy replica on the same machine a crash alone loses almost nothing (an
//!   earlier run of 30 crashes lost 1 save of 45,335): what the killed process had written to
//!   its sockets still reaches the replica, microseconds behind. A replica that lags or is
//!   cut off (a network partition, a replica paused or overloaded; here paused with SIGSTOP
//!   and its link closed) loses everything acknowledged since, and with real networks and
//!   load a replica is always somewhat behind. With the acknowledgement, the saves of the
//!   cut-off did not succeed: they waited for a replica that never answered and failed with a
//!   retryable error, so nothing acknowledged was lost.
//!
//!   A failover took 1.9 to 3.0 s from the kill until every node agreed on the promoted
//!   replica (median 2.5 s), and 2.6 to 4.0 s until a save through a store with the default
//!   settings succeeded (median 2.6 s: the node timeout, the replica's election, and
//!   redis-rs's retry back-off of at least 1.28 s). Calls in flight at the kill mostly waited
//!   and then succeeded, within the default 5 s timeout, on the same store, which followed
//!   the new topology without being rebuilt. With Redis's default `cluster-node-timeout` of 15 s, a
//!   failover takes that long and more, and calls time out (retryable) until it is over.
//!
//!   **Advice.** Without the acknowledgement, expect a failover to move checkpoints back by
//!   what the replica had not yet received: the subscriptions replay it (at-least-once),
//!   which is safe, so it is the right default where handlers are idempotent. Where a replay
//!   is expensive, or for exclusive checkpoints, use `with_replica_ack(1, …)` on a primary
//!   with one replica (or ask for all of them), on a single server or a cluster alike: it adds
//!   no round trip, only the replica's latency to each write. Retry the saves it fails: they
//!   fail while the primary has no replica in sync (a failed-over shard until a replica is
//!   back in sync: in these tests, which restart the killed node at once, 0.1 to 0.3 s after
//!   the promotion).
//! - For an exclusive checkpoint, a lost advance lets a second owner, or the same one after a
//!   restart, project a batch again: make the read-model writes idempotent, or keep them in
//!   the same script with `advance_in` so that they are lost together with the position.
//!
//! # Faults, timeouts and errors
//!
//! Client errors become [`checkpoint_core::Error::Backend`] with the redis-rs error as the
//! source, retryable for I/O errors, dropped connections, `LOADING`, `TRYAGAIN`, `READONLY`
//! and redirects, and not for script errors, wrong types, `NOPERM` or failed authentication.
//!
//! - **Timeouts.** Every store has one operation timeout,
//!   [`DEFAULT_TIMEOUT`](checkpoint_core::DEFAULT_TIMEOUT) (5 s, as for every backend) unless
//!   [`with_timeout`](RedisCheckpointStore::with_timeout) sets another (a zero duration is
//!   refused) or [`without_timeout`](RedisCheckpointStore::without_timeout) lifts it. An
//!   operation with its reconnects, `EVAL` fallback and `WAIT` is bounded by that one timeout
//!   and fails with [`checkpoint_core::Error::Timeout`] (retryable);
//!   [`connect`](RedisCheckpointStore::connect) turns off the client's per-command response
//!   timeout so that the store's is the one that ends a call. Each connection attempt is
//!   bounded by [`CONNECTION_TIMEOUT`]. A store made with [`new`](RedisCheckpointStore::new)
//!   over your own connection has the same timeout; that connection's own settings apply
//!   underneath it.
//! - **Dropped connections.** The calls in flight on a connection the server closes
//!   (`CLIENT KILL`, a restart, a network error) fail with a retryable backend error; the
//!   [`ConnectionManager`](redis::aio::ConnectionManager) then reconnects by itself (three
//!   attempts, 100 and 200 ms apart; when they all fail, the next call starts again) and the
//!   next calls succeed once the server is back. A call
//!   that failed may or may not have been applied; saving again is safe.
//! - **Connections that stop answering** (the server vanished without closing them: a cut
//!   network path, a frozen or replaced host, a NAT that forgot the connection). Neither the
//!   connection manager nor the cluster client notices such a connection: they reconnect only
//!   after an error that says a connection is gone, a timeout is not one, and nothing ever
//!   arrives on it again until the operating system gives it up, minutes or hours later. So a
//!   store that connected itself ([`connect`](RedisCheckpointStore::connect),
//!   [`connect_client`](RedisCheckpointStore::connect_client),
//!   [`connect_cluster`](RedisCheckpointStore::connect_cluster),
//!   [`connect_cluster_client`](RedisCheckpointStore::connect_cluster_client)) gives up the
//!   connection a call timed out on: the next call makes a new one from the same client and
//!   settings (a connection manager that connects on its first call; a new cluster
//!   connection, three attempts 100 and 200 ms apart, which reconnects to every node), once
//!   for all the calls that find it given up at the same time, within that call's timeout.
//!   Calls still running on the old connection end there. A call that timed out on a live but
//!   slow server costs one new connection. A store made with
//!   [`new`](RedisCheckpointStore::new) keeps your connection: its own settings decide.
//!
//!   Measured by the tests, with the kit's black-hole proxy in front of the server (and of
//!   every node of a 3-node cluster, mapped with redis-rs's `node_address_map`) and a 1 s
//!   timeout: every `save`, `load`, `save_all` and `list` in the black hole returned
//!   `Error::Timeout` after 1.00 to 1.03 s, and once the proxy forwarded again, the first
//!   `save` succeeded after 1 to 9 ms on a single server and 5 to 29 ms on the cluster
//!   (a new connection, and on the cluster its slot map), with no failed attempt. The bound
//!   the tests assert is the timeout and 2 s more. A call that starts while a new connection
//!   made in the black hole is still waiting on it can take up to [`CONNECTION_TIMEOUT`] more
//!   (that attempt fails, the next succeeds), or time out once.
//! - **What the tests inject**, on servers of their own: `CLIENT KILL` of the store's
//!   connection in the middle of concurrent histories, SIGTERM restarts and SIGKILL crashes in
//!   the middle of them, and `SIGSTOP`/`SIGCONT`; and the black hole above, through a proxy
//!   in front of the shared server and cluster. Each time, the calls that failed failed with
//!   a retryable backend or timeout error, the history checker found nothing acknowledged lost
//!   and nothing moved back, and the store worked again afterwards.
//!
//! # Tracing
//!
//! Every operation is one `tracing` span at DEBUG level named `checkpoint.<operation>`
//! (`checkpoint.save`, `checkpoint.save_all`, `checkpoint.advance_in`, `checkpoint.connect`,
//! ...) with the field `backend = "redis"`, the call's group, subscription, partition and
//! positions, and what the call found out (`moved`, `chunks`, `found`). A connection's span
//! holds its host and port, never its URL or password.
//!
//! # Security
//!
//! - **Secrets.** The store's `Debug` shows host and port only, never the connection (whose
//!   own `Debug` may show a password), and no error or span of this crate carries the URL or
//!   its password (tested, for plain and TLS connections and failed connections).
//! - **TLS** (feature `tls-rustls`, off by default): `rediss://[user:password@]host:port`
//!   URLs connect over TLS through rustls and tokio-rustls, and verify the server's
//!   certificate against the platform's root certificates. For a private certificate
//!   authority or a client certificate, build the client with `redis::Client::build_with_tls`
//!   and pass it to [`connect_client`](RedisCheckpointStore::connect_client). rustls needs a
//!   process-wide crypto provider: if the application has installed none, connecting installs
//!   aws-lc-rs's (which the feature enables); one the application installed is kept.
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
//! - **A least-privilege ACL user.** The store needs only its key prefix and a handful of
//!   commands; [`acl_rules`](RedisCheckpointStore::acl_rules) returns the rules. For the
//!   default prefix:
//!
//!   ```text
//!   ACL SETUSER checkpoints on >password resetkeys ~checkpoint:* resetchannels -@all +evalsha +eval +hget +hmget +hset +hscan +sismember +sadd +srem +hdel +smembers +scan +cluster|slots
//!   ```
//!
//!   (add `+wait` for [`with_replica_ack`](RedisCheckpointStore::with_replica_ack), a key
//!   pattern for the keys `advance_in` writes unless they are under the prefix, and on
//!   Redis 7.2 and later `+client|setinfo`, which redis-rs sends on connecting). `HGET`,
//!   `HMGET`, `HSET`, `SISMEMBER` (the tombstone check of every write), and `SADD`, `SREM`
//!   and `HDEL` (the operator's scripts) are there because the scripts call them; `SMEMBERS`,
//!   `SCAN` and `CLUSTER SLOTS` serve `retired` and `groups`. Redis checks a script's
//!   commands and its declared keys against the user's rules, and refuses a script with a key
//!   outside them before it runs, so a refused `advance_in` changes nothing. The tests run
//!   the conformance kit, the operations API's cases included (all but the long concurrent
//!   histories), through such a user, with no refusal in the server's ACL log,
//!   and show that keys outside the prefix and other commands are refused (`NOPERM`).
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

use std::time::Duration;

mod admin;
mod connect;
mod error;
mod layout;
mod requests;
mod store;
mod transaction;

pub use error::ReplicaAckError;
pub use store::{RedisCheckpointStore, RedisClusterCheckpointStore};
pub use transaction::HashWrite;

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
/// server for long (a 1,000-entry call measured 1.5 to 8 ms of server time on a busy 2-core
/// test machine); the calls are pipelined, so the batch still waits for one round of replies.
pub const SAVE_ALL_CHUNK: usize = 1_000;

/// The largest chunk [`with_save_all_chunk`](RedisCheckpointStore::with_save_all_chunk)
/// accepts: the script passes every field of a chunk to `HMGET` and every update to `HSET`
/// through Lua's `unpack`, which Redis's Lua 5.1 limits to about 8,000 values.
pub const MAX_SAVE_ALL_CHUNK: usize = 2_000;

/// The `COUNT` hint of each `HSCAN` call of `list`: how many fields the server visits per
/// round trip of a large group (small groups come back in one reply whatever the hint).
pub const LIST_SCAN_COUNT: usize = 1_000;

/// The `COUNT` hint of each `SCAN` call of
/// [`groups`](checkpoint_core::CheckpointAdmin::groups): how many keys the server visits per
/// round trip (per master of a cluster). Every key of the server is visited, the store's and
/// any other, so `groups` costs about one round trip per 1,000 keys of the node.
pub const GROUPS_SCAN_COUNT: usize = 1_000;

/// How long [`connect`](RedisCheckpointStore::connect)'s connection waits for each connection
/// attempt (the first one and every reconnect).
pub const CONNECTION_TIMEOUT: Duration = Duration::from_secs(1);

/// The README's example, compiled as a doc test so that it cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
