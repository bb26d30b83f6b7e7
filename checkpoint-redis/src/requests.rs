//! Every request the store sends, and how each reply is read: the Lua scripts of `lua/`
//! (embedded at compile time, each behind the shared helpers of `lua/positions.lua`), the
//! plain commands (`HGET`, `HSCAN`), and how a script runs: `EVALSHA`, and `EVAL` of the
//! source when the server does not have the script cached; one call at a time or several
//! pipelined, followed in the same pipeline by `WAIT` when a replica acknowledgement is asked
//! for ([`ReplicaAck`]).
//!
//! Each function below sends one request (or one pipeline) on the store's connection and reads
//! its reply. The store validates the input before and applies its timeout around it.

use std::collections::HashMap;
use std::sync::LazyLock;
use std::time::Duration;

use checkpoint_core::{Checkpoint, Error, Fingerprint, Operation, UnexpectedValue};
use redis::aio::ConnectionLike;
use redis::{
    Cmd, ErrorKind, FromRedisValue, RedisError, RedisResult, Script, ServerErrorKind, ToRedisArgs,
    Value,
};

use crate::error::{ReplicaAckError, backend, unexpected};
use crate::layout::{self, parse_field, parse_fingerprint, parse_position, parse_value};
use crate::{BACKEND, HashWrite, LIST_SCAN_COUNT};

mod admin;
pub(crate) use admin::{groups, purge, retire, retired_names, start_at};

// Each script is `lua/positions.lua` (the helpers every script shares) followed by the
// operation's own file: the script the server runs.

/// `save`: move one checkpoint forward.
static SAVE: LazyLock<LuaScript> = LazyLock::new(|| {
    LuaScript::new(concat!(
        include_str!("../lua/positions.lua"),
        include_str!("../lua/save.lua")
    ))
});
/// `save_all`: move a chunk of checkpoints of one group forward.
static SAVE_ALL: LazyLock<LuaScript> = LazyLock::new(|| {
    LuaScript::new(concat!(
        include_str!("../lua/positions.lua"),
        include_str!("../lua/save_all.lua")
    ))
});
/// `claim`: load an exclusive checkpoint, creating it on first use.
static CLAIM: LazyLock<LuaScript> = LazyLock::new(|| {
    LuaScript::new(concat!(
        include_str!("../lua/positions.lua"),
        include_str!("../lua/claim.lua")
    ))
});
/// `advance`: compare-and-set, with the caller's hash writes.
static ADVANCE: LazyLock<LuaScript> = LazyLock::new(|| {
    LuaScript::new(concat!(
        include_str!("../lua/positions.lua"),
        include_str!("../lua/advance.lua")
    ))
});

/// The commands the store sends (`EVALSHA`, `EVAL` after the server lost its script cache,
/// `HGET` for `load`, `HSCAN` for `list`) and those its scripts call (`HGET`, `HMGET`, `HSET`),
/// as ACL rules; `WAIT` ([`WAIT_RULE`]) only with a replica acknowledgement.
///
/// Then those of the tombstones and of the operations API ([`admin`]): `SISMEMBER`, which every
/// writing script calls; `SADD`, `HDEL` and `SREM`, which the operator's scripts call;
/// `SMEMBERS` for `retired`; `SCAN` and, on a cluster, `CLUSTER SLOTS` for `groups`.
pub(crate) const COMMAND_RULES: [&str; 13] = [
    "+evalsha",
    "+eval",
    "+hget",
    "+hmget",
    "+hset",
    "+hscan",
    "+sismember",
    "+sadd",
    "+srem",
    "+hdel",
    "+smembers",
    "+scan",
    "+cluster|slots",
];
/// The ACL rule for the `WAIT` of a [`ReplicaAck`].
pub(crate) const WAIT_RULE: &str = "+wait";

/// `HGET` of one checkpoint.
pub(crate) async fn load<C: ConnectionLike>(
    connection: &mut C,
    key: &str,
    field: &str,
) -> Result<Option<u64>, Error> {
    let value: Option<Vec<u8>> = redis::cmd("HGET")
        .arg(key)
        .arg(field)
        .query_async(connection)
        .await
        .map_err(|e| backend(Operation::Load, e))?;
    value
        .map(|value| parse_value(&value).map(|value| value.position))
        .transpose()
        .map_err(unexpected(Operation::Load))
}

