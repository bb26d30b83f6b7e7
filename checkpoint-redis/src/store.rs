//! [`RedisCheckpointStore`]: the store, its options and its operations.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::LazyLock;
use std::time::Duration;

use async_trait::async_trait;
use checkpoint_core::error::{Argument, InvalidInput, InvalidReason};
use checkpoint_core::validation::{
    validate_advance, validate_batch, validate_claim, validate_group, validate_key, validate_save,
};
use checkpoint_core::{
    Checkpoint, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint, Operation,
};
use redis::IntoConnectionInfo;
use redis::aio::{ConnectionLike, ConnectionManager};
use redis::cluster_async::ClusterConnection;

use crate::error::{BACKEND, ReplicaAckError, backend, unexpected};
use crate::keys::{self, DEFAULT_KEY_PREFIX};
use crate::script::{self, LuaScript, ScriptCall};

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

/// The operation timeout of a store made by [`connect`](RedisCheckpointStore::connect) (or
/// [`connect_client`](RedisCheckpointStore::connect_client),
/// [`connect_cluster`](RedisCheckpointStore::connect_cluster)) until
/// [`with_timeout`](RedisCheckpointStore::with_timeout) sets another: long enough for a
/// reconnect after a server restart, short enough that a hung server does not hang its
/// callers.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long [`connect`](RedisCheckpointStore::connect)'s connection waits for each connection
/// attempt (the first one and every reconnect).
pub const CONNECTION_TIMEOUT: Duration = Duration::from_secs(1);

/// How many times [`connect`](RedisCheckpointStore::connect)'s connection retries a failed
/// connection attempt (100 ms, then 200 ms later) before the call that needed it fails.
const CONNECTION_RETRIES: usize = 2;

static SAVE: LazyLock<LuaScript> =
    LazyLock::new(|| LuaScript::new(include_str!("scripts/save.lua")));
static SAVE_ALL: LazyLock<LuaScript> =
    LazyLock::new(|| LuaScript::new(include_str!("scripts/save_all.lua")));
static CLAIM: LazyLock<LuaScript> =
    LazyLock::new(|| LuaScript::new(include_str!("scripts/claim.lua")));
static ADVANCE: LazyLock<LuaScript> =
    LazyLock::new(|| LuaScript::new(include_str!("scripts/advance.lua")));

/// A store on a Redis Cluster: [`RedisCheckpointStore`] over redis-rs's async
/// [`ClusterConnection`].
pub type RedisClusterCheckpointStore = RedisCheckpointStore<ClusterConnection>;

/// The replica acknowledgement asked for by
/// [`with_replica_ack`](RedisCheckpointStore::with_replica_ack).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ReplicaAck {
    replicas: u32,
    timeout: Duration,
}

/// One `HSET key field value` that [`advance_with`](RedisCheckpointStore::advance_with) applies
/// in the same atomic step as the advance, and only when the advance succeeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HashWrite<'a> {
    /// The hash to write. On a cluster it must be in the group's slot: put
    /// [`RedisCheckpointStore::hash_tag`] in it.
    pub key: &'a str,
    /// The field of the hash.
    pub field: &'a [u8],
    /// The value to store.
    pub value: &'a [u8],
}

impl<'a> HashWrite<'a> {
    /// `HSET key field value`.
    pub fn new(
        key: &'a str,
        field: &'a (impl AsRef<[u8]> + ?Sized),
        value: &'a (impl AsRef<[u8]> + ?Sized),
    ) -> Self {
        Self {
            key,
            field: field.as_ref(),
            value: value.as_ref(),
        }
    }
}

