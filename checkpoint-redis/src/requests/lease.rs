//! The requests of leases ([`LeaseStore`](checkpoint_core::LeaseStore)): one script each,
//! `lua/acquire.lua`, `lua/renew.lua`, `lua/release.lua`, `lua/leave.lua`, `lua/leases.lua` and
//! `lua/request_handover.lua`, each after the shared helpers of `lua/lease.lua`, with their
//! replies read. Every script gets the same four keys ([`LeaseKeys`]), in one cluster slot.

use std::sync::LazyLock;
use std::time::Duration;

use checkpoint_core::{
    Acquired, Error, HeldLease, Lease, LeaseOwner, LeaseTable, Operation, UnexpectedValue,
};
use redis::aio::ConnectionLike;

use super::scripts::{LuaScript, ReplicaAck, ScriptCall, unknown_reply};
use crate::error::{backend, unexpected};
use crate::layout::{self, LeaseKeys, parse_epoch, parse_partition, parse_time_left};

/// A lease script: `lua/lease.lua`, then the operation's own file.
macro_rules! lease_script {
    ($file:literal) => {
        LazyLock::new(|| {
            LuaScript::new(concat!(
                include_str!("../../lua/lease.lua"),
                include_str!(concat!("../../lua/", $file))
            ))
        })
    };
}

static ACQUIRE: LazyLock<LuaScript> = lease_script!("acquire.lua");
static RENEW: LazyLock<LuaScript> = lease_script!("renew.lua");
static RELEASE: LazyLock<LuaScript> = lease_script!("release.lua");
static LEAVE: LazyLock<LuaScript> = lease_script!("leave.lua");
static LEASES: LazyLock<LuaScript> = lease_script!("leases.lua");
static REQUEST_HANDOVER: LazyLock<LuaScript> = lease_script!("request_handover.lua");

/// The names of a lease request: group, subscription, and the owner (or requester).
#[derive(Debug, Clone, Copy)]
pub(crate) struct LeaseNames<'a> {
    pub(crate) group: &'a str,
    pub(crate) subscription: &'a str,
    pub(crate) owner: &'a str,
}

/// A call of `script` with the four keys every lease script takes.
fn call(script: &'static LazyLock<LuaScript>, keys: &LeaseKeys) -> ScriptCall {
    let mut call = LazyLock::force(script).call();
    call.key(&keys.retired)
        .key(&keys.leases)
        .key(&keys.owners)
        .key(&keys.held);
    call
}

/// Runs `call` (with `ack`'s `WAIT` in the same pipeline when given) and reads its reply:
/// the parts after `ok`, or the error that `retired`, `not_held` or `malformed` mean.
async fn run<C: ConnectionLike>(
    connection: &mut C,
    call: &ScriptCall,
    names: LeaseNames<'_>,
    operation: Operation,
    ack: Option<ReplicaAck>,
) -> Result<Vec<String>, Error> {
    let (mut reply, acknowledged): (Vec<String>, _) = call
        .invoke_acknowledged(connection, ack)
        .await
        .map_err(|e| backend(operation, e))?;
    match reply.first().map(String::as_str) {
        Some("ok") => {
            acknowledged.check(operation)?;
            reply.remove(0);
            Ok(reply)
        }
        Some("retired") if reply.len() == 1 => Err(Error::retired(names.group, names.subscription)),
        Some("not_held") if reply.len() == 1 => Err(Error::not_held(
            names.group,
            names.subscription,
            names.owner,
        )),
        Some("malformed") if reply.len() == 3 => Err(unexpected(operation)(UnexpectedValue::new(
            "stored lease",
            format!(
                "the {} of {} is not one this store writes",
                reply[1],
                layout::shown(reply[2].as_bytes())
            ),
        ))),
        _ => Err(unexpected(operation)(unknown_reply(&reply))),
    }
}

/// Partitions as the scripts take them: decimal.
fn partition_args(call: &mut ScriptCall, partitions: &[u32]) {
    for partition in partitions {
        call.arg(partition.to_string());
    }
}

