//! Running the embedded Lua scripts: `EVALSHA`, and `EVAL` of the source when the server does
//! not have the script cached; one call at a time or several pipelined.

use redis::aio::ConnectionLike;
use redis::{
    Cmd, ErrorKind, FromRedisValue, RedisError, RedisResult, Script, ServerErrorKind, ToRedisArgs,
};

/// One of the store's Lua scripts: its source, and its SHA-1 for `EVALSHA`.
pub(crate) struct LuaScript {
    source: &'static str,
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
            keys: Vec::new(),
            args: Vec::new(),
        }
    }
}

/// A call of a [`LuaScript`] with its `KEYS` and `ARGV`.
pub(crate) struct ScriptCall {
    script: &'static LuaScript,
    keys: Vec<Vec<u8>>,
    args: Vec<Vec<u8>>,
}

impl ScriptCall {
    pub(crate) fn key(&mut self, key: impl ToRedisArgs) -> &mut Self {
        self.keys.extend(key.to_redis_args());
        self
    }

    pub(crate) fn arg(&mut self, arg: impl ToRedisArgs) -> &mut Self {
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
/// the replies in the order of `calls`.
///
/// Calls that find the script gone (`NOSCRIPT`: a restart, a failover or `SCRIPT FLUSH`) are
/// sent again, in a second pipeline, as `EVAL` with the source: one more round trip, once.
/// If any call fails otherwise, the first such error is returned; the other calls were sent
/// all the same, so any of them may have been applied.
pub(crate) async fn invoke_pipelined<T, C>(
    calls: &[ScriptCall],
    connection: &mut C,
) -> RedisResult<Vec<T>>
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
    let replies: Vec<RedisResult<T>> = pipeline.query_async(connection).await?;
    check_count(replies.len(), calls.len())?;
    let mut done = Vec::with_capacity(calls.len());
    let mut uncached = Vec::new();
    for (index, reply) in replies.into_iter().enumerate() {
        match reply {
            Ok(value) => done.push(Some(value)),
            Err(error) if is_noscript(&error) => {
                uncached.push(index);
                done.push(None);
            }
            Err(error) => return Err(error),
        }
    }
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
        let replies: Vec<RedisResult<T>> = pipeline.query_async(connection).await?;
        check_count(replies.len(), uncached.len())?;
        for (index, reply) in uncached.into_iter().zip(replies) {
            done[index] = Some(reply?);
        }
    }
    done.into_iter()
        .map(|reply| reply.ok_or_else(missing_reply))
        .collect()
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