/// A checkpoint store on Redis: one hash per group, every operation one server-side Lua script
/// or one command (see the [crate documentation](crate) for the key layout, round trips and
/// durability).
///
/// `C` is the caller's own connection: [`ConnectionManager`] (the default) for a single server
/// or a replicated primary, [`ClusterConnection`] for a cluster
/// ([`RedisClusterCheckpointStore`]), or any other clonable async connection. Each operation
/// clones it, which for these types is a cheap handle to the same multiplexed connection.
#[derive(Clone)]
pub struct RedisCheckpointStore<C = ConnectionManager> {
    connection: C,
    prefix: String,
    timeout: Option<Duration>,
    replica_ack: Option<ReplicaAck>,
    save_all_chunk: usize,
    /// Where the convenience constructors connected, without credentials, for `Debug` only.
    endpoint: Option<String>,
}

impl<C> fmt::Debug for RedisCheckpointStore<C> {
    /// Shows the options and, when known, the host and port: never the connection itself,
    /// whose own `Debug` may print a password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisCheckpointStore")
            .field(
                "endpoint",
                &self.endpoint.as_deref().unwrap_or("<caller's connection>"),
            )
            .field("prefix", &self.prefix)
            .field("timeout", &self.timeout)
            .field("replica_ack", &self.replica_ack)
            .field("save_all_chunk", &self.save_all_chunk)
            .finish_non_exhaustive()
    }
}

/// Host and port of every URL, without user name, password or database.
fn redacted_endpoints<'a>(
    urls: impl IntoIterator<Item = &'a str>,
) -> Result<String, redis::RedisError> {
    let mut endpoints = Vec::new();
    for url in urls {
        endpoints.push(url.into_connection_info()?.addr().to_string());
    }
    Ok(endpoints.join(","))
}

impl RedisCheckpointStore<ConnectionManager> {
    /// Connects to the server at `url` (`redis://[user:password@]host:port[/db]`, or
    /// `rediss://` with the `tls-rustls` feature) through a [`ConnectionManager`], which
    /// reconnects by itself after a dropped connection or a server restart.
    ///
    /// The store starts with an operation timeout of [`DEFAULT_TIMEOUT`] (change it with
    /// [`with_timeout`](Self::with_timeout)), and the connection has no per-command timeout of
    /// its own, so that one timeout, the store's, bounds each operation with its reconnects,
    /// `EVAL` fallback and `WAIT` included. Each connection attempt is bounded by
    /// [`CONNECTION_TIMEOUT`], and a failed one is retried twice, 100 ms and 200 ms later, so
    /// that `connect` fails within about 3.5 s when the server cannot be reached, and at once
    /// (after the retries) when it refuses the certificate or the password.
    ///
    /// The URL's password never appears in this store's `Debug` output, spans or errors.
    #[tracing::instrument(name = "redis.connect", level = "debug", skip_all, fields(endpoint))]
    pub async fn connect(url: &str) -> Result<Self, Error> {
        let endpoint = redacted_endpoints([url]).map_err(|e| backend(Operation::Connect, e))?;
        tracing::Span::current().record("endpoint", endpoint.as_str());
        #[cfg(feature = "tls-rustls")]
        crate::tls::ensure_crypto_provider();
        let client = redis::Client::open(url).map_err(|e| backend(Operation::Connect, e))?;
        Self::manage(client, endpoint).await
    }

    /// Connects through a [`redis::Client`] you built, for what a URL cannot say: a private
    /// certificate authority or a client certificate (`redis::Client::build_with_tls`).
    /// Otherwise the same as [`connect`](Self::connect).
    #[tracing::instrument(name = "redis.connect", level = "debug", skip_all, fields(endpoint))]
    pub async fn connect_client(client: redis::Client) -> Result<Self, Error> {
        let endpoint = client.get_connection_info().addr().to_string();
        tracing::Span::current().record("endpoint", endpoint.as_str());
        #[cfg(feature = "tls-rustls")]
        crate::tls::ensure_crypto_provider();
        Self::manage(client, endpoint).await
    }

