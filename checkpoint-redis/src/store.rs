//! [`RedisCheckpointStore`]: the type, `new` and its settings, and the monotonic and exclusive
//! operations, each validated, then sent as one request of [`requests`] within the store's
//! timeout ([`timed`](RedisCheckpointStore::timed)). The constructors that take a URL or a
//! client are in `connect.rs`.

use std::fmt;
use std::future::Future;
use std::time::Duration;

use checkpoint_core::door::{BoxFuture, Checked, CheckpointDoor, Door, ExclusiveDoor};
use checkpoint_core::settings::{validate_count, validate_timeout};
use checkpoint_core::timeout::within;
use checkpoint_core::validation::validate_group;
use checkpoint_core::{Checkpoint, DEFAULT_TIMEOUT, Error, Fingerprint, Operation};
use redis::aio::{ConnectionLike, ConnectionManager};
use redis::cluster_async::ClusterConnection;

use crate::connection::{Connection, InFlight};
use crate::layout::{self, key_pattern, validate_prefix};
use crate::requests::{self, COMMAND_RULES, ReplicaAck, WAIT_RULE};
use crate::{BACKEND, DEFAULT_KEY_PREFIX, MAX_SAVE_ALL_CHUNK, SAVE_ALL_CHUNK};

#[cfg(doc)]
use checkpoint_core::{CheckpointStore, ExclusiveCheckpointStore};

/// A store on a Redis Cluster: [`RedisCheckpointStore`] over redis-rs's async
/// [`ClusterConnection`].
pub type RedisClusterCheckpointStore = RedisCheckpointStore<ClusterConnection>;

/// A checkpoint store on Redis: one hash per group, every operation one server-side Lua script
/// or one command (see the [crate documentation](crate) for the key layout, round trips and
/// durability).
///
/// `C` is the caller's own connection: [`ConnectionManager`] (the default) for a single server
/// or a replicated primary, [`ClusterConnection`] for a cluster
/// ([`RedisClusterCheckpointStore`]), or any other clonable async connection. Each operation
/// clones it, which for these types is a cheap handle to the same multiplexed connection.
///
/// A store that connected itself ([`connect`](Self::connect),
/// [`connect_cluster`](RedisClusterCheckpointStore::connect_cluster) and their `_client`
/// forms) replaces its connection after a call times out on it (see the crate's section on
/// faults); one made with [`new`](Self::new) keeps the caller's. The clones of a store share
/// its connection.
#[derive(Clone)]
pub struct RedisCheckpointStore<C = ConnectionManager> {
    connection: Connection<C>,
    prefix: String,
    pub(crate) timeout: Option<Duration>,
    replica_ack: Option<ReplicaAck>,
    save_all_chunk: usize,
    /// Where the convenience constructors connected, without credentials, for `Debug` only.
    endpoint: Option<String>,
}

impl<C> fmt::Debug for RedisCheckpointStore<C> {
    /// Shows the settings and, when known, the host and port: never the connection itself,
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

impl<C> RedisCheckpointStore<C> {
    /// A store over `connection`, with the key prefix [`DEFAULT_KEY_PREFIX`], the timeout
    /// [`DEFAULT_TIMEOUT`], no replica acknowledgement and `save_all` chunks of
    /// [`SAVE_ALL_CHUNK`].
    ///
    /// The store keeps `connection` whatever happens on it, also after a call timed out on it:
    /// its own settings decide whether it notices a peer that vanished without closing it.
    pub fn new(connection: C) -> Self {
        Self::with_connection(Connection::fixed(connection))
    }

    /// A store over `connection`, with the defaults of [`new`](Self::new).
    pub(crate) fn with_connection(connection: Connection<C>) -> Self {
        Self {
            connection,
            prefix: DEFAULT_KEY_PREFIX.to_owned(),
            timeout: Some(DEFAULT_TIMEOUT),
            replica_ack: None,
            save_all_chunk: SAVE_ALL_CHUNK,
            endpoint: None,
        }
    }

    /// Puts every key under `prefix` instead of [`DEFAULT_KEY_PREFIX`]: `<prefix>:{<group>}`.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] naming `Argument::Setting("key_prefix")` for an empty prefix,
    /// one longer than [`MAX_KEY_PREFIX_BYTES`](crate::MAX_KEY_PREFIX_BYTES), or one holding
    /// `{`, `}` or NUL (braces would change the cluster hash tag).
    pub fn with_key_prefix(mut self, prefix: impl Into<String>) -> Result<Self, Error> {
        let prefix = prefix.into();
        validate_prefix(&prefix)?;
        self.prefix = prefix;
        Ok(self)
    }

