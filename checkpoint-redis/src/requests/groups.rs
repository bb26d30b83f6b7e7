//! `groups`: the `SCAN` of every key of the store, on the one server or on every master of a
//! cluster, each group read back from its keys.

use std::any::Any;
use std::collections::{BTreeMap, BTreeSet};

use checkpoint_core::{Error, Operation};
use redis::aio::ConnectionLike;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
use redis::{Cmd, RedisResult, Value};

use crate::GROUPS_SCAN_COUNT;
use crate::error::backend;
use crate::layout;

/// Every group of the store under `prefix`: `SCAN 0 … MATCH <prefix>:{* COUNT`
/// [`GROUPS_SCAN_COUNT`], following the cursor to 0, on the one server, or on every master of
/// a cluster (a [`ClusterConnection`]: each master is reached through a slot it serves, read
/// from `CLUSTER SLOTS`), the group read back from each key of the store's two kinds; sorted by
/// bytes, each once.
///
/// Any other connection type is one server to this function: on a cluster behind a connection
/// of another type it would see one node's keys only.
pub(crate) async fn groups<C: ConnectionLike + 'static>(
    connection: &mut C,
    prefix: &str,
) -> Result<Vec<String>, Error> {
    let pattern = layout::scan_pattern(prefix);
    let mut found = BTreeSet::new();
    let scanned = match (connection as &mut dyn Any).downcast_mut::<ClusterConnection>() {
        Some(cluster) => scan_cluster(cluster, prefix, &pattern, &mut found).await,
        None => scan_node(connection, prefix, &pattern, &mut found).await,
    };
    scanned.map_err(|e| backend(Operation::Groups, e))?;
    Ok(found.into_iter().collect())
}

/// One `SCAN` call from `cursor`.
fn scan(cursor: u64, pattern: &str) -> Cmd {
    let mut command = redis::cmd("SCAN");
    command
        .arg(cursor)
        .arg("MATCH")
        .arg(pattern)
        .arg("COUNT")
        .arg(GROUPS_SCAN_COUNT);
    command
}

/// Adds the groups of a `SCAN` reply's keys to `found`; returns the next cursor.
fn read_scan(reply: Value, prefix: &str, found: &mut BTreeSet<String>) -> RedisResult<u64> {
    let (next, keys): (u64, Vec<Vec<u8>>) = redis::from_redis_value(reply)?;
    found.extend(
        keys.iter()
            .filter_map(|key| layout::group_of_key(prefix, key)),
    );
    Ok(next)
}

async fn scan_node<C: ConnectionLike>(
    connection: &mut C,
    prefix: &str,
    pattern: &str,
    found: &mut BTreeSet<String>,
) -> RedisResult<()> {
    let mut cursor = 0;
    loop {
        let reply: Value = scan(cursor, pattern).query_async(connection).await?;
        cursor = read_scan(reply, prefix, found)?;
        if cursor == 0 {
            return Ok(());
        }
    }
}

async fn scan_cluster(
    cluster: &mut ClusterConnection,
    prefix: &str,
    pattern: &str,
    found: &mut BTreeSet<String>,
) -> RedisResult<()> {
    for slot in master_slots(cluster).await? {
        // Through the slot, not the master's address: redis-rs's own slot map decides where
        // that is (with the client's address map, if it has one).
        let route = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(Route::new(
            slot,
            SlotAddr::Master,
        )));
        let mut cursor = 0;
        loop {
            let reply = cluster
                .route_command(scan(cursor, pattern), route.clone())
                .await?;
            cursor = read_scan(reply, prefix, found)?;
            if cursor == 0 {
                break;
            }
        }
    }
    Ok(())
}

/// One slot of each master of the cluster (the first of its ranges), from `CLUSTER SLOTS`:
/// `[[start, end, [ip, port, node id, …], replicas…], …]`.
async fn master_slots(cluster: &mut ClusterConnection) -> RedisResult<Vec<u16>> {
    let mut command = redis::cmd("CLUSTER");
    command.arg("SLOTS");
    let reply = cluster
        .route_command(
            command,
            RoutingInfo::SingleNode(SingleNodeRoutingInfo::RandomPrimary),
        )
        .await?;
    let ranges: Vec<Vec<Value>> = redis::from_redis_value(reply)?;
    let mut masters: BTreeMap<Vec<u8>, u16> = BTreeMap::new();
    for range in ranges {
        let (Some(start), Some(master)) = (range.first(), range.get(2)) else {
            return Err(malformed_slots());
        };
        let start: u16 = redis::from_redis_value_ref(start)?;
        let master: Vec<Value> = redis::from_redis_value_ref(master)?;
        // The node id when the server gives it (Redis 4 and later), else host and port.
        let id: Vec<u8> = match master.get(2) {
            Some(id) => redis::from_redis_value_ref(id)?,
            None => format!("{:?}", master.get(..2)).into_bytes(),
        };
        masters
            .entry(id)
            .and_modify(|slot| *slot = (*slot).min(start))
            .or_insert(start);
    }
    Ok(masters.into_values().collect())
}

fn malformed_slots() -> redis::RedisError {
    redis::RedisError::from((
        redis::ErrorKind::UnexpectedReturnType,
        "CLUSTER SLOTS returned a range without start slot and master",
    ))
}