    async fn manage(client: redis::Client, endpoint: String) -> Result<Self, Error> {
        // No response timeout in the client: the store's own timeout is the one that bounds an
        // operation, and returns `Error::Timeout` rather than an I/O error.
        // Few connection retries: a refused certificate or password fails `connect` in about a
        // second rather than after redis-rs's six (6.3 s of backoff), and while a restarting
        // server is down, calls fail fast with a retryable error instead of queueing behind a
        // long backoff; the next call starts a new reconnect.
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_response_timeout(None)
            .set_connection_timeout(Some(CONNECTION_TIMEOUT))
            .set_number_of_retries(CONNECTION_RETRIES);
        let connection = client
            .get_connection_manager_with_config(config)
            .await
            .map_err(|e| backend(Operation::Connect, e))?;
        let mut store = Self::new(connection).with_timeout(DEFAULT_TIMEOUT);
        store.endpoint = Some(endpoint);
        Ok(store)
    }
}

impl RedisCheckpointStore<ClusterConnection> {
    /// Connects to a Redis Cluster through any of its nodes (`redis://host:port` URLs, or
    /// `rediss://` with the `tls-rustls` feature); the client discovers the others and follows
    /// slot moves and failovers. The store starts with an operation timeout of
    /// [`DEFAULT_TIMEOUT`]; the cluster client keeps redis-rs's own connection settings.
    #[tracing::instrument(
        name = "redis.connect_cluster",
        level = "debug",
        skip_all,
        fields(endpoints)
    )]
    pub async fn connect_cluster<I, S>(node_urls: I) -> Result<Self, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let urls: Vec<String> = node_urls
            .into_iter()
            .map(|url| url.as_ref().to_owned())
            .collect();
        let endpoint = redacted_endpoints(urls.iter().map(String::as_str))
            .map_err(|e| backend(Operation::Connect, e))?;
        tracing::Span::current().record("endpoints", endpoint.as_str());
        #[cfg(feature = "tls-rustls")]
        crate::tls::ensure_crypto_provider();
        let client = redis::cluster::ClusterClient::new(urls.iter().map(String::as_str))
            .map_err(|e| backend(Operation::Connect, e))?;
        let connection = client
            .get_async_connection()
            .await
            .map_err(|e| backend(Operation::Connect, e))?;
        let mut store = Self::new(connection).with_timeout(DEFAULT_TIMEOUT);
        store.endpoint = Some(endpoint);
        Ok(store)
    }
}