    /// Fails every operation that has not finished after `timeout` with [`Error::Timeout`]
    /// (retryable), reconnects, the `EVAL` fallback and `WAIT` included, instead of after
    /// [`DEFAULT_TIMEOUT`]. A save that timed out may or may not have been applied; saving
    /// again is safe. The store keeps working once the server answers again: a server paused
    /// for longer than the timeout answers the abandoned requests when it resumes, and the
    /// client drops those answers.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] naming `Argument::Setting("timeout")` for a zero duration.
    pub fn with_timeout(mut self, timeout: Duration) -> Result<Self, Error> {
        self.timeout = Some(validate_timeout(timeout)?);
        Ok(self)
    }

    /// No timeout of the store's own: an operation is then bounded only by the connection's
    /// (a [`connect`](RedisCheckpointStore::connect)ed store's connection has none), and a
    /// server that stops answering keeps a call waiting.
    pub fn without_timeout(mut self) -> Self {
        self.timeout = None;
        self
    }

    /// Makes every write (`save`, `save_all`, `claim`, `advance`, the operations API's
    /// `start_at`, `retire` and `purge`, the lease operations but `leases`, and `park`,
    /// `retry_parked` and `unpark`) wait until `replicas` replicas of the primary that applied
    /// it have it: `WAIT replicas timeout` goes in the same pipeline as the write
    /// (`[EVALSHA …, WAIT …]`, `[HSET …, WAIT …]`), to the same primary on the same
    /// connection, at no extra round trip. When fewer replicas acknowledged within `timeout`,
    /// the write fails with a retryable [`Error::Backend`] whose source is a
    /// [`ReplicaAckError`](crate::ReplicaAckError); the write itself stays applied on the
    /// primary, and saving again is safe.
    ///
    /// **What it guarantees:** a write that returns `Ok` was applied by the primary serving its
    /// key, and `replicas` replicas of that primary had received it before the reply. On a
    /// cluster that primary is the key's shard's, also after a failover: redis-rs routes the
    /// pipeline by the script's key and redirects or retries it whole, `WAIT` included. With
    /// one replica per primary and `replicas = 1`, a failover promotes a replica that holds
    /// every acknowledged write: the failover tests (SIGKILL of a master, with or without its
    /// replica cut off first) lost none, where the same writers without the acknowledgement
    /// lost all the cut-off replica missed (see the crate's durability section).
    ///
    /// **What it does not:** make Redis strongly consistent. A replica acknowledges what it
    /// received, not what it wrote to disk, so a crash of the replica too can lose the write;
    /// with more replicas than `replicas`, a failover may promote one that had not
    /// acknowledged; and a forced manual failover (`CLUSTER FAILOVER FORCE`, `TAKEOVER`) or a
    /// restart without persistence can lose it regardless.
    ///
    /// A zero `timeout` means what it means to `WAIT`: wait for ever (the store's timeout, when
    /// it has one, still ends the call). `WAIT` counts the replicas that have every write of
    /// the connection so far, which the clones of the store share: on a busy connection it may
    /// also wait for their writes. After the server lost its script cache (a restart, a
    /// failover, `SCRIPT FLUSH`), the first write sends `[EVAL …, WAIT …]` in a second
    /// pipeline: while no replica answers, that call waits out `timeout` twice.
    pub fn with_replica_ack(mut self, replicas: u32, timeout: Duration) -> Self {
        self.replica_ack = Some(ReplicaAck { replicas, timeout });
        self
    }

    /// Splits `save_all` batches into script calls of at most `entries` distinct keys instead
    /// of [`SAVE_ALL_CHUNK`]: fewer calls (less per-call work on the server) with larger
    /// chunks, shorter pauses of the server with smaller ones. The calls of one batch are
    /// pipelined whatever their size, so the round trips do not change.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] naming `Argument::Setting("save_all_chunk")` outside
    /// `1..=`[`MAX_SAVE_ALL_CHUNK`].
    pub fn with_save_all_chunk(mut self, entries: usize) -> Result<Self, Error> {
        self.save_all_chunk = validate_count("save_all_chunk", entries, MAX_SAVE_ALL_CHUNK)?;
        Ok(self)
    }