/// `HSCAN … COUNT` [`LIST_SCAN_COUNT`] of a group's hash, following the cursor to 0.
pub(crate) async fn list<C: ConnectionLike>(
    connection: &mut C,
    key: &str,
) -> Result<HashMap<(String, u32), u64>, Error> {
    // HSCAN may return a field more than once while the hash is rehashed; keep the highest
    // position seen (positions only move forward).
    let mut found: HashMap<(String, u32), u64> = HashMap::new();
    let mut cursor: u64 = 0;
    loop {
        let (next, items): (u64, Vec<Vec<u8>>) = redis::cmd("HSCAN")
            .arg(key)
            .arg(cursor)
            .arg("COUNT")
            .arg(LIST_SCAN_COUNT)
            .query_async(connection)
            .await
            .map_err(|e| backend(Operation::List, e))?;
        if items.len() % 2 != 0 {
            return Err(unexpected(Operation::List)(UnexpectedValue::new(
                "HSCAN reply",
                format!("{} elements, not field and value pairs", items.len()),
            )));
        }
        for pair in items.chunks_exact(2) {
            let key = parse_field(&pair[0]).map_err(unexpected(Operation::List))?;
            let value = parse_value(&pair[1]).map_err(unexpected(Operation::List))?;
            let position = found.entry(key).or_insert(value.position);
            *position = (*position).max(value.position);
        }
        if next == 0 {
            return Ok(found);
        }
        cursor = next;
    }
}

/// `save.lua` (with `ack`'s `WAIT` in the same pipeline): whether the stored position moved.
pub(crate) async fn save<C: ConnectionLike>(
    connection: &mut C,
    key: &str,
    field: &str,
    position: u64,
    ack: Option<ReplicaAck>,
) -> Result<bool, Error> {
    let (moved, acknowledged): (i64, _) = SAVE
        .call()
        .key(key)
        .key(layout::retired_key(key))
        .arg(field)
        .arg(position.to_string())
        .invoke_acknowledged(connection, ack)
        .await
        .map_err(|e| backend(Operation::Save, e))?;
    acknowledged.check(Operation::Save)?;
    Ok(moved == 1)
}

/// `save_all.lua`, one call per chunk of at most `chunk` entries, all calls in one pipeline:
/// the client waits for one round of replies, and the server still runs each chunk as a short
/// script of its own. Every chunk uses the group's key, so on a cluster the pipeline goes to
/// one node, and `ack`'s `WAIT` ends it. `entries` holds one entry per key. Returns how many
/// checkpoints moved.
pub(crate) async fn save_all<C: ConnectionLike>(
    connection: &mut C,
    key: &str,
    entries: &[Checkpoint],
    chunk: usize,
    ack: Option<ReplicaAck>,
) -> Result<i64, Error> {
    let calls: Vec<ScriptCall> = entries
        .chunks(chunk)
        .map(|chunk| {
            let mut call = SAVE_ALL.call();
            call.key(key).key(layout::retired_key(key));
            for checkpoint in chunk {
                call.arg(layout::field(
                    &checkpoint.subscription,
                    checkpoint.partition,
                ))
                .arg(checkpoint.position.to_string());
            }
            call
        })
        .collect();
    let (moved, acknowledged): (Vec<i64>, _) = invoke_pipelined(&calls, connection, ack)
        .await
        .map_err(|e| backend(Operation::SaveAll, e))?;
    acknowledged.check(Operation::SaveAll)?;
    Ok(moved.iter().sum())
}