/// `acquire.lua`: every lease the owner holds after the call and the partitions refused, both
/// sorted.
pub(crate) async fn acquire<C: ConnectionLike>(
    connection: &mut C,
    keys: &LeaseKeys,
    names: LeaseNames<'_>,
    partitions: &[u32],
    duration: Duration,
    ack: Option<ReplicaAck>,
) -> Result<Acquired, Error> {
    let mut call = call(&ACQUIRE, keys);
    call.arg(names.subscription)
        .arg(names.owner)
        .arg(layout::lease_millis(duration));
    partition_args(&mut call, partitions);
    let reply = run(connection, &call, names, Operation::Acquire, ack).await?;
    let read = || -> Result<Acquired, UnexpectedValue> {
        let (count, rest) = reply.split_first().ok_or_else(|| unknown_reply(&reply))?;
        let count = usize::try_from(parse_partition(count)?).map_err(|_| unknown_reply(&reply))?;
        let split = count.checked_mul(3).filter(|&n| n <= rest.len());
        let (held, refused) = rest.split_at(split.ok_or_else(|| unknown_reply(&reply))?);
        Ok(Acquired {
            granted: held_leases(held)?,
            refused: sorted_partitions(refused)?,
        })
    };
    read().map_err(unexpected(Operation::Acquire))
}

/// `renew.lua`: every lease the owner holds, renewed, sorted; [`Error::NotHeld`] when its
/// heartbeat expired or never existed.
pub(crate) async fn renew<C: ConnectionLike>(
    connection: &mut C,
    keys: &LeaseKeys,
    names: LeaseNames<'_>,
    duration: Duration,
    ack: Option<ReplicaAck>,
) -> Result<Vec<HeldLease>, Error> {
    let mut call = call(&RENEW, keys);
    call.arg(names.subscription)
        .arg(names.owner)
        .arg(layout::lease_millis(duration));
    let reply = run(connection, &call, names, Operation::Renew, ack).await?;
    held_leases(&reply).map_err(unexpected(Operation::Renew))
}

/// `release.lua`: the partitions released, sorted.
pub(crate) async fn release<C: ConnectionLike>(
    connection: &mut C,
    keys: &LeaseKeys,
    names: LeaseNames<'_>,
    partitions: &[u32],
    ack: Option<ReplicaAck>,
) -> Result<Vec<u32>, Error> {
    let mut call = call(&RELEASE, keys);
    call.arg(names.owner);
    partition_args(&mut call, partitions);
    let reply = run(connection, &call, names, Operation::Release, ack).await?;
    sorted_partitions(&reply).map_err(unexpected(Operation::Release))
}

/// `leave.lua`: the partitions released, sorted.
pub(crate) async fn leave<C: ConnectionLike>(
    connection: &mut C,
    keys: &LeaseKeys,
    names: LeaseNames<'_>,
    ack: Option<ReplicaAck>,
) -> Result<Vec<u32>, Error> {
    let mut call = call(&LEAVE, keys);
    call.arg(names.owner);
    let reply = run(connection, &call, names, Operation::Leave, ack).await?;
    sorted_partitions(&reply).map_err(unexpected(Operation::Leave))
}

/// `request_handover.lua`: how many leases were marked.
pub(crate) async fn request_handover<C: ConnectionLike>(
    connection: &mut C,
    keys: &LeaseKeys,
    names: LeaseNames<'_>,
    partitions: &[u32],
    ack: Option<ReplicaAck>,
) -> Result<usize, Error> {
    let mut call = call(&REQUEST_HANDOVER, keys);
    call.arg(names.owner);
    partition_args(&mut call, partitions);
    let reply = run(connection, &call, names, Operation::RequestHandover, ack).await?;
    Ok(reply.len())
}

/// `leases.lua`: the live leases sorted by partition, the live owners sorted by id.
pub(crate) async fn leases<C: ConnectionLike>(
    connection: &mut C,
    keys: &LeaseKeys,
    names: LeaseNames<'_>,
) -> Result<LeaseTable, Error> {
    let call = call(&LEASES, keys);
    let reply = run(connection, &call, names, Operation::Leases, None).await?;
    lease_table(&reply).map_err(unexpected(Operation::Leases))
}

