//! The requests of parked entries ([`ParkedStore`](checkpoint_core::parked::ParkedStore)) on a
//! group's parked hash (`layout/parked.rs`): `HSET` for `park`, `HLEN` then `HGETALL` or `HSCAN`
//! for `parked`, the script `lua/retry_parked.lua` for `retry_parked` and `HDEL` for `unpark`,
//! with their replies read.

use std::collections::HashMap;
use std::sync::LazyLock;

use checkpoint_core::parked::ParkedEntry;
use checkpoint_core::{Error, Operation, UnexpectedValue};
use redis::aio::ConnectionLike;

use super::scripts::{LuaScript, ReplicaAck, query_acknowledged, unknown_reply};
use crate::error::{backend, unexpected};
use crate::layout::{self, parse_parked};
use crate::{LIST_HGETALL_MAX, LIST_SCAN_COUNT};

/// `retry_parked`: set the retry flag of a parked entry, only if it is parked.
static RETRY_PARKED: LazyLock<LuaScript> =
    LazyLock::new(|| LuaScript::new(include_str!("../../lua/retry_parked.lua")));

/// `HSET` of one parked entry (with `ack`'s `WAIT` in the same pipeline): one command, so one
/// atomic step that replaces the whole record of an entry parked already.
pub(crate) async fn park<C: ConnectionLike>(
    connection: &mut C,
    key: &str,
    field: &str,
    value: &str,
    ack: Option<ReplicaAck>,
) -> Result<(), Error> {
    let mut command = redis::cmd("HSET");
    command.arg(key).arg(field).arg(value);
    let (_, acknowledged): (i64, _) = query_acknowledged(command, connection, ack)
        .await
        .map_err(|e| backend(Operation::Park, e))?;
    acknowledged.check(Operation::Park)
}

/// Every parked entry of a group's parked hash, sorted by subscription (by bytes), partition
/// and position: `HLEN`, then one `HGETALL` when the hash has at most [`LIST_HGETALL_MAX`]
/// fields, or `HSCAN … COUNT` [`LIST_SCAN_COUNT`] to the end when it has more, as `list` reads
/// a group's checkpoints.
pub(crate) async fn parked<C: ConnectionLike>(
    connection: &mut C,
    key: &str,
) -> Result<Vec<ParkedEntry>, Error> {
    let fields: usize = redis::cmd("HLEN")
        .arg(key)
        .query_async(connection)
        .await
        .map_err(|e| backend(Operation::Parked, e))?;
    if fields == 0 {
        return Ok(Vec::new());
    }
    let mut entries = if fields > LIST_HGETALL_MAX {
        scan(connection, key).await?
    } else {
        let items: Vec<Vec<u8>> = redis::cmd("HGETALL")
            .arg(key)
            .query_async(connection)
            .await
            .map_err(|e| backend(Operation::Parked, e))?;
        entries("HGETALL reply", &items)?
    };
    entries.sort_by(|a, b| {
        (a.subscription.as_bytes(), a.partition, a.position).cmp(&(
            b.subscription.as_bytes(),
            b.partition,
            b.position,
        ))
    });
    Ok(entries)
}

/// `HSCAN … COUNT` [`LIST_SCAN_COUNT`] of a parked hash, following the cursor to 0.
async fn scan<C: ConnectionLike>(connection: &mut C, key: &str) -> Result<Vec<ParkedEntry>, Error> {
    // HSCAN may return a field more than once while the hash is rehashed: one entry per key,
    // the last value read.
    let mut found: HashMap<(String, u32, u64), ParkedEntry> = HashMap::new();
    let mut cursor: u64 = 0;
    loop {
        let (next, items): (u64, Vec<Vec<u8>>) = redis::cmd("HSCAN")
            .arg(key)
            .arg(cursor)
            .arg("COUNT")
            .arg(LIST_SCAN_COUNT)
            .query_async(connection)
            .await
            .map_err(|e| backend(Operation::Parked, e))?;
        for entry in entries("HSCAN reply", &items)? {
            let key = (entry.subscription.clone(), entry.partition, entry.position);
            found.insert(key, entry);
        }
        if next == 0 {
            return Ok(found.into_values().collect());
        }
        cursor = next;
    }
}

/// The parked entries of a reply of fields and values, one after the other.
fn entries(reply: &'static str, items: &[Vec<u8>]) -> Result<Vec<ParkedEntry>, Error> {
    if !items.len().is_multiple_of(2) {
        return Err(unexpected(Operation::Parked)(UnexpectedValue::new(
            reply,
            format!("{} elements, not field and value pairs", items.len()),
        )));
    }
    items
        .chunks_exact(2)
        .map(|pair| parse_parked(&pair[0], &pair[1]).map_err(unexpected(Operation::Parked)))
        .collect()
}

/// `retry_parked.lua` (with `ack`'s `WAIT` in the same pipeline): whether the entry was parked.
pub(crate) async fn retry_parked<C: ConnectionLike>(
    connection: &mut C,
    key: &str,
    field: &str,
    ack: Option<ReplicaAck>,
) -> Result<bool, Error> {
    let (reply, acknowledged): (Vec<String>, _) = RETRY_PARKED
        .call()
        .key(key)
        .arg(field)
        .invoke_acknowledged(connection, ack)
        .await
        .map_err(|e| backend(Operation::RetryParked, e))?;
    match reply.as_slice() {
        [parked] if parked == "parked" => {
            acknowledged.check(Operation::RetryParked)?;
            Ok(true)
        }
        [none] if none == "none" => Ok(false),
        [malformed, value] if malformed == "malformed" => {
            Err(unexpected(Operation::RetryParked)(UnexpectedValue::new(
                layout::PARKED_VALUE,
                format!(
                    "{}, not one this store writes",
                    layout::shown(value.as_bytes())
                ),
            )))
        }
        other => Err(unexpected(Operation::RetryParked)(unknown_reply(other))),
    }
}

/// `HDEL` of one parked entry (with `ack`'s `WAIT` in the same pipeline): whether it was
/// parked.
pub(crate) async fn unpark<C: ConnectionLike>(
    connection: &mut C,
    key: &str,
    field: &str,
    ack: Option<ReplicaAck>,
) -> Result<bool, Error> {
    let mut command = redis::cmd("HDEL");
    command.arg(key).arg(field);
    let (deleted, acknowledged): (i64, _) = query_acknowledged(command, connection, ack)
        .await
        .map_err(|e| backend(Operation::Unpark, e))?;
    acknowledged.check(Operation::Unpark)?;
    Ok(deleted == 1)
}
