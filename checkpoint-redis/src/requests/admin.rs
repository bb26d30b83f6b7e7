//! The requests of the operations API ([`CheckpointAdmin`](checkpoint_core::CheckpointAdmin))
//! but `groups` (in `groups.rs`): the operator's scripts (`lua/retire.lua`,
//! `lua/start_at.lua`, `lua/purge.lua`, each after `lua/positions.lua` and `lua/fields.lua`)
//! and `SMEMBERS` of a group's retired set.

use std::sync::LazyLock;

use checkpoint_core::{Error, Operation, UnexpectedValue};
use redis::aio::ConnectionLike;

use super::scripts::{LuaScript, ReplicaAck, unknown_reply};
use crate::error::{backend, unexpected};
use crate::layout;

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
/// purged, its leases and heartbeats deleted with it) or had nothing, [`Error::NotRetired`] when it has live checkpoints.
pub(crate) async fn purge<C: ConnectionLike>(
    connection: &mut C,
    (group, key): (&str, &str),
    subscription: &str,
    ack: Option<ReplicaAck>,
) -> Result<(), Error> {
    let leases = layout::lease_keys(key, subscription);
    let (reply, acknowledged): (Vec<String>, _) = PURGE
        .call()
        .key(key)
        .key(leases.retired)
        .key(leases.leases)
        .key(leases.owners)
        .key(leases.held)
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
}
