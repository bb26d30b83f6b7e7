//! A Redis checkpoint store: exact 64-bit positions, one server-side Lua script per write.
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod error;
mod keys;
mod store;

pub use error::{BACKEND, ReplicaAckError, UnexpectedData};
pub use keys::{DEFAULT_KEY_PREFIX, MAX_KEY_PREFIX_BYTES};
pub use store::{
    HashWrite, LIST_SCAN_COUNT, RedisCheckpointStore, RedisClusterCheckpointStore, SAVE_ALL_CHUNK,
};