impl<C> RedisCheckpointStore<C>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    /// A store over `connection`, with the key prefix [`DEFAULT_KEY_PREFIX`], no timeout of its
    /// own and no replica acknowledgement.
    pub fn new(connection: C) -> Self {
        Self {
            connection,
            prefix: DEFAULT_KEY_PREFIX.to_owned(),
            timeout: None,
            replica_ack: None,
            save_all_chunk: SAVE_ALL_CHUNK,
            endpoint: None,
        }
    }

    /// Puts every key under `prefix` instead of [`DEFAULT_KEY_PREFIX`]: `<prefix>:{<group>}`.
    ///
    /// Fails with [`Error::InvalidInput`] for an empty prefix, one longer than
    /// [`MAX_KEY_PREFIX_BYTES`](crate::MAX_KEY_PREFIX_BYTES), or one holding `{`, `}` or NUL
    /// (braces would change the cluster hash tag).
    pub fn with_key_prefix(mut self, prefix: impl Into<String>) -> Result<Self, Error> {
        let prefix = prefix.into();
        keys::validate_prefix(&prefix)?;
        self.prefix = prefix;
        Ok(self)
    }

    /// Fails every operation that has not finished after `timeout` with [`Error::Timeout`]
    /// (retryable), reconnects, the `EVAL` fallback and `WAIT` included. A save that timed
    /// out may or may not have been applied; saving again is safe. The store keeps working
    /// once the server answers again: a server paused for longer than the timeout answers the
    /// abandoned requests when it resumes, and the client drops those answers.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// After every write (`save`, `save_all`, `claim`, `advance`), waits with
    /// `WAIT replicas timeout` until `replicas` replicas have acknowledged it, and fails with a
    /// retryable [`Error::Backend`] whose source is a [`ReplicaAckError`] when fewer did
    /// within `timeout` (the write itself stays applied on the primary).
    ///
    /// This costs one more round trip per write. It narrows, but does not close, the window in
    /// which a failover loses an acknowledged write: see the crate's durability section. A
    /// zero `timeout` means what it means to `WAIT`: wait for ever (bound it with
    /// [`with_timeout`](Self::with_timeout)).
    ///
    /// `WAIT` counts the replicas that have every write of the connection so far. On a cluster,
    /// redis-rs sends it to every primary and keeps the smallest count, so the shard with the
    /// fewest acknowledging replicas decides. If the connection was replaced between the
    /// write and the `WAIT` (a reconnect), the count says nothing about that write.
    pub fn with_replica_ack(mut self, replicas: u32, timeout: Duration) -> Self {
        self.replica_ack = Some(ReplicaAck { replicas, timeout });
        self
    }

    /// Splits `save_all` batches into script calls of at most `entries` distinct keys instead
    /// of [`SAVE_ALL_CHUNK`]: fewer calls (less per-call work on the server) with larger
    /// chunks, shorter pauses of the server with smaller ones. The calls of one batch are
    /// pipelined whatever their size, so the round trips do not change. Fails with
    /// [`Error::InvalidInput`] outside `1..=`[`MAX_SAVE_ALL_CHUNK`].
    pub fn with_save_all_chunk(mut self, entries: usize) -> Result<Self, Error> {
        if !(1..=MAX_SAVE_ALL_CHUNK).contains(&entries) {
            return Err(InvalidInput::new(
                Argument::Setting("save_all_chunk"),
                InvalidReason::Malformed {
                    expected: "between 1 and 2,000 entries per script call",
                },
            )
            .into());
        }
        self.save_all_chunk = entries;
        Ok(self)
    }

    /// The key prefix in use.
    pub fn key_prefix(&self) -> &str {
        &self.prefix
    }

    /// The connection the store runs on.
    pub fn connection(&self) -> &C {
        &self.connection
    }

    /// The ACL rules of a Redis user that can do everything this store does and nothing else:
    /// the arguments after `ACL SETUSER <name> on ><password>`, one rule per element.
    ///
    /// Keys under the store's prefix only (`~<prefix>:*`, with the prefix's glob characters
    /// escaped), no pub/sub channels, and only the commands the store sends (`EVALSHA`, and
    /// `EVAL` after the server lost its script cache; `HGET` for `load`, `HSCAN` for `list`)
    /// and that its scripts call (`HGET`, `HMGET`, `HSET`), and `WAIT` when
    /// [`with_replica_ack`](Self::with_replica_ack) is set. Keys that
    /// [`advance_with`](Self::advance_with) writes need a pattern of their own, unless they
    /// are under the prefix too.
    ///
    /// redis-rs also sends `CLIENT SETINFO` when it connects and ignores its failure; on
    /// Redis 7.2 and later, add `+client|setinfo` to keep those refusals out of the ACL log
    /// (Redis 7.0 does not know the subcommand and refuses the rule).
    pub fn acl_rules(&self) -> Vec<String> {
        let mut pattern = String::from("~");
        for c in self.prefix.chars() {
            if matches!(c, '*' | '?' | '[' | ']' | '\\') {
                pattern.push('\\');
            }
            pattern.push(c);
        }
        pattern.push_str(":*");
        let mut rules: Vec<String> = ["resetkeys", pattern.as_str(), "resetchannels", "-@all"]
            .into_iter()
            .chain(["+evalsha", "+eval", "+hget", "+hmget", "+hset", "+hscan"])
            .map(str::to_owned)
            .collect();
        if self.replica_ack.is_some() {
            rules.push("+wait".to_owned());
        }
        rules
    }

    /// The cluster hash tag of `group`, `{<group with % and } percent-escaped>}`: a key that
    /// holds it lives in the same cluster slot as the group's checkpoints, so
    /// [`advance_with`](Self::advance_with) can write it atomically with an advance.
    pub fn hash_tag(&self, group: &str) -> Result<String, Error> {
        validate_group(group)?;
        Ok(keys::hash_tag(group))
    }

    /// The key of the hash that holds every checkpoint of `group`.
    pub fn group_key(&self, group: &str) -> Result<String, Error> {
        validate_group(group)?;
        Ok(keys::group_key(&self.prefix, group))
    }

    /// Runs `operation` under the configured timeout.
    async fn timed<T>(
        &self,
        operation: Operation,
        future: impl Future<Output = Result<T, Error>>,
    ) -> Result<T, Error> {
        match self.timeout {
            Some(after) => tokio::time::timeout(after, future)
                .await
                .map_err(|_elapsed| Error::Timeout {
                    backend: BACKEND,
                    operation,
                    after,
                })?,
            None => future.await,
        }
    }

    /// `WAIT` for the configured replicas on the connection that just wrote.
    async fn await_replicas(&self, connection: &mut C, operation: Operation) -> Result<(), Error> {
        let Some(ack) = self.replica_ack else {
            return Ok(());
        };
        // WAIT takes milliseconds; round up so that a sub-millisecond timeout does not turn
        // into 0, which means "for ever".
        let millis = u64::try_from(ack.timeout.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX);
        let acknowledged: u64 = redis::cmd("WAIT")
            .arg(ack.replicas)
            .arg(millis)
            .query_async(connection)
            .await
            .map_err(|e| backend(operation, e))?;
        if acknowledged < u64::from(ack.replicas) {
            return Err(Error::backend(
                BACKEND,
                operation,
                true,
                ReplicaAckError {
                    requested: ack.replicas,
                    acknowledged,
                    timeout: ack.timeout,
                },
            ));
        }
        Ok(())
    }

    /// Advances like [`ExclusiveCheckpointStore::advance`] and, in the same atomic script,
    /// applies `writes` (`HSET key field value` each) only when the advance succeeds.
    ///
    /// This is what Redis offers for "advance in the projection's transaction": the read
    /// model's writes and the new position commit together or not at all. Limits: the writes
    /// are plain `HSET`s decided before the call (no logic of yours runs between the check and
    /// the writes); on a cluster every key must be in the group's slot, so put
    /// [`hash_tag`](Self::hash_tag) in your keys (the server refuses others with `CROSSSLOT`);
    /// and the atomicity is Redis's: a script is applied whole, but its durability is that of
    /// the server (see the crate's durability section). A write into the group's own key is
    /// refused with [`Error::InvalidInput`], before any I/O.
    #[tracing::instrument(
        name = "redis.advance_with",
        level = "debug",
        skip(self, writes),
        fields(writes = writes.len())
    )]
    pub async fn advance_with(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
        writes: &[HashWrite<'_>],
    ) -> Result<(), Error> {
        validate_advance(group, subscription, from, to)?;
        let group_key = keys::group_key(&self.prefix, group);
        if writes.iter().any(|write| write.key == group_key) {
            // A foreign field in the group's hash would make every later `list` fail.
            return Err(InvalidInput::new(
                Argument::Setting("writes"),
                InvalidReason::Malformed {
                    expected: "writes into keys other than the group's checkpoint hash",
                },
            )
            .into());
        }
        self.timed(Operation::Advance, async {
            let mut connection = self.connection.clone();
            let mut invocation = ADVANCE.call();
            invocation
                .key(&group_key)
                .arg(keys::field(subscription, partition))
                .arg(from.to_string())
                .arg(to.to_string());
            for write in writes {
                invocation.key(write.key).arg(write.field).arg(write.value);
            }
            let reply: Vec<String> = invocation
                .invoke(&mut connection)
                .await
                .map_err(|e| backend(Operation::Advance, e))?;
            match reply.as_slice() {
                [ok] if ok == "ok" => {}
                [moved] if moved == "moved" => {
                    return Err(Error::Moved {
                        expected: from,
                        current: None,
                    });
                }
                [moved, current] if moved == "moved" => {
                    let current = keys::parse_position(current).ok_or_else(|| {
                        unexpected(Operation::Advance, "a stored position that is not a number")
                    })?;
                    return Err(Error::Moved {
                        expected: from,
                        current: Some(current),
                    });
                }
                _ => {
                    return Err(unexpected(
                        Operation::Advance,
                        "an advance script reply of an unknown shape",
                    ));
                }
            }
            self.await_replicas(&mut connection, Operation::Advance)
                .await
        })
        .await
    }
}