/// `claim.lua` (with `ack`'s `WAIT` in the same pipeline): the stored position, or
/// [`Error::QueryChanged`].
pub(crate) async fn claim<C: ConnectionLike>(
    connection: &mut C,
    key: &str,
    field: &str,
    fingerprint: Fingerprint,
    initial_position: u64,
    ack: Option<ReplicaAck>,
) -> Result<u64, Error> {
    let (reply, acknowledged): (Vec<String>, _) = CLAIM
        .call()
        .key(key)
        .key(layout::retired_key(key))
        .arg(field)
        .arg(fingerprint.to_hex())
        .arg(initial_position.to_string())
        .invoke_acknowledged(connection, ack)
        .await
        .map_err(|e| backend(Operation::Claim, e))?;
    match reply.as_slice() {
        [ok, position] if ok == "ok" => {
            let position = parse_position(position).map_err(unexpected(Operation::Claim))?;
            acknowledged.check(Operation::Claim)?;
            Ok(position)
        }
        [retired] if retired == "retired" => Err(admin::retired(key, field)),
        [changed, stored] if changed == "changed" => Err(Error::QueryChanged {
            stored: parse_fingerprint(stored).map_err(unexpected(Operation::Claim))?,
            requested: fingerprint,
        }),
        other => Err(unexpected(Operation::Claim)(unknown_reply(other))),
    }
}

/// `advance.lua` (with `ack`'s `WAIT` in the same pipeline): the compare-and-set from `from`
/// to `to` and, only when it succeeds, the caller's `writes`; [`Error::Moved`] when the
/// checkpoint is not at `from`.
pub(crate) async fn advance<C: ConnectionLike>(
    connection: &mut C,
    key: &str,
    field: &str,
    from: u64,
    to: u64,
    writes: &[HashWrite<'_>],
    ack: Option<ReplicaAck>,
) -> Result<(), Error> {
    let mut call = ADVANCE.call();
    call.key(key)
        .arg(field)
        .arg(from.to_string())
        .arg(to.to_string());
    for write in writes {
        call.key(write.key).arg(write.field).arg(write.value);
    }
    let (reply, acknowledged): (Vec<String>, _) = call
        .invoke_acknowledged(connection, ack)
        .await
        .map_err(|e| backend(Operation::Advance, e))?;
    match reply.as_slice() {
        [ok] if ok == "ok" => acknowledged.check(Operation::Advance),
        [moved] if moved == "moved" => Err(Error::Moved {
            expected: from,
            current: None,
        }),
        [moved, current] if moved == "moved" => Err(Error::Moved {
            expected: from,
            current: Some(parse_position(current).map_err(unexpected(Operation::Advance))?),
        }),
        other => Err(unexpected(Operation::Advance)(unknown_reply(other))),
    }
}

/// A replica acknowledgement: `WAIT replicas timeout`, sent in the same pipeline as the write
/// it acknowledges (`[EVALSHA …, WAIT …]`), never as a command of its own.
///
/// In one pipeline the write and its `WAIT` go to the same node on the same connection, and
/// are retried together: redis-rs routes a cluster pipeline to the node of its first keyed
/// command (the script's key; a keyless `WAIT` does not change the route) and redirects or
/// retries it whole. A `WAIT` of its own is keyless, and redis-rs fans it out to every
/// master it knows, which skips a master whose connection is gone (a false acknowledgement
/// while a killed master awaits its replica's promotion) and fails on a node that is no
/// longer a master.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ReplicaAck {
    /// The replicas that must acknowledge.
    pub(crate) replicas: u32,
    /// The `WAIT` timeout.
    pub(crate) timeout: Duration,
}

impl ReplicaAck {
    fn command(&self) -> Cmd {
        // WAIT takes milliseconds; round up so that a sub-millisecond timeout does not turn
        // into 0, which means "for ever".
        let millis = u64::try_from(self.timeout.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX);
        let mut command = redis::cmd("WAIT");
        command.arg(self.replicas).arg(millis);
        command
    }
}

/// What the `WAIT` sent with a write answered, if one was asked for.
#[must_use]
struct Acknowledged(Option<(ReplicaAck, u64)>);

impl Acknowledged {
    /// A retryable [`Error::Backend`] whose source is a [`ReplicaAckError`] when fewer replicas
    /// acknowledged than asked for.
    fn check(self, operation: Operation) -> Result<(), Error> {
        match self.0 {
            Some((ack, acknowledged)) if acknowledged < u64::from(ack.replicas) => {
                Err(Error::backend(
                    BACKEND,
                    operation,
                    true,
                    ReplicaAckError {
                        requested: ack.replicas,
                        acknowledged,
                        timeout: ack.timeout,
                    },
                ))
            }
            _ => Ok(()),
        }
    }
}