/// `<count>, <partition, owner, epoch, ms left, requester> × count, <owner, ms left>…`.
fn lease_table(reply: &[String]) -> Result<LeaseTable, UnexpectedValue> {
    let (count, rest) = reply.split_first().ok_or_else(|| unknown_reply(reply))?;
    let count = usize::try_from(parse_partition(count)?).map_err(|_| unknown_reply(reply))?;
    let split = count.checked_mul(5).filter(|&n| n <= rest.len());
    let (leases, owners) = rest.split_at(split.ok_or_else(|| unknown_reply(reply))?);
    if !owners.len().is_multiple_of(2) {
        return Err(unknown_reply(reply));
    }
    let mut leases = leases
        .chunks_exact(5)
        .map(|lease| {
            Ok(Lease {
                partition: parse_partition(&lease[0])?,
                owner: lease[1].clone(),
                epoch: parse_epoch(&lease[2])?,
                time_left: Some(parse_time_left(&lease[3])?),
                handover_requested_by: requester(&lease[4]),
            })
        })
        .collect::<Result<Vec<Lease>, UnexpectedValue>>()?;
    leases.sort_by_key(|lease| lease.partition);
    let mut owners = owners
        .chunks_exact(2)
        .map(|owner| {
            Ok(LeaseOwner {
                owner: owner[0].clone(),
                time_left: Some(parse_time_left(&owner[1])?),
            })
        })
        .collect::<Result<Vec<LeaseOwner>, UnexpectedValue>>()?;
    owners.sort_by(|a, b| a.owner.cmp(&b.owner));
    Ok(LeaseTable { leases, owners })
}

/// `<partition, epoch, requester>…` as held leases sorted by partition.
fn held_leases(parts: &[String]) -> Result<Vec<HeldLease>, UnexpectedValue> {
    if !parts.len().is_multiple_of(3) {
        return Err(unknown_reply(parts));
    }
    let mut held = parts
        .chunks_exact(3)
        .map(|lease| {
            Ok(HeldLease {
                partition: parse_partition(&lease[0])?,
                epoch: parse_epoch(&lease[1])?,
                handover_requested_by: requester(&lease[2]),
            })
        })
        .collect::<Result<Vec<HeldLease>, UnexpectedValue>>()?;
    held.sort_by_key(|lease| lease.partition);
    Ok(held)
}

fn sorted_partitions(parts: &[String]) -> Result<Vec<u32>, UnexpectedValue> {
    let mut partitions = parts
        .iter()
        .map(|part| parse_partition(part))
        .collect::<Result<Vec<u32>, UnexpectedValue>>()?;
    partitions.sort_unstable();
    Ok(partitions)
}

/// The requester a script returns, `''` for none.
fn requester(part: &str) -> Option<String> {
    (!part.is_empty()).then(|| part.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_lease_script_starts_with_the_shared_helpers_once() {
        let helpers = include_str!("../../lua/lease.lua");
        for script in [
            &ACQUIRE,
            &RENEW,
            &RELEASE,
            &LEAVE,
            &LEASES,
            &REQUEST_HANDOVER,
        ] {
            assert!(script.source.starts_with(helpers));
            assert_eq!(
                script.source.matches("local function read_leases").count(),
                1
            );
        }
    }

    #[test]
    fn replies_are_read_back_sorted_and_malformed_ones_refused() {
        let parts = |parts: &[&str]| parts.iter().map(|p| (*p).to_owned()).collect::<Vec<_>>();
        let held = held_leases(&parts(&["7", "3", "", "2", "1", "b"])).expect("held leases");
        assert_eq!(held.iter().map(|l| l.partition).collect::<Vec<_>>(), [2, 7]);
        assert_eq!(held[0].handover_requested_by.as_deref(), Some("b"));
        assert_eq!(held[1].handover_requested_by, None);
        let table = lease_table(&parts(&[
            "1", "4", "a", "9", "1500", "", "z", "10", "a", "20",
        ]))
        .expect("a table");
        assert_eq!(table.leases[0].time_left, Some(Duration::from_millis(1500)));
        assert_eq!(
            table
                .owners
                .iter()
                .map(|o| o.owner.as_str())
                .collect::<Vec<_>>(),
            ["a", "z"]
        );
        for bad in [
            &["1", "0", ""][..],
            &["x", "1", ""],
            &["4294967296", "1", ""],
            &["1", "1"],
        ] {
            assert!(held_leases(&parts(bad)).is_err(), "{bad:?}");
        }
        assert!(lease_table(&parts(&["2", "4", "a", "9", "1500", ""])).is_err());
    }
}
