//! The requests of the operations API ([`CheckpointAdmin`](checkpoint_core::CheckpointAdmin)):
//! the operator's scripts (`lua/retire.lua`, `lua/start_at.lua`, `lua/purge.lua`, each after
//! `lua/positions.lua` and `lua/fields.lua`), `SMEMBERS` of a group's retired set, and the
//! `SCAN` of every key of the store, on every master of a cluster, for `groups`.

use std::any::Any;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use checkpoint_core::{Error, Operation, UnexpectedValue};
use redis::aio::ConnectionLike;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
use redis::{Cmd, RedisResult, Value};

use super::{LuaScript, ReplicaAck, unknown_reply};
use crate::GROUPS_SCAN_COUNT;
use crate::error::{backend, unexpected};
use crate::layout::{self, parse_field};

/// `retire`: tombstone a subscription and delete its checkpoints.
static RETIRE: LazyLock<LuaScript> = LazyLock::new(|| {
    LuaScript::new(concat!(
        include_str!("../../lua/positions.lua"),
        include_str!("../../lua/fields.lua"),
        include_str!("../../lua/retire.lua")
    ))
});
/// `start_at`: create a subscription at chosen positions, all or none.
static START_AT: LazyLock<LuaScript> = LazyLock::new(|| {
    LuaScript::new(concat!(
        include_str!("../../lua/positions.lua"),
        include_str!("../../lua/fields.lua"),
        include_str!("../../lua/start_at.lua")
    ))
});
/// `purge`: remove a retired subscription's tombstone and leftovers.
static PURGE: LazyLock<LuaScript> = LazyLock::new(|| {
    LuaScript::new(concat!(
        include_str!("../../lua/positions.lua"),
        include_str!("../../lua/fields.lua"),
        include_str!("../../lua/purge.lua")
    ))
});

/// [`Error::Retired`] for the checkpoint at `field` of the group's hash `key`, as a script
/// that found its subscription retired answers it. Both were written by this store, so they
/// read back exactly; a key or field that does not is an [`UnexpectedValue`].
pub(super) fn retired(key: &str, field: &str) -> Error {
    let group = key
        .find('{')
        .and_then(|open| key.get(..open.checked_sub(1)?))
        .and_then(|prefix| layout::group_of_key(prefix, key.as_bytes()));
    match (group, parse_field(field.as_bytes())) {
        (Some(group), Ok((subscription, _))) => Error::retired(&group, &subscription),
        (None, _) => unexpected(Operation::Claim)(UnexpectedValue::new(
            "key",
            format!("{}, not a group's key", layout::shown(key.as_bytes())),
        )),
        (_, Err(field)) => unexpected(Operation::Claim)(field),
    }
}

/// `retire.lua` (with `ack`'s `WAIT` in the same pipeline): how many checkpoints it deleted.
pub(crate) async fn retire<C: ConnectionLike>(
    connection: &mut C,
    key: &str,
    subscription: &str,
    ack: Option<ReplicaAck>,
) -> Result<i64, Error> {
    let (deleted, acknowledged): (i64, _) = RETIRE
        .call()
        .key(key)
        .key(layout::retired_key(key))
        .arg(subscription)
        .invoke_acknowledged(connection, ack)
        .await
        .map_err(|e| backend(Operation::Retire, e))?;
    acknowledged.check(Operation::Retire)?;
    Ok(deleted)
}

/// `start_at.lua` (with `ack`'s `WAIT` in the same pipeline): every `(partition, position)`
/// written, or [`Error::Retired`] / [`Error::Exists`] and nothing written.
pub(crate) async fn start_at<C: ConnectionLike>(
    connection: &mut C,
    (group, key): (&str, &str),
    subscription: &str,
    positions: &[(u32, u64)],
    ack: Option<ReplicaAck>,
) -> Result<(), Error> {
    let mut call = START_AT.call();
    call.key(key)
        .key(layout::retired_key(key))
        .arg(subscription);
    for &(partition, position) in positions {
        call.arg(layout::field(subscription, partition))
            .arg(position.to_string());
    }
    let (reply, acknowledged): (Vec<String>, _) = call
        .invoke_acknowledged(connection, ack)
        .await
        .map_err(|e| backend(Operation::StartAt, e))?;
    match reply.as_slice() {
        [ok] if ok == "ok" => acknowledged.check(Operation::StartAt),
        [retired] if retired == "retired" => Err(Error::retired(group, subscription)),
        [exists] if exists == "exists" => Err(Error::exists(group, subscription)),
        other => Err(unexpected(Operation::StartAt)(unknown_reply(other))),
    }
}

/// `purge.lua` (with `ack`'s `WAIT` in the same pipeline): `Ok` when the name was retired (now
/// purged) or had nothing, [`Error::NotRetired`] when it has live checkpoints.
pub(crate) async fn purge<C: ConnectionLike>(
    connection: &mut C,
    (group, key): (&str, &str),
    subscription: &str,
    ack: Option<ReplicaAck>,
) -> Result<(), Error> {
    let (reply, acknowledged): (Vec<String>, _) = PURGE
        .call()
        .key(key)
        .key(layout::retired_key(key))
        .arg(subscription)
        .invoke_acknowledged(connection, ack)
        .await
        .map_err(|e| backend(Operation::Purge, e))?;
    match reply.as_slice() {
        [purged] if purged == "purged" => acknowledged.check(Operation::Purge),
        [none] if none == "none" => Ok(()),
        [live] if live == "live" => Err(Error::not_retired(group, subscription)),
        other => Err(unexpected(Operation::Purge)(unknown_reply(other))),
    }
}

/// `SMEMBERS` of the group's retired set, sorted by bytes.
pub(crate) async fn retired_names<C: ConnectionLike>(
    connection: &mut C,
    key: &str,
) -> Result<Vec<String>, Error> {
    let members: Vec<Vec<u8>> = redis::cmd("SMEMBERS")
        .arg(layout::retired_key(key))
        .query_async(connection)
        .await
        .map_err(|e| backend(Operation::Retired, e))?;
    let mut names = members
        .into_iter()
        .map(|member| {
            String::from_utf8(member).map_err(|e| {
                unexpected(Operation::Retired)(UnexpectedValue::new(
                    "retired subscription",
                    format!("{}, not UTF-8", layout::shown(e.as_bytes())),
                ))
            })
        })
        .collect::<Result<Vec<String>, Error>>()?;
    names.sort_unstable();
    names.dedup();
    Ok(names)
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operator_script_starts_with_the_shared_helpers_once() {
        let helpers = concat!(
            include_str!("../../lua/positions.lua"),
            include_str!("../../lua/fields.lua")
        );
        for script in [&RETIRE, &START_AT, &PURGE] {
            assert!(script.source.starts_with(helpers));
            assert_eq!(script.source.matches("local function fields_of").count(), 1);
            assert!(script.source.contains("KEYS[2]"));
        }
    }

    #[test]
    fn a_retired_reply_names_the_group_and_subscription() {
        let key = layout::group_key("app:c", "a}{:b");
        let field = layout::field("s:1{}", 7);
        match retired(&key, &field) {
            Error::Retired {
                group,
                subscription,
            } => assert_eq!((group.as_str(), subscription.as_str()), ("a}{:b", "s:1{}")),
            other => panic!("{other:?}"),
        }
    }
}
