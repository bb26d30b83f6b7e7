//! The one door to the server: every request the store sends, and how each reply is read.
//! `store.rs`, `admin.rs` and `transaction.rs` validate, open the span, apply the timeout and
//! call one function of this module; nothing else sends a request (`connect.rs` only makes
//! connections, whose handshake is redis-rs's).
//!
//! - [`checkpoints`]: the hot path, `load`, `list`, `save`, `save_all`, `claim`, `advance`.
//! - [`admin`]: the operations API's writes and `retired`.
//! - [`lease`]: the lease scripts, `acquire`, `renew`, `release`, `leave`, `leases`,
//!   `request_handover`.
//! - [`parked`](mod@parked): parked entries, `park` (`HSET`), `parked` (`HLEN`, then `HGETALL`
//!   or `HSCAN`), `retry_parked` (a script) and `unpark` (`HDEL`).
//! - [`groups`](mod@groups): the `SCAN` of the store's keys, on every master of a cluster.
//! - [`scripts`]: how a Lua script of `lua/` runs: `EVALSHA`, `EVAL` of its source when the
//!   server lost its script cache, several calls pipelined, and the replica acknowledgement's
//!   `WAIT` in the same pipeline ([`ReplicaAck`]).
//!
//! The store validates the input before and applies its timeout around each call.

mod admin;
mod checkpoints;
mod groups;
mod lease;
mod parked;
mod scripts;

pub(crate) use admin::{purge, retire, retired_names, start_at};
pub(crate) use checkpoints::{
    SAVE_SCRIPT, advance, claim, highest_per_key, list, load, save, save_all,
};
pub(crate) use groups::groups;
pub(crate) use lease::{LeaseNames, acquire, leases, leave, release, renew, request_handover};
pub(crate) use parked::{park, parked, retry_parked, unpark};
pub(crate) use scripts::ReplicaAck;

/// The commands the store sends (`EVALSHA`, `EVAL` after the server lost its script cache,
/// `HGET` for `load`, `HLEN`, `HGETALL` and `HSCAN` for `list`) and those its scripts call
/// (`HGET`, `HMGET`, `HSET`), as ACL rules; `WAIT` ([`WAIT_RULE`]) only with a replica
/// acknowledgement. (`HLEN` came with the version that reads a small group with one
/// `HGETALL`: add it to a user made for an earlier one.)
///
/// Then those of the tombstones and of the operations API ([`admin`]): `SISMEMBER`, which every
/// writing script calls; `SADD`, `HDEL` and `SREM`, which the operator's scripts call;
/// `SMEMBERS` for `retired`; `SCAN` and, on a cluster, `CLUSTER SLOTS` for `groups`.
///
/// Then those the lease scripts call beyond these (they call `HGETALL` too): `TIME` (the
/// server's clock), `ZADD`, `ZREM`, `ZRANGEBYLEX` and `ZREMRANGEBYLEX` (`purge` clears the
/// lease keys with these and `HDEL`, without `DEL`).
///
/// Parked entries need none more: `HSET`, `HLEN`, `HGETALL`, `HSCAN` and `HDEL` are listed,
/// and their script calls `HGET` and `HSET`.
pub(crate) const COMMAND_RULES: [&str; 20] = [
    "+evalsha",
    "+eval",
    "+hget",
    "+hmget",
    "+hset",
    "+hscan",
    "+hlen",
    "+sismember",
    "+sadd",
    "+srem",
    "+hdel",
    "+smembers",
    "+scan",
    "+cluster|slots",
    "+time",
    "+hgetall",
    "+zadd",
    "+zrem",
    "+zrangebylex",
    "+zremrangebylex",
];
/// The ACL rule for the `WAIT` of a [`ReplicaAck`].
pub(crate) const WAIT_RULE: &str = "+wait";