#[async_trait]
impl<C> CheckpointStore for RedisCheckpointStore<C>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    #[tracing::instrument(name = "redis.list", level = "debug", skip(self), fields(found))]
    async fn list(&self, group: &str) -> Result<Vec<Checkpoint>, Error> {
        validate_group(group)?;
        self.timed(Operation::List, async {
            let mut connection = self.connection.clone();
            let key = keys::group_key(&self.prefix, group);
            // HSCAN may return a field more than once while the hash is rehashed; keep the
            // highest position seen (positions only move forward).
            let mut found: HashMap<(String, u32), u64> = HashMap::new();
            let mut cursor: u64 = 0;
            loop {
                let (next, items): (u64, Vec<Vec<u8>>) = redis::cmd("HSCAN")
                    .arg(&key)
                    .arg(cursor)
                    .arg("COUNT")
                    .arg(LIST_SCAN_COUNT)
                    .query_async(&mut connection)
                    .await
                    .map_err(|e| backend(Operation::List, e))?;
                if items.len() % 2 != 0 {
                    return Err(unexpected(Operation::List, "an odd HSCAN reply"));
                }
                for pair in items.chunks_exact(2) {
                    let (field, value) = (&pair[0], &pair[1]);
                    let key = keys::parse_field(field).ok_or_else(|| {
                        unexpected(
                            Operation::List,
                            "a field that is not `<partition>:<subscription>`",
                        )
                    })?;
                    let value = keys::parse_value(value).ok_or_else(|| {
                        unexpected(Operation::List, "a value that is not a checkpoint")
                    })?;
                    let position = found.entry(key).or_insert(value.position);
                    *position = (*position).max(value.position);
                }
                if next == 0 {
                    break;
                }
                cursor = next;
            }
            tracing::Span::current().record("found", found.len());
            Ok(found
                .into_iter()
                .map(|((subscription, partition), position)| {
                    Checkpoint::new(subscription, partition, position)
                })
                .collect())
        })
        .await
    }

    #[tracing::instrument(name = "redis.load", level = "debug", skip(self))]
    async fn load(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> Result<Option<u64>, Error> {
        validate_key(group, subscription)?;
        self.timed(Operation::Load, async {
            let mut connection = self.connection.clone();
            let value: Option<Vec<u8>> = redis::cmd("HGET")
                .arg(keys::group_key(&self.prefix, group))
                .arg(keys::field(subscription, partition))
                .query_async(&mut connection)
                .await
                .map_err(|e| backend(Operation::Load, e))?;
            value
                .map(|value| {
                    keys::parse_value(&value)
                        .map(|value| value.position)
                        .ok_or_else(|| {
                            unexpected(Operation::Load, "a value that is not a checkpoint")
                        })
                })
                .transpose()
        })
        .await
    }

    #[tracing::instrument(name = "redis.save", level = "debug", skip(self), fields(moved))]
    async fn save(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<(), Error> {
        validate_save(group, subscription, position)?;
        self.timed(Operation::Save, async {
            let mut connection = self.connection.clone();
            let moved: i64 = SAVE
                .call()
                .key(keys::group_key(&self.prefix, group))
                .arg(keys::field(subscription, partition))
                .arg(position.to_string())
                .invoke(&mut connection)
                .await
                .map_err(|e| backend(Operation::Save, e))?;
            tracing::Span::current().record("moved", moved == 1);
            self.await_replicas(&mut connection, Operation::Save).await
        })
        .await
    }

    #[tracing::instrument(
        name = "redis.save_all",
        level = "debug",
        skip(self, checkpoints),
        fields(batch_size = checkpoints.len(), chunks, moved)
    )]
    async fn save_all(&self, group: &str, checkpoints: &[Checkpoint]) -> Result<(), Error> {
        validate_batch(group, checkpoints)?;
        if checkpoints.is_empty() {
            return Ok(());
        }
        self.timed(Operation::SaveAll, async {
            let mut connection = self.connection.clone();
            let key = keys::group_key(&self.prefix, group);
            // One entry per field, so the script never compares an entry with another of the
            // same batch; the highest of repeats wins, as the contract asks.
            let entries = checkpoint_core::batch::highest_per_key(checkpoints);
            let span = tracing::Span::current();
            span.record("chunks", entries.len().div_ceil(self.save_all_chunk));
            // One script call per chunk, all in one pipeline: the client waits for one round
            // of replies, and the server still runs each chunk as a short script of its own.
            // Every chunk uses the group's key, so on a cluster the pipeline goes to one node.
            let calls: Vec<ScriptCall> = entries
                .chunks(self.save_all_chunk)
                .map(|chunk| {
                    let mut call = SAVE_ALL.call();
                    call.key(&key);
                    for checkpoint in chunk {
                        call.arg(keys::field(&checkpoint.subscription, checkpoint.partition))
                            .arg(checkpoint.position.to_string());
                    }
                    call
                })
                .collect();
            let moved: Vec<i64> = script::invoke_pipelined(&calls, &mut connection)
                .await
                .map_err(|e| backend(Operation::SaveAll, e))?;
            span.record("moved", moved.iter().sum::<i64>());
            self.await_replicas(&mut connection, Operation::SaveAll)
                .await
        })
        .await
    }
}

