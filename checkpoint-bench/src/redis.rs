//! Redis: the store on a `ConnectionManager`, and the same connection type running `PING`, the
//! store's own Lua script through `redis::Script`, and a hand-written `WATCH`/`MULTI` save.

use std::sync::Arc;

use checkpoint_conformance::round_trips::CountingProxy;
use checkpoint_redis::{RedisCheckpointStore, SAVE_ALL_CHUNK, SAVE_SCRIPT};
use redis::aio::{ConnectionManager, MultiplexedConnection};
use redis::{ConnectionAddr, Script};
use tokio::sync::Mutex;

use crate::subject::{
    Backend, BenchError, Documented, ListFn, SaveArgs, SaveFn, Subject, UnitFn, context,
};

/// The bench's own key prefix; its keys are deleted at the start of every run.
const PREFIX: &str = "checkpoint-bench";

/// The key prefix of the `groups` rows, deleted at the start of every run.
const GROUPS_PREFIX: &str = "checkpoint-bench-groups";

/// Connects, deletes the bench's keys and builds the direct and the counted subjects.
pub async fn setup(max_concurrency: u32) -> Result<Backend, BenchError> {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    let unreachable = "Redis is not reachable at REDIS_URL (default redis://127.0.0.1:6379); \
        start it with `bash scripts/services/machine.sh up` or set REDIS_URL";
    let client = redis::Client::open(url.as_str()).map_err(context("REDIS_URL"))?;
    let mut manager = client
        .get_connection_manager()
        .await
        .map_err(context(unreachable))?;
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query_async(&mut manager)
        .await
        .map_err(context(unreachable))?;
    let version = info
        .lines()
        .find_map(|line| line.strip_prefix("redis_version:"))
        .unwrap_or("unknown")
        .trim()
        .to_owned();
    let persistence: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("appendonly")
        .query_async(&mut manager)
        .await
        .map_err(context("CONFIG GET appendonly"))?;
    delete_bench_keys(&mut manager, PREFIX).await?;
    delete_bench_keys(&mut manager, GROUPS_PREFIX).await?;
    let groups_store = RedisCheckpointStore::new(manager.clone()).with_key_prefix(GROUPS_PREFIX)?;

    let ConnectionAddr::Tcp(host, port) = client.get_connection_info().addr().clone() else {
        return Err(
            "REDIS_URL must be a plain TCP address (redis://host:port) for the counting proxy"
                .into(),
        );
    };
    let proxy = CountingProxy::start((host.as_str(), port))
        .await
        .map_err(context(unreachable))?;
    let local = proxy.local_addr();
    let counted_client = redis::Client::open(
        client
            .get_connection_info()
            .clone()
            .set_addr(ConnectionAddr::Tcp(local.ip().to_string(), local.port())),
    )
    .map_err(context("Redis through the counting proxy"))?;

    Ok(Backend {
        name: "redis",
        server: format!(
            "Redis {version} (appendonly = {})",
            persistence.get(1).map_or("unknown", String::as_str)
        ),
        direct: subject(&client, max_concurrency).await?,
        counted: Some((subject(&counted_client, 1).await?, proxy)),
        groups_store: Arc::new(groups_store),
        documented: Documented {
            save: 1,
            load: 1,
            // One pipeline of ⌈n / 1,000⌉ script calls: the store waits for one round of
            // replies, which the proxy counts as 1, or as more (up to one per call) when Redis
            // answers the first calls before the last ones have passed the proxy. The one wait
            // itself is tested in checkpoint-redis (a proxy that delays every answer).
            save_all: |n| 1..=n.div_ceil(SAVE_ALL_CHUNK) as u64,
            // HLEN, then one HGETALL up to LIST_HGETALL_MAX fields (an empty group: HLEN only);
            // above, HSCAN steps whose COUNT is a hint: about one per LIST_SCAN_COUNT fields.
            list: Some(|n| match n {
                0 => 1,
                n if n <= checkpoint_redis::LIST_HGETALL_MAX => 2,
                n => 1 + n.div_ceil(checkpoint_redis::LIST_SCAN_COUNT) as u64,
            }),
        },
        batch_sizes: [1_000, 10_000],
        note: "",
        slow: false,
        release_exchanges: 0,
    })
}

async fn delete_bench_keys(
    manager: &mut ConnectionManager,
    prefix: &str,
) -> Result<(), BenchError> {
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}:*"))
        .query_async(manager)
        .await
        .map_err(context("listing the bench's keys"))?;
    if !keys.is_empty() {
        redis::cmd("DEL")
            .arg(&keys)
            .query_async::<()>(manager)
            .await
            .map_err(context("deleting the bench's keys"))?;
    }
    Ok(())
}