/// A script reply of a shape no script of this store returns.
fn unknown_reply(reply: &[String]) -> UnexpectedValue {
    let shown: Vec<String> = reply
        .iter()
        .map(|part| layout::shown(part.as_bytes()))
        .collect();
    UnexpectedValue::new("script reply", format!("[{}]", shown.join(", ")))
}

/// One of the store's Lua scripts: its source, and its SHA-1 for `EVALSHA`.
struct LuaScript {
    source: &'static str,
    script: Script,
}

impl LuaScript {
    fn new(source: &'static str) -> Self {
        Self {
            source,
            script: Script::new(source),
        }
    }

    /// A call of this script, to which keys and arguments are added.
    fn call(&'static self) -> ScriptCall {
        ScriptCall {
            script: self,
            keys: Vec::new(),
            args: Vec::new(),
        }
    }
}

/// A call of a [`LuaScript`] with its `KEYS` and `ARGV`.
struct ScriptCall {
    script: &'static LuaScript,
    keys: Vec<Vec<u8>>,
    args: Vec<Vec<u8>>,
}

impl ScriptCall {
    fn key(&mut self, key: impl ToRedisArgs) -> &mut Self {
        self.keys.extend(key.to_redis_args());
        self
    }

    fn arg(&mut self, arg: impl ToRedisArgs) -> &mut Self {
        self.args.extend(arg.to_redis_args());
        self
    }

    fn command(&self, verb: &str, script: &str) -> Cmd {
        let mut command = redis::cmd(verb);
        command
            .arg(script)
            .arg(self.keys.len())
            .arg(&self.keys)
            .arg(&self.args);
        command
    }

    /// Runs the script in one round trip when the server has it cached (`EVALSHA`), in two
    /// when it does not (after a restart, a failover or `SCRIPT FLUSH`).
    ///
    /// On `NOSCRIPT` this sends `EVAL` with the source, which runs the script and caches it in
    /// one command. redis-rs's own `Script::invoke_async` sends `SCRIPT LOAD` and then
    /// `EVALSHA` again instead, which fails if the cache is flushed between the two, and on a
    /// cluster loads the script through a different route than the key's node.
    async fn invoke<T, C>(&self, connection: &mut C) -> RedisResult<T>
    where
        T: FromRedisValue,
        C: ConnectionLike,
    {
        match self.evalsha().query_async(connection).await {
            Err(error) if is_noscript(&error) => {
                tracing::debug!("script not cached on the server: sending its source");
                self.eval().query_async(connection).await
            }
            result => result,
        }
    }

    /// [`invoke`](Self::invoke) and, when `ack` asks for it, `WAIT` in the same pipeline:
    /// `[EVALSHA …, WAIT …]`, and `[EVAL …, WAIT …]` on `NOSCRIPT` (see
    /// [`invoke_pipelined`]). One round trip when the script is cached, as without.
    async fn invoke_acknowledged<T, C>(
        &self,
        connection: &mut C,
        ack: Option<ReplicaAck>,
    ) -> RedisResult<(T, Acknowledged)>
    where
        T: FromRedisValue,
        C: ConnectionLike,
    {
        if ack.is_none() {
            return Ok((self.invoke(connection).await?, Acknowledged(None)));
        }
        let (mut replies, acknowledged) =
            invoke_pipelined(std::slice::from_ref(self), connection, ack).await?;
        let reply = replies.pop().ok_or_else(missing_reply)?;
        Ok((reply, acknowledged))
    }

    fn evalsha(&self) -> Cmd {
        self.command("EVALSHA", self.script.script.get_hash())
    }

    fn eval(&self) -> Cmd {
        self.command("EVAL", self.script.source)
    }
}

fn is_noscript(error: &RedisError) -> bool {
    error.kind() == ErrorKind::Server(ServerErrorKind::NoScript)
}

