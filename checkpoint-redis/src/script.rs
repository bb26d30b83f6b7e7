//! Running the embedded Lua scripts: `EVALSHA`, and `EVAL` of the source when the server does
//! not have the script cached.

use redis::aio::ConnectionLike;
use redis::{Cmd, ErrorKind, FromRedisValue, RedisResult, Script, ServerErrorKind, ToRedisArgs};

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
        match self
            .command("EVALSHA", self.script.script.get_hash())
            .query_async(connection)
            .await
        {
            Err(error) if error.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                tracing::debug!("script not cached on the server: sending its source");
                self.command("EVAL", self.script.source)
                    .query_async(connection)
                    .await
            }
            result => result,
        }
    }
}