/// The store on a `ConnectionManager`, and the same connection type running `PING`, the
/// store's script, `HGETALL` and the hand-written save (on `hand_connections` connections of
/// its own).
async fn subject(client: &redis::Client, hand_connections: u32) -> Result<Subject, BenchError> {
    let manager = client
        .get_connection_manager()
        .await
        .map_err(context("Redis connection"))?;
    let store = RedisCheckpointStore::new(manager.clone()).with_key_prefix(PREFIX)?;
    // The key the store uses for a group, from its public API.
    let group_key: GroupKey = {
        let store = store.clone();
        Arc::new(move |group: &str| store.group_key(group))
    };
    let bulk_key: crate::bulk::GroupKey = {
        let store = store.clone();
        Arc::new(move |group: &str| store.group_key(group))
    };
    let hand_save = hand_save(client, hand_connections, Arc::clone(&group_key)).await?;
    Ok(Subject {
        store: Arc::new(store),
        floor: ping(&manager),
        commit_floor: None,
        raw_save: raw_save(&manager, Arc::clone(&group_key)),
        hand_save,
        raw_list: raw_list(&manager, group_key),
        raw_save_all: Some(crate::bulk::redis(
            manager.clone(),
            SAVE_ALL_CHUNK,
            Arc::clone(&bulk_key),
        )),
        script_save_all: Some(crate::bulk::redis_script(manager, SAVE_ALL_CHUNK, bulk_key)),
        acquire_floor: None,
    })
}

/// The key of a group's hash, as the store names it.
type GroupKey = Arc<dyn Fn(&str) -> Result<String, checkpoint_core::Error> + Send + Sync>;

/// `PING`: the floor.
fn ping(manager: &ConnectionManager) -> UnitFn {
    let manager = manager.clone();
    Arc::new(move || {
        let mut manager = manager.clone();
        Box::pin(async move {
            redis::cmd("PING")
                .query_async::<String>(&mut manager)
                .await?;
            Ok(())
        })
    })
}

/// The store's own save script, invoked through `redis::Script` without the store.
fn raw_save(manager: &ConnectionManager, group_key: GroupKey) -> SaveFn {
    let manager = manager.clone();
    let script = Arc::new(Script::new(SAVE_SCRIPT));
    Arc::new(move |args: SaveArgs| {
        let (mut manager, script) = (manager.clone(), Arc::clone(&script));
        let key = group_key(&args.group);
        Box::pin(async move {
            let key = key?;
            // The group's retired set, which the script checks (`<group key>:retired`).
            let retired = format!("{key}:retired");
            script
                .key(key)
                .key(retired)
                .arg(format!("{}:{}", args.partition, args.subscription))
                .arg(args.position.to_string())
                .invoke_async::<i64>(&mut manager)
                .await?;
            Ok(())
        })
    })
}

/// [`hand_written_save`] on `connections` connections of its own, a save taking the one of
/// its partition.
async fn hand_save(
    client: &redis::Client,
    connections: u32,
    group_key: GroupKey,
) -> Result<SaveFn, BenchError> {
    // WATCH belongs to a connection, so the hand-written save cannot share a multiplexed one:
    // each worker gets its own connection, as a user would have to arrange.
    let mut opened = Vec::new();
    for _ in 0..connections {
        opened.push(Arc::new(Mutex::new(
            client
                .get_multiplexed_async_connection()
                .await
                .map_err(context("Redis connection for WATCH"))?,
        )));
    }
    let connections = Arc::new(opened);
    Ok(Arc::new(move |args: SaveArgs| {
        let connections = Arc::clone(&connections);
        let key = group_key(&args.group);
        Box::pin(async move {
            let slot = args.partition as usize % connections.len();
            let mut connection = connections[slot].lock().await;
            hand_written_save(&mut connection, &key?, &args).await
        })
    }))
}

/// `HGETALL` of the group's hash: the raw query behind `list`.
fn raw_list(manager: &ConnectionManager, group_key: GroupKey) -> ListFn {
    let manager = manager.clone();
    Arc::new(move |group: Arc<str>| {
        let mut manager = manager.clone();
        let key = group_key(&group);
        Box::pin(async move {
            let flat: Vec<Vec<u8>> = redis::cmd("HGETALL")
                .arg(key?)
                .query_async(&mut manager)
                .await?;
            Ok(flat.len() / 2)
        })
    })
}

/// What a user writes without a script: `WATCH` the hash, `HGET` and compare in the client,
/// then `MULTI`/`HSET`/`EXEC` (one pipelined round trip), again when `EXEC` aborts because
/// the hash changed. Three round trips when nothing interferes.
async fn hand_written_save(
    connection: &mut MultiplexedConnection,
    key: &str,
    args: &SaveArgs,
) -> Result<(), BenchError> {
    let field = format!("{}:{}", args.partition, args.subscription);
    loop {
        redis::cmd("WATCH")
            .arg(key)
            .query_async::<()>(connection)
            .await?;
        let stored: Option<String> = redis::cmd("HGET")
            .arg(key)
            .arg(&field)
            .query_async(connection)
            .await?;
        let behind = match stored {
            None => true,
            Some(stored) => stored.parse::<u64>()? < args.position,
        };
        if !behind {
            redis::cmd("UNWATCH").query_async::<()>(connection).await?;
            return Ok(());
        }
        let committed: Option<(i64,)> = redis::pipe()
            .atomic()
            .hset(key, &field, args.position.to_string())
            .query_async(connection)
            .await?;
        if committed.is_some() {
            return Ok(());
        }
    }
}