/// Runs every call in one pipeline: all of them are written before any reply is read, so the
/// caller waits for one round of replies however many calls there are. The server still runs
/// each call as a script of its own, in order, and serves other clients between them. Returns
/// the replies in the order of `calls`, and what `ack`'s `WAIT` answered.
///
/// Calls that find the script gone (`NOSCRIPT`: a restart, a failover or `SCRIPT FLUSH`) are
/// sent again, in a second pipeline, as `EVAL` with the source: one more round trip, once.
/// If any call fails otherwise, the first such error is returned; the other calls were sent
/// all the same, so any of them may have been applied.
///
/// With `ack`, `WAIT` is the last command of each pipeline: the writes and their `WAIT` go to
/// one node on one connection (see [`ReplicaAck`]). When calls are sent again after
/// `NOSCRIPT`, the answer is the fewer of the two counts if the first pipeline applied any
/// call (it may have run on another node, had the slot moved in between), otherwise the
/// second's alone; the first `WAIT` then waited for nothing of this call, at most its timeout.
async fn invoke_pipelined<T, C>(
    calls: &[ScriptCall],
    connection: &mut C,
    ack: Option<ReplicaAck>,
) -> RedisResult<(Vec<T>, Acknowledged)>
where
    T: FromRedisValue,
    C: ConnectionLike,
{
    let mut pipeline = redis::pipe();
    // Every reply comes back on its own, so that a NOSCRIPT is told apart from other errors
    // and only those calls are sent again.
    pipeline.ignore_errors();
    for call in calls {
        pipeline.add_command(call.evalsha());
    }
    if let Some(ack) = ack {
        pipeline.add_command(ack.command());
    }
    let mut replies: Vec<RedisResult<Value>> = pipeline.query_async(connection).await?;
    check_count(replies.len(), calls.len() + usize::from(ack.is_some()))?;
    let waited = ack.and_then(|_| replies.pop());
    let mut done = Vec::with_capacity(calls.len());
    let mut uncached = Vec::new();
    for (index, reply) in replies.into_iter().enumerate() {
        match reply {
            Ok(value) => done.push(Some(redis::from_redis_value::<T>(value)?)),
            Err(error) if is_noscript(&error) => {
                uncached.push(index);
                done.push(None);
            }
            Err(error) => return Err(error),
        }
    }
    let mut acknowledged = waited.map(acknowledged_count).transpose()?;
    if !uncached.is_empty() {
        tracing::debug!(
            calls = uncached.len(),
            "script not cached on the server: sending its source"
        );
        let mut pipeline = redis::pipe();
        pipeline.ignore_errors();
        for &index in &uncached {
            pipeline.add_command(calls[index].eval());
        }
        if let Some(ack) = ack {
            pipeline.add_command(ack.command());
        }
        let mut replies: Vec<RedisResult<Value>> = pipeline.query_async(connection).await?;
        check_count(replies.len(), uncached.len() + usize::from(ack.is_some()))?;
        let waited = ack.and_then(|_| replies.pop());
        let applied_before = uncached.len() < calls.len();
        for (index, reply) in uncached.into_iter().zip(replies) {
            done[index] = Some(redis::from_redis_value::<T>(reply?)?);
        }
        if let Some(reply) = waited {
            let again = acknowledged_count(reply)?;
            acknowledged = Some(match acknowledged {
                Some(first) if applied_before => first.min(again),
                _ => again,
            });
        }
    }
    let replies = done
        .into_iter()
        .map(|reply| reply.ok_or_else(missing_reply))
        .collect::<RedisResult<Vec<T>>>()?;
    let acknowledged = ack.zip(acknowledged);
    Ok((replies, Acknowledged(acknowledged)))
}

/// The reply of `WAIT`: how many replicas acknowledged.
fn acknowledged_count(reply: RedisResult<Value>) -> RedisResult<u64> {
    Ok(redis::from_redis_value(reply?)?)
}

fn check_count(replies: usize, calls: usize) -> RedisResult<()> {
    if replies == calls {
        Ok(())
    } else {
        Err(missing_reply())
    }
}

fn missing_reply() -> RedisError {
    RedisError::from((
        ErrorKind::Client,
        "a pipeline of script calls returned a different number of replies",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_script_starts_with_the_shared_helpers_once() {
        let helpers = include_str!("../lua/positions.lua");
        for script in [&SAVE, &SAVE_ALL, &CLAIM, &ADVANCE] {
            assert!(script.source.starts_with(helpers));
            assert_eq!(script.source.matches("local function ahead").count(), 1);
            assert!(script.source.contains("KEYS[1]"));
        }
    }
}