#[async_trait]
impl<C> ExclusiveCheckpointStore for RedisCheckpointStore<C>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    #[tracing::instrument(name = "redis.claim", level = "debug", skip(self))]
    async fn claim(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        fingerprint: Fingerprint,
        initial_position: u64,
    ) -> Result<u64, Error> {
        validate_claim(group, subscription, initial_position)?;
        self.timed(Operation::Claim, async {
            let mut connection = self.connection.clone();
            let reply: Vec<String> = CLAIM
                .call()
                .key(keys::group_key(&self.prefix, group))
                .arg(keys::field(subscription, partition))
                .arg(fingerprint.to_hex())
                .arg(initial_position.to_string())
                .invoke(&mut connection)
                .await
                .map_err(|e| backend(Operation::Claim, e))?;
            let position = match reply.as_slice() {
                [ok, position] if ok == "ok" => {
                    keys::parse_position(position).ok_or_else(|| {
                        unexpected(Operation::Claim, "a stored position that is not a number")
                    })?
                }
                [changed, stored] if changed == "changed" => {
                    let stored = Fingerprint::from_hex(stored).ok_or_else(|| {
                        unexpected(
                            Operation::Claim,
                            "a stored fingerprint that is not 64 hex digits",
                        )
                    })?;
                    return Err(Error::QueryChanged {
                        stored,
                        requested: fingerprint,
                    });
                }
                _ => {
                    return Err(unexpected(
                        Operation::Claim,
                        "a claim script reply of an unknown shape",
                    ));
                }
            };
            self.await_replicas(&mut connection, Operation::Claim)
                .await?;
            Ok(position)
        })
        .await
    }

    async fn advance(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
    ) -> Result<(), Error> {
        self.advance_with(group, subscription, partition, from, to, &[])
            .await
    }
}
