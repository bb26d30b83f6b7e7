//! The requests of the hot path: `load` (`HGET`), `list` (`HLEN`, then `HGETALL` or `HSCAN`),
//! and the scripts of `save`, `save_all`, `claim` and `advance` (`lua/save.lua`,
//! `lua/save_all.lua`, `lua/claim.lua`, `lua/advance.lua`, each after `lua/positions.lua`),
//! with their replies read.

use std::collections::HashMap;
use std::sync::LazyLock;

use checkpoint_core::{Checkpoint, Error, Fingerprint, Operation, UnexpectedValue};
use redis::aio::ConnectionLike;

use super::scripts::{LuaScript, ReplicaAck, ScriptCall, invoke_pipelined, unknown_reply};
use crate::error::{backend, unexpected};
use crate::layout::{self, parse_field, parse_fingerprint, parse_position, parse_value};
use crate::{LIST_HGETALL_MAX, LIST_SCAN_COUNT};

// Each script is `lua/positions.lua` (the helpers every script shares) followed by the
// operation's own file: the script the server runs.

/// The text of the `save` script: see [`SAVE_SCRIPT`](crate::SAVE_SCRIPT).
pub const SAVE_SCRIPT: &str = concat!(
    include_str!("../../lua/positions.lua"),
    include_str!("../../lua/save.lua")
);
/// `save`: move one checkpoint forward.
static SAVE: LazyLock<LuaScript> = LazyLock::new(|| LuaScript::new(SAVE_SCRIPT));
/// `save_all`: move a chunk of checkpoints of one group forward.
static SAVE_ALL: LazyLock<LuaScript> = LazyLock::new(|| {
    LuaScript::new(concat!(
        include_str!("../../lua/positions.lua"),
        include_str!("../../lua/save_all.lua")
    ))
});
/// `claim`: load an exclusive checkpoint, creating it on first use.
static CLAIM: LazyLock<LuaScript> = LazyLock::new(|| {
    LuaScript::new(concat!(
        include_str!("../../lua/positions.lua"),
        include_str!("../../lua/claim.lua")
    ))
});
/// `advance`: compare-and-set, with the caller's hash writes.
static ADVANCE: LazyLock<LuaScript> = LazyLock::new(|| {
    LuaScript::new(concat!(
        include_str!("../../lua/positions.lua"),
        include_str!("../../lua/advance.lua")
    ))
});

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

/// Every checkpoint of a group's hash: `HLEN`, then one `HGETALL` when the hash has at most
/// [`LIST_HGETALL_MAX`] fields, or `HSCAN … COUNT` [`LIST_SCAN_COUNT`] following the cursor to
/// 0 when it has more, so that no single command holds the server for long.
pub(crate) async fn list<C: ConnectionLike>(
    connection: &mut C,
    key: &str,
) -> Result<Vec<Checkpoint>, Error> {
    let fields: usize = redis::cmd("HLEN")
        .arg(key)
        .query_async(connection)
        .await
        .map_err(|e| backend(Operation::List, e))?;
    if fields == 0 {
        return Ok(Vec::new());
    }
    if fields > LIST_HGETALL_MAX {
        return scan(connection, key).await;
    }
    let items: Vec<Vec<u8>> = redis::cmd("HGETALL")
        .arg(key)
        .query_async(connection)
        .await
        .map_err(|e| backend(Operation::List, e))?;
    // One command reads each field once: no repeats to merge.
    pairs("HGETALL reply", &items)?
        .map(|pair| pair.map(|(key, position)| Checkpoint::new(key.0, key.1, position)))
        .collect()
}

/// `HSCAN … COUNT` [`LIST_SCAN_COUNT`] of a group's hash, following the cursor to 0.
async fn scan<C: ConnectionLike>(connection: &mut C, key: &str) -> Result<Vec<Checkpoint>, Error> {
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
        for pair in pairs("HSCAN reply", &items)? {
            let (key, value) = pair?;
            let position = found.entry(key).or_insert(value);
            *position = (*position).max(value);
        }
        if next == 0 {
            let found = found.into_iter();
            return Ok(found
                .map(|((subscription, partition), position)| {
                    Checkpoint::new(subscription, partition, position)
                })
                .collect());
        }
        cursor = next;
    }
}

/// A field's (subscription, partition) and its stored position.
type Entry = ((String, u32), u64);

/// The checkpoints of a reply of fields and values, one after the other.
fn pairs<'a>(
    reply: &'static str,
    items: &'a [Vec<u8>],
) -> Result<impl Iterator<Item = Result<Entry, Error>> + 'a, Error> {
    if !items.len().is_multiple_of(2) {
        return Err(unexpected(Operation::List)(UnexpectedValue::new(
            reply,
            format!("{} elements, not field and value pairs", items.len()),
        )));
    }
    Ok(items.chunks_exact(2).map(|pair| {
        let key = parse_field(&pair[0]).map_err(unexpected(Operation::List))?;
        let value = parse_value(&pair[1]).map_err(unexpected(Operation::List))?;
        Ok((key, value.position))
    }))
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
        .arg(position)
        .invoke_acknowledged(connection, ack)
        .await
        .map_err(|e| backend(Operation::Save, e))?;
    acknowledged.check(Operation::Save)?;
    Ok(moved == 1)
}