    /// The endpoint `Debug` shows, without credentials.
    pub(crate) fn with_endpoint(mut self, endpoint: String) -> Self {
        self.endpoint = Some(endpoint);
        self
    }

    /// The key prefix in use.
    pub fn key_prefix(&self) -> &str {
        &self.prefix
    }

    /// The cluster hash tag of `group`, `{<group with % and } percent-escaped>}`: a key that
    /// holds it lives in the same cluster slot as the group's checkpoints, so
    /// [`advance_in`](Self::advance_in) can write it atomically with an advance.
    pub fn hash_tag(&self, group: &str) -> Result<String, Error> {
        validate_group(group)?;
        Ok(layout::hash_tag(group))
    }

    /// The key of the hash that holds every checkpoint of `group`.
    pub fn group_key(&self, group: &str) -> Result<String, Error> {
        validate_group(group)?;
        Ok(layout::group_key(&self.prefix, group))
    }

    /// The connection the store runs on now (a handle to it; after a timeout, a store that
    /// connected itself runs its next calls on a new one).
    pub fn connection(&self) -> C
    where
        C: Clone,
    {
        self.connection.current()
    }

    /// The ACL rules of a Redis user that can do everything this store does and nothing else:
    /// the arguments after `ACL SETUSER <name> on ><password>`, one rule per element.
    ///
    /// Keys under the store's prefix only (`~<prefix>:*`, with the prefix's glob characters
    /// escaped), no pub/sub channels, and only the commands the store sends (`EVALSHA`, and
    /// `EVAL` after the server lost its script cache; `HGET` for `load`; `HLEN`, `HGETALL`
    /// and `HSCAN` for `list`; `SMEMBERS`, `SCAN` and `CLUSTER SLOTS` for the operations
    /// API) and that its scripts call (`HGET`, `HMGET`, `HSET`, `SISMEMBER`, `SADD`, `SREM`,
    /// `HDEL`), and `WAIT` when
    /// [`with_replica_ack`](Self::with_replica_ack) is set. Keys that
    /// [`advance_in`](Self::advance_in) writes need a pattern of their own, unless they
    /// are under the prefix too.
    ///
    /// redis-rs also sends `CLIENT SETINFO` when it connects and ignores its failure; on
    /// Redis 7.2 and later, add `+client|setinfo` to keep those refusals out of the ACL log
    /// (Redis 7.0 does not know the subcommand and refuses the rule).
    pub fn acl_rules(&self) -> Vec<String> {
        let pattern = key_pattern(&self.prefix);
        let mut rules: Vec<String> = ["resetkeys", pattern.as_str(), "resetchannels", "-@all"]
            .into_iter()
            .chain(COMMAND_RULES)
            .map(str::to_owned)
            .collect();
        if self.replica_ack.is_some() {
            rules.push(WAIT_RULE.to_owned());
        }
        rules
    }
}

impl<C> RedisCheckpointStore<C>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    /// Runs `request` on the store's connection (the front bounds it by the store's timeout,
    /// see [`Door::bound`]).
    ///
    /// Making a new connection first, when a call was abandoned on the current one, is part
    /// of the call and of its time. A call abandoned in the middle of its request (timed out)
    /// marks the connection it ran on stale, so that the next call makes a new one (see
    /// [`InFlight`]).
    pub(crate) async fn on_connection<T, R>(
        &self,
        operation: Operation,
        request: impl FnOnce(C) -> R,
    ) -> Result<T, Error>
    where
        R: Future<Output = Result<T, Error>>,
    {
        let (connection, generation) = self.connection.checkout(operation).await?;
        let in_flight = InFlight::new(&self.connection, generation);
        let reply = request(connection).await;
        in_flight.finished();
        reply
    }

    /// The replica acknowledgement asked for by
    /// [`with_replica_ack`](Self::with_replica_ack), which the requests send with each write.
    pub(crate) fn replica_ack(&self) -> Option<ReplicaAck> {
        self.replica_ack
    }
}

