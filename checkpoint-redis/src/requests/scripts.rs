//! How a script of `lua/` runs: `EVALSHA`, and `EVAL` of the source when the server does not
//! have it cached; one call at a time or several pipelined, followed in the same pipeline by
//! `WAIT` when a replica acknowledgement is asked for; and the reply no script gives.

use std::time::Duration;

use checkpoint_core::{Error, Operation, UnexpectedValue};
use redis::aio::ConnectionLike;
use redis::{
    Arg, Cmd, ErrorKind, FromRedisValue, RedisError, RedisResult, RedisWrite, Script,
    ServerErrorKind, ToRedisArgs, Value,
};

use crate::BACKEND;
use crate::error::ReplicaAckError;
use crate::layout;

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
pub(crate) struct Acknowledged(Option<(ReplicaAck, u64)>);

impl Acknowledged {
    /// A retryable [`Error::Backend`] whose source is a [`ReplicaAckError`] when fewer replicas
    /// acknowledged than asked for.
    pub(crate) fn check(self, operation: Operation) -> Result<(), Error> {
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

/// One of the store's Lua scripts: its source, and its SHA-1 for `EVALSHA`.
pub(crate) struct LuaScript {
    pub(crate) source: &'static str,
    script: Script,
}

impl LuaScript {
    pub(crate) fn new(source: &'static str) -> Self {
        Self {
            source,
            script: Script::new(source),
        }
    }

    /// A call of this script, to which keys and arguments are added.
    pub(crate) fn call(&'static self) -> ScriptCall {
        ScriptCall {
            script: self,
            keys: Cmd::new(),
            args: Cmd::new(),
        }
    }
}

/// A call of a [`LuaScript`] with its `KEYS` and `ARGV`.
///
/// Each list is written straight into the buffer of a [`Cmd`] that is never sent (one
/// allocation for all its arguments, none per argument), and copied behind `EVALSHA` or
/// `EVAL` when the call is sent.
pub(crate) struct ScriptCall {
    script: &'static LuaScript,
    keys: Cmd,
    args: Cmd,
}

impl ScriptCall {
    pub(crate) fn key(&mut self, key: impl ToRedisArgs) -> &mut Self {
        self.keys.arg(key);
        self
    }

    pub(crate) fn arg(&mut self, arg: impl ToRedisArgs) -> &mut Self {
        self.args.arg(arg);
        self
    }

    /// An argument written from its `Display` form, without a `String` of its own.
    pub(crate) fn arg_fmt(&mut self, arg: impl std::fmt::Display) -> &mut Self {
        self.args.write_arg_fmt(arg);
        self
    }

    fn command(&self, verb: &str, script: &str) -> Cmd {
        let mut command = redis::cmd(verb);
        command.arg(script).arg(self.keys.args_iter().len());
        // Only `cursor_arg` makes an `Arg::Cursor`, and a call never uses it.
        for arg in self.keys.args_iter().chain(self.args.args_iter()) {
            if let Arg::Simple(bytes) = arg {
                command.arg(bytes);
            }
        }
        command
    }

    /// Runs the script in one round trip when the server has it cached (`EVALSHA`), in two
    /// when it does not (after a restart, a failover or `SCRIPT FLUSH`).
    ///
    /// On `NOSCRIPT` this sends `EVAL` with the source, which runs the script and caches it in
    /// one command. redis-rs's own `Script::invoke_async` sends `SCRIPT LOAD` and then
    /// `EVALSHA` again instead, which fails if the cache is flushed between the two, and on a
    /// cluster loads the script through a different route than the key's node.
    pub(crate) async fn invoke<T, C>(&self, connection: &mut C) -> RedisResult<T>
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
    pub(crate) async fn invoke_acknowledged<T, C>(
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

/// One command of the store's own (not a script) and, when `ack` asks for it, `WAIT` in the
/// same pipeline (`[command, WAIT …]`): one round trip either way, as for a script.
pub(crate) async fn query_acknowledged<T, C>(
    command: Cmd,
    connection: &mut C,
    ack: Option<ReplicaAck>,
) -> RedisResult<(T, Acknowledged)>
where
    T: FromRedisValue,
    C: ConnectionLike,
{
    if ack.is_none() {
        return Ok((command.query_async(connection).await?, Acknowledged(None)));
    }
    let (mut replies, waited) = send_pipeline(std::iter::once(command), connection, ack).await?;
    let reply = replies.pop().ok_or_else(missing_reply)??;
    let acknowledged = waited.map(acknowledged_count).transpose()?;
    Ok((
        redis::from_redis_value(reply)?,
        Acknowledged(ack.zip(acknowledged)),
    ))
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
pub(crate) async fn invoke_pipelined<T, C>(
    calls: &[ScriptCall],
    connection: &mut C,
    ack: Option<ReplicaAck>,
) -> RedisResult<(Vec<T>, Acknowledged)>
where
    T: FromRedisValue,
    C: ConnectionLike,
{
    let (replies, waited) =
        send_pipeline(calls.iter().map(ScriptCall::evalsha), connection, ack).await?;
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
        let sources = uncached.iter().map(|&index| calls[index].eval());
        let (replies, waited) = send_pipeline(sources, connection, ack).await?;
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

/// Sends `commands` in one pipeline, followed by `ack`'s `WAIT`: the replies of `commands`, in
/// their order, and the `WAIT`'s. Every reply comes back on its own, so that a `NOSCRIPT` is
/// told apart from other errors and only those calls are sent again.
async fn send_pipeline<C: ConnectionLike>(
    commands: impl Iterator<Item = Cmd>,
    connection: &mut C,
    ack: Option<ReplicaAck>,
) -> RedisResult<(Vec<RedisResult<Value>>, Option<RedisResult<Value>>)> {
    let mut pipeline = redis::pipe();
    pipeline.ignore_errors();
    let mut sent = 0;
    for command in commands {
        pipeline.add_command(command);
        sent += 1;
    }
    if let Some(ack) = ack {
        pipeline.add_command(ack.command());
    }
    let mut replies: Vec<RedisResult<Value>> = pipeline.query_async(connection).await?;
    check_count(replies.len(), sent + usize::from(ack.is_some()))?;
    let waited = ack.and_then(|_| replies.pop());
    Ok((replies, waited))
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

/// A script reply of a shape no script of this store returns.
pub(super) fn unknown_reply(reply: &[String]) -> UnexpectedValue {
    let shown: Vec<String> = reply
        .iter()
        .map(|part| layout::shown(part.as_bytes()))
        .collect();
    UnexpectedValue::new("script reply", format!("[{}]", shown.join(", ")))
}