/// One entry per (subscription, partition), the one of the highest position among repeats,
/// sorted by subscription and partition: what
/// [`checkpoint_core::batch::highest_per_key`] returns, borrowed from the batch instead of
/// copied (no hash map, no `String` per entry), and a batch that comes sorted without repeats
/// is not sorted again.
pub(crate) fn highest_per_key(checkpoints: &[Checkpoint]) -> Vec<&Checkpoint> {
    fn key(checkpoint: &Checkpoint) -> (&str, u32) {
        (&checkpoint.subscription, checkpoint.partition)
    }
    let mut entries: Vec<&Checkpoint> = checkpoints.iter().collect();
    if !entries.windows(2).all(|pair| key(pair[0]) < key(pair[1])) {
        // The highest position first among repeats, which `dedup_by` keeps.
        entries.sort_unstable_by(|a, b| key(a).cmp(&key(b)).then(b.position.cmp(&a.position)));
        entries.dedup_by(|later, kept| key(later) == key(kept));
    }
    entries
}

/// `save_all.lua`, one call per chunk of at most `chunk` entries, all calls in one pipeline:
/// the client waits for one round of replies, and the server still runs each chunk as a short
/// script of its own. Every chunk uses the group's key, so on a cluster the pipeline goes to
/// one node, and `ack`'s `WAIT` ends it. `entries` holds one entry per key, sorted by
/// subscription ([`highest_per_key`]). Returns how many checkpoints moved.
pub(crate) async fn save_all<C: ConnectionLike>(
    connection: &mut C,
    key: &str,
    entries: &[&Checkpoint],
    chunk: usize,
    ack: Option<ReplicaAck>,
) -> Result<i64, Error> {
    let retired = layout::retired_key(key);
    let calls: Vec<ScriptCall> = entries
        .chunks(chunk)
        .map(|chunk| save_all_call(key, &retired, chunk))
        .collect();
    let (moved, acknowledged): (Vec<i64>, _) = invoke_pipelined(&calls, connection, ack)
        .await
        .map_err(|e| backend(Operation::SaveAll, e))?;
    acknowledged.check(Operation::SaveAll)?;
    Ok(moved.iter().sum())
}

/// One call of `save_all.lua` (see its header): the number of entries, their fields, their
/// positions, then each run of entries of one subscription as the subscription and the run's
/// length (one run per subscription, the entries being sorted by subscription).
fn save_all_call(key: &str, retired: &str, chunk: &[&Checkpoint]) -> ScriptCall {
    let mut call = SAVE_ALL.call();
    call.key(key).key(retired).arg(chunk.len());
    for checkpoint in chunk {
        call.arg_fmt(layout::FieldOf(
            &checkpoint.subscription,
            checkpoint.partition,
        ));
    }
    for checkpoint in chunk {
        call.arg(checkpoint.position);
    }
    for run in chunk.chunk_by(|a, b| a.subscription == b.subscription) {
        call.arg(&run[0].subscription).arg(run.len());
    }
    call
}

/// `claim.lua` (with `ack`'s `WAIT` in the same pipeline): the stored position, or
/// [`Error::QueryChanged`], or [`Error::Retired`] naming the `group` and `subscription` the
/// caller passed (the names of `key` and `field`).
pub(crate) async fn claim<C: ConnectionLike>(
    connection: &mut C,
    (group, key): (&str, &str),
    (subscription, field): (&str, &str),
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
        [retired] if retired == "retired" => Err(Error::retired(group, subscription)),
        [changed, stored] if changed == "changed" => Err(Error::QueryChanged {
            stored: parse_fingerprint(stored).map_err(unexpected(Operation::Claim))?,
            requested: fingerprint,
        }),
        other => Err(unexpected(Operation::Claim)(unknown_reply(other))),
    }
}

/// `advance.lua` (with `ack`'s `WAIT` in the same pipeline): the compare-and-set from `from`
/// to `to` and, only when it succeeds, the caller's `writes`, each the `(key, field, value)`
/// of an `HSET`; [`Error::Moved`] when the checkpoint is not at `from`.
pub(crate) async fn advance<'a, C: ConnectionLike>(
    connection: &mut C,
    key: &str,
    field: &str,
    from: u64,
    to: u64,
    writes: impl IntoIterator<Item = (&'a str, &'a [u8], &'a [u8])>,
    ack: Option<ReplicaAck>,
) -> Result<(), Error> {
    let mut call = ADVANCE.call();
    call.key(key)
        .arg(field)
        .arg(from.to_string())
        .arg(to.to_string());
    for (write_key, write_field, value) in writes {
        call.key(write_key).arg(write_field).arg(value);
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

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The borrowed dedupe keeps what the core's does, in the same order, whatever the
        /// batch's order and repeats.
        #[test]
        fn highest_per_key_is_the_cores(
            batch in proptest::collection::vec(("[ab]{1,2}", 0u32..4, 0u64..6), 0..40),
            sorted in proptest::bool::ANY,
        ) {
            let mut batch: Vec<Checkpoint> = batch
                .into_iter()
                .map(|(subscription, partition, position)| {
                    Checkpoint::new(subscription, partition, position)
                })
                .collect();
            if sorted {
                batch.sort();
            }
            let ours: Vec<Checkpoint> = highest_per_key(&batch).into_iter().cloned().collect();
            proptest::prop_assert_eq!(ours, checkpoint_core::batch::highest_per_key(&batch));
        }
    }

    #[test]
    fn every_script_starts_with_the_shared_helpers_once() {
        let helpers = include_str!("../../lua/positions.lua");
        for script in [&SAVE, &SAVE_ALL, &CLAIM, &ADVANCE] {
            assert!(script.source.starts_with(helpers));
            assert_eq!(script.source.matches("local function ahead").count(), 1);
            assert!(script.source.contains("KEYS[1]"));
        }
    }
}