checkpoint_core::through_door!(
    [C: ConnectionLike + Clone + Send + Sync + 'static] RedisCheckpointStore<C>:
    checkpoints, exclusive, admin, leases, parked
);

impl<C> Door for RedisCheckpointStore<C>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    const BACKEND: &'static str = BACKEND;

    /// No table: the keys' prefix is in every key, and the spans name the group.
    fn place(&self) -> Option<&dyn fmt::Display> {
        None
    }

    /// The store's timeout bounds the whole call, a new connection first included.
    fn bound<'a, T: Send + 'a>(
        &'a self,
        operation: Operation,
        request: BoxFuture<'a, T>,
    ) -> BoxFuture<'a, T> {
        Box::pin(within(BACKEND, operation, self.timeout, request))
    }
}

impl<C> CheckpointDoor for RedisCheckpointStore<C>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    async fn send_list(&self, _checked: Checked, group: &str) -> Result<Vec<Checkpoint>, Error> {
        let key = layout::group_key(&self.prefix, group);
        self.on_connection(Operation::List, |mut connection| async move {
            let found = requests::list(&mut connection, &key).await?;
            Ok(found)
        })
        .await
    }

    async fn send_load(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> Result<Option<u64>, Error> {
        let key = layout::group_key(&self.prefix, group);
        let field = layout::field(subscription, partition);
        self.on_connection(Operation::Load, |mut connection| async move {
            requests::load(&mut connection, &key, &field).await
        })
        .await
    }

    async fn send_save(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<(), Error> {
        let key = layout::group_key(&self.prefix, group);
        let field = layout::field(subscription, partition);
        self.on_connection(Operation::Save, |mut connection| async move {
            let moved =
                requests::save(&mut connection, &key, &field, position, self.replica_ack).await?;
            tracing::Span::current().record("moved", moved);
            Ok(())
        })
        .await
    }

    async fn send_save_all(
        &self,
        _checked: Checked,
        group: &str,
        checkpoints: &[Checkpoint],
    ) -> Result<(), Error> {
        let key = layout::group_key(&self.prefix, group);
        // One entry per field, so the script never compares an entry with another of the same
        // batch; the highest of repeats wins, as the contract asks.
        let entries = requests::highest_per_key(checkpoints);
        let span = tracing::Span::current();
        span.record("chunks", entries.len().div_ceil(self.save_all_chunk));
        self.on_connection(Operation::SaveAll, |mut connection| async move {
            let moved = requests::save_all(
                &mut connection,
                &key,
                &entries,
                self.save_all_chunk,
                self.replica_ack,
            )
            .await?;
            span.record("moved", moved);
            Ok(())
        })
        .await
    }
}

impl<C> ExclusiveDoor for RedisCheckpointStore<C>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    async fn send_claim(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
        fingerprint: Fingerprint,
        initial_position: u64,
    ) -> Result<u64, Error> {
        let key = layout::group_key(&self.prefix, group);
        let field = layout::field(subscription, partition);
        self.on_connection(Operation::Claim, |mut connection| async move {
            requests::claim(
                &mut connection,
                (group, &key),
                (subscription, &field),
                fingerprint,
                initial_position,
                self.replica_ack,
            )
            .await
        })
        .await
    }

    async fn send_advance(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
    ) -> Result<(), Error> {
        self.advance_writing(group, subscription, partition, from, to, &[])
            .await
    }
}

#[cfg(test)]
mod tests {
    use checkpoint_core::Argument;

    use super::*;

    #[test]
    fn settings_that_can_be_wrong_are_refused_and_named() {
        let refused = |result: Result<RedisCheckpointStore<()>, Error>| {
            result
                .expect_err("refused")
                .invalid_input()
                .map(|i| i.argument)
        };
        let store = RedisCheckpointStore::new(());
        assert_eq!(store.timeout, Some(DEFAULT_TIMEOUT));
        let timeout = refused(store.clone().with_timeout(Duration::ZERO));
        assert_eq!(timeout, Some(Argument::Setting("timeout")));
        assert_eq!(store.clone().without_timeout().timeout, None);
        for chunk in [0, MAX_SAVE_ALL_CHUNK + 1] {
            let chunk = refused(store.clone().with_save_all_chunk(chunk));
            assert_eq!(chunk, Some(Argument::Setting("save_all_chunk")));
        }
        let prefix = refused(store.clone().with_key_prefix("a{b"));
        assert_eq!(prefix, Some(Argument::Setting("key_prefix")));
    }
}
